package e2e

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	_ "modernc.org/sqlite" // the "sqlite" driver, to count the rows of a live gateway's store

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// What docs/architecture.md#pr-diff-contract says the diff path does not
// have, pinned through the real binary: no persistent artifact and no private
// byte cache, no cursor TTL (here: no state in the process a cursor depends
// on; the clock half is handlers/forgejotools TestDiffCursorHasNoTTL), and no
// scope beyond the caller's own token (no read:user).

// dataDirState is what a gateway keeps on disk: every file under its data
// directory (with the size and SHA-256 of each file but the SQLite
// database's own, which the database may rewrite in place) and the row
// count of every table of its SQLite store.
func dataDirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	state := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.HasPrefix(filepath.Base(p), "agent-gateway.db") {
			state["file "+rel] = "database"
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		state["file "+rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "agent-gateway.db")+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	rows.Close()
	if len(tables) == 0 {
		t.Fatal("the gateway's store has no tables: the check would see nothing")
	}
	for _, name := range tables {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM "` + name + `"`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		state["rows "+name] = strconv.Itoa(n)
	}
	return state
}

// TestPullDiffLeavesNoArtifact: reading a multi-page diff to its end
// leaves the gateway's data directory and store exactly as they were —
// no file, no row — and reading it again costs one evidence GET per
// page again: nothing was kept to serve it from. A page cache, a cursor
// table or a spooled entity on disk fails it.
func TestPullDiffLeavesNoArtifact(t *testing.T) {
	st := startForgejoStack(t, nil)
	d := st.demo
	p := addPullWithFiles(t, st.emu, d.Owner, d.PublicRepo, "topic/artifacts", mixedFiles())
	reader, rec := measuredSession(t, st.gw.URL+"/mcp/forgejo", d.ReaderToken)
	before := dataDirState(t, st.gw.DataDir)
	first, pages := readAllPages(t, reader, rec, d.Owner, d.PublicRepo, p.Index())
	if len(pages) < 2 {
		t.Fatalf("%d page(s): the diff must span pages for the test to mean anything", len(pages))
	}
	if after := dataDirState(t, st.gw.DataDir); !maps.Equal(before, after) {
		t.Fatalf("the diff read left something behind:\nbefore %v\nafter  %v", before, after)
	}
	st.emu.ResetRequests()
	again, _ := readAllPages(t, reader, rec, d.Owner, d.PublicRepo, p.Index())
	if !bytes.Equal(first, again) {
		t.Fatal("the second read assembled other bytes")
	}
	gets := 0
	for _, r := range st.emu.Requests() {
		if strings.HasSuffix(r.Path, ".diff") {
			gets++
		}
	}
	if gets != len(pages) {
		t.Fatalf("the second read made %d evidence GETs for %d pages: something was served from a cache", gets, len(pages))
	}
}

// TestPullDiffCursorOutlivesTheProcess: a cursor one gateway issued
// continues on another gateway process, started after it, with its own
// data directory: the cursor depends on no state of the process that
// issued it (a cursor registry or an issue-time table could not carry
// over).
func TestPullDiffCursorOutlivesTheProcess(t *testing.T) {
	st := startForgejoStack(t, nil)
	d := st.demo
	p := addPullWithFiles(t, st.emu, d.Owner, d.PublicRepo, "topic/outlive", mixedFiles())
	reader, _ := measuredSession(t, st.gw.URL+"/mcp/forgejo", d.ReaderToken)
	args := map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "index": p.Index()}
	first, out := callDiff(t, reader, args)
	if first == nil || first.NextCursor == nil {
		t.Fatalf("first page: %v", out)
	}
	later := gatewaytest.Start(t, gatewaytest.Options{Env: map[string]string{"AGENT_GATEWAY_FORGEJO_ORIGIN": st.emu.URL()}})
	st.gw.Stop()
	other, _ := measuredSession(t, later.URL+"/mcp/forgejo", d.ReaderToken)
	args["cursor"] = *first.NextCursor
	next, out := callDiff(t, other, args)
	if next == nil || next.ByteOffset != first.NextByteOffset {
		t.Fatalf("the later process refused the cursor: %v", out)
	}
	checkPage(t, next)
}

// TestForgejoPathAddsNoScope: the diff contract introduces no additional
// scope (docs/architecture.md#pr-diff-contract).
// What the gateway advertises for /mcp/forgejo (its resource metadata
// and its 401 challenge) names no read:user, and what Forgejo receives
// for a diff page read with a token holding read:repository alone is that
// token, unchanged, on the evidence route alone: no other credential, no
// user lookup, no token exchange.
func TestForgejoPathAddsNoScope(t *testing.T) {
	st := startForgejoStack(t, nil)
	d := st.demo
	resp, err := http.Get(st.gw.URL + "/.well-known/oauth-protected-resource/mcp/forgejo")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var md struct {
		Scopes []string `json:"scopes_supported"`
	}
	if err := json.Unmarshal(body, &md); err != nil || !slices.Equal(md.Scopes, []string{"read:repository", "write:issue"}) {
		t.Fatalf("resource metadata scopes %v (%v): %s", md.Scopes, err, body)
	}
	req, _ := http.NewRequest(http.MethodPost, st.gw.URL+"/mcp/forgejo",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_pull_request_diff","arguments":{"owner":"`+d.Owner+`","repo":"`+d.PublicRepo+`","index":1}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	challenge := resp.Header.Get("WWW-Authenticate")
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(challenge, "Bearer ") || strings.Contains(challenge, "read:user") {
		t.Fatalf("anonymous diff call: %d, WWW-Authenticate %q", resp.StatusCode, challenge)
	}
	if _, hint, ok := strings.Cut(challenge, `scope="`); ok {
		hint, _, _ = strings.Cut(hint, `"`)
		for _, sc := range strings.Fields(hint) {
			if !slices.Contains(md.Scopes, sc) {
				t.Fatalf("the challenge asks for %q, beyond the metadata's %v", sc, md.Scopes)
			}
		}
	}

	tok := st.emu.IssueToken(d.Reader, "read:repository")
	reader, _ := measuredSession(t, st.gw.URL+"/mcp/forgejo", tok)
	st.emu.ResetRequests()
	if page, out := callDiff(t, reader, map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "index": d.OpenPull}); page == nil {
		t.Fatalf("a read:repository token alone: %v", out)
	}
	reqs := st.emu.Requests()
	if len(reqs) != 1 {
		t.Fatalf("Forgejo saw %d requests for one page, want the one evidence GET", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodGet || !strings.HasSuffix(r.Path, ".diff") {
		t.Fatalf("Forgejo saw %s %s", r.Method, r.Path)
	}
	if auth := r.Header.Values("Authorization"); len(auth) != 1 || auth[0] != "Bearer "+tok {
		t.Fatal("Forgejo did not receive exactly the caller's token")
	}
	for k := range r.Header {
		if lk := strings.ToLower(k); strings.Contains(lk, "scope") || strings.Contains(lk, "token") || lk == "cookie" || lk == "x-forgejo-otp" {
			t.Fatalf("Forgejo received a %s header", k)
		}
	}
}
