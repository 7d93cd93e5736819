package e2e

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
	"github.com/agent-gateway/agent-gateway/test/githubemu"
)

// The documents suite runs once per store backend. Every test gets its own
// fresh database, GitHub emulator and gateway process, and sets its data up
// with the real `agent-gateway admin` commands. Under CI=true the
// PostgreSQL run is required: storetest fails instead of skipping.
var backends = []struct {
	name string
	url  func(testing.TB) string
}{
	{"sqlite", storetest.SQLiteURL},
	{"postgres", storetest.PostgresURL},
}

// eachBackend runs fn once per backend; freshDB returns the URL of a new,
// empty database on that backend each time it is called.
func eachBackend(t *testing.T, fn func(t *testing.T, freshDB func(testing.TB) string)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { fn(t, b.url) })
	}
}

const (
	appID          = 4242
	installationID = 501
	docsOwner      = "h8v6"
	docsRepo       = "heyaira"
)

var (
	appKeyOnce sync.Once
	appKey     *rsa.PrivateKey
)

// writeAppKey generates (once per process) the GitHub App's RSA key and
// writes it as PEM to a 0600 file for HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE.
func writeAppKey(t *testing.T) string {
	t.Helper()
	appKeyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		appKey = k
	})
	p := filepath.Join(t.TempDir(), "app.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(appKey)}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// docStack is a GitHub emulator with the seeded documents repository, a
// store with project A's allowlist and a consent, and the gateway.
type docStack struct {
	emu     *githubemu.Emulator
	docs    *githubemu.Docs
	gw      *gatewaytest.Process
	dbURL   string
	dataDir string
	keyFile string
	env     map[string]string // the gateway's environment (restart)

	projectA string
	sources  map[string]string // path (or "track") → source ID in project A
	tokenA   string            // alice's documents:read consent in project A

	// canaries are scanned for in the gateway's logs, MCP responses and
	// metrics when the test ends: every OAuth access token the stack
	// consents, the GitHub App private key, any installation token the
	// emulator mints, any App JWT, and the cursor signing secret.
	canaries *gatewaytest.Canaries
}

type stackOptions struct {
	emu   githubemu.Options
	env   map[string]string
	noApp bool
	// binary, when set, runs the gateway through another executable (a
	// wrapper that sets a resource limit, say).
	binary string
}

func newDocStack(t *testing.T, dbURL string, o stackOptions) *docStack {
	t.Helper()
	o.emu.Dir, o.emu.AppID = t.TempDir(), appID
	s := &docStack{dbURL: dbURL, dataDir: t.TempDir(), keyFile: writeAppKey(t), sources: map[string]string{},
		canaries: &gatewaytest.Canaries{}}
	pemBytes, err := os.ReadFile(s.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	s.canaries.AddPEM("the GitHub App private key", pemBytes)
	s.canaries.AddPattern("an installation token minted by the GitHub emulator", githubemu.MintedTokenPattern)
	s.canaries.AddPattern("a GitHub App JWT", appJWTPattern)
	o.emu.AppKey = &appKey.PublicKey
	emu, err := githubemu.Start(o.emu)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close() })
	s.emu = emu
	if s.docs, err = emu.SeedDocs(docsOwner, docsRepo, installationID); err != nil {
		t.Fatal(err)
	}
	d := s.docs
	s.projectA = s.admin(t, "create-project", "--name", "project-a")["project_id"].(string)
	s.admin(t, "add-member", "--project-id", s.projectA, "--subject", "alice")
	s.admin(t, "link-repository", "--project-id", s.projectA, "--github-owner", docsOwner, "--github-repository", docsRepo,
		"--installation-id", strconv.Itoa(installationID))
	for _, p := range []string{d.Runtime, d.Readme, d.Odd, d.Empty, d.Dir, d.LinkToFile, d.LinkOutside, d.Submodule, d.NotUTF8, d.MaxSize, d.TooLarge, d.MissingUnicode} {
		role := "reference"
		if p == d.Runtime {
			role = "runtime"
		}
		s.sources[p] = s.addSource(t, s.projectA, role, p, "--commit-sha", d.Commit)
	}
	s.sources["track"] = s.addSource(t, s.projectA, "instruction", d.Runtime, "--track", "main")
	s.tokenA = s.consent(t, s.projectA, "alice", "documents:read")

	env := map[string]string{
		"AGENT_GATEWAY_DATABASE_URL":      dbURL,
		"AGENT_GATEWAY_DATA_DIR":          s.dataDir,
		"AGENT_GATEWAY_GITHUB_API_ORIGIN": emu.URL(),
	}
	if !o.noApp {
		env["HEYAIRA_GITHUB_APP_ID"] = strconv.Itoa(appID)
		env["HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE"] = s.keyFile
	}
	for k, v := range o.env {
		env[k] = v
	}
	s.env = env
	s.gw = gatewaytest.Start(t, gatewaytest.Options{Env: env, Canaries: s.canaries, Binary: o.binary})
	addCursorSecret(t, s.canaries, s.dataDir)
	return s
}

// restart stops the stack's gateway and starts another on the same store
// and data directory, its environment overridden by env.
func (s *docStack) restart(t *testing.T, env map[string]string) {
	t.Helper()
	s.gw.Stop()
	merged := maps.Clone(s.env)
	maps.Copy(merged, env)
	s.gw = gatewaytest.Start(t, gatewaytest.Options{Env: merged, Canaries: s.canaries})
}

// appJWTPattern matches an RS256 JWT as the gateway signs them for GitHub
// (header {"alg":"RS256","typ":"JWT"}, then payload and signature).
var appJWTPattern = regexp.MustCompile(`eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9\.[A-Za-z0-9_-]+`)

func (s *docStack) addSource(t *testing.T, project, role, path string, pin ...string) string {
	t.Helper()
	args := append([]string{"add-document-source", "--project-id", project, "--github-owner", docsOwner,
		"--github-repository", docsRepo, "--document-role", role, "--path", path}, pin...)
	return s.admin(t, args...)["source_id"].(string)
}

// consent records an OAuth consent with the admin CLI and returns its
// access token; it adds no member: subject must already be one.
func (s *docStack) consent(t *testing.T, project, subject, scopes string) string {
	t.Helper()
	tok := s.admin(t, "create-consent", "--project-id", project, "--subject", subject, "--scopes", scopes)["access_token"].(string)
	s.canaries.Add("the OAuth access token of "+subject+" in "+project, tok)
	return tok
}

// runAdmin runs `agent-gateway admin args… --json` against the stack's
// store and returns its exit code, stdout and stderr.
func (s *docStack) runAdmin(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runCommand(t, s.adminCmd(t, append(args, "--json")...))
}

// adminCmd is the admin CLI with args, on the stack's store.
func (s *docStack) adminCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(gatewaytest.Binary(t), append([]string{"admin"}, args...)...)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGENT_GATEWAY_") && !strings.HasPrefix(kv, "HEYAIRA_") {
			env = append(env, kv)
		}
	}
	// The race runtime sleeps a second at exit unless told not to.
	cmd.Env = append(env, "AGENT_GATEWAY_DATABASE_URL="+s.dbURL, "AGENT_GATEWAY_DATA_DIR="+s.dataDir, "GORACE=atexit_sleep_ms=0")
	return cmd
}

// admin runs an admin command that must succeed and returns its JSON object.
func (s *docStack) admin(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, out, errs := s.runAdmin(t, args...)
	if code != 0 {
		t.Fatalf("admin %v: exit %d\n%s", args, code, errs)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("admin %v: output is not a JSON object: %v\n%s", args, err, out)
	}
	return m
}

func (s *docStack) session(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	return s.gw.Connect(t, "/mcp/documents", token)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// readAll reads a source by next_cursor from start, checking every
// fragment, and returns the reassembled bytes and the fragment count.
func readAll(t *testing.T, cs *mcp.ClientSession, sourceID string, maxBytes int, want []byte, commit, path string) (int, int) {
	t.Helper()
	args := map[string]any{"source_id": sourceID}
	if maxBytes > 0 {
		args["max_bytes"] = maxBytes
	}
	limit := 65536
	if maxBytes > 0 {
		limit = maxBytes
	}
	var got bytes.Buffer
	fragments, movedBack := 0, 0
	for {
		out, isErr := callTool(t, cs, "git_document_get", args)
		if isErr {
			t.Fatalf("fragment %d: %v", fragments, out)
		}
		fragments++
		content := out["content"].(string)
		start, end := int(out["start_byte"].(float64)), int(out["end_byte"].(float64))
		switch {
		case start != got.Len() || end != start+len(content):
			t.Fatalf("fragment %d: start %d end %d after %d bytes, content %d bytes", fragments, start, end, got.Len(), len(content))
		case len(content) > limit || !utf8.ValidString(content):
			t.Fatalf("fragment %d: %d bytes, valid UTF-8 %v", fragments, len(content), utf8.ValidString(content))
		case out["fragment_sha256"] != sha256Hex([]byte(content)):
			t.Fatalf("fragment %d: fragment_sha256 does not match", fragments)
		case out["file_sha256"] != sha256Hex(want) || int(out["file_bytes"].(float64)) != len(want):
			t.Fatalf("fragment %d: file_sha256/file_bytes wrong", fragments)
		case out["commit_sha"] != commit || out["path"] != path:
			t.Fatalf("fragment %d: commit %v path %v", fragments, out["commit_sha"], out["path"])
		}
		if end < len(want) && len(content) < limit {
			movedBack++
		}
		got.WriteString(content)
		next, ok := out["next_cursor"].(string)
		if !ok {
			if len(out) != 8 {
				t.Fatalf("last fragment has members %v, want the 8 of docs/tools.md#git_document_get", out)
			}
			break
		}
		if end >= len(want) {
			t.Fatal("next_cursor present at the end of the file")
		}
		args = map[string]any{"source_id": sourceID, "cursor": next}
		if maxBytes > 0 {
			args["max_bytes"] = maxBytes
		}
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("reassembled %d bytes differ from the %d-byte file", got.Len(), len(want))
	}
	return fragments, movedBack
}

// TestDocumentsBootstrapAndContinuation: bootstrap, then a multi-byte
// document over 64 KiB read in fragments by next_cursor reassembles
// exactly; revoking the source between two reads refuses the next.
func TestDocumentsBootstrapAndContinuation(t *testing.T) {
	eachBackend(t, func(t *testing.T, freshDB func(testing.TB) string) {
		s := newDocStack(t, freshDB(t), stackOptions{})
		d := s.docs
		cs := s.session(t, s.tokenA)

		out, isErr := callTool(t, cs, "runtime_bootstrap_get", nil)
		if isErr || out["project_id"] != s.projectA {
			t.Fatalf("bootstrap: %v", out)
		}
		seen := map[string]map[string]any{}
		for _, src := range out["sources"].([]any) {
			m := src.(map[string]any)
			seen[m["source_id"].(string)] = m
		}
		rt := seen[s.sources[d.Runtime]]
		if rt == nil || rt["role"] != "runtime" || rt["commit_sha"] != d.Commit || rt["path"] != d.Runtime ||
			rt["repository"].(map[string]any)["owner"] != docsOwner || rt["limits"].(map[string]any)["fragment_bytes"] != float64(65536) {
			t.Fatalf("runtime source: %v", rt)
		}
		tr := seen[s.sources["track"]]
		if tr == nil || tr["commit_sha"] != nil || tr["tracking_ref"] != "main" || tr["requires_dispatch"] != true {
			t.Fatalf("tracking source: %v", tr)
		}
		if len(seen) != len(s.sources) {
			t.Fatalf("%d sources listed, want %d", len(seen), len(s.sources))
		}

		doc := d.Files[d.Runtime]
		if len(doc) <= 64<<10 || utf8.RuneCount(doc) == len(doc) || utf8.RuneStart(doc[65536]) {
			t.Fatal("the fixture must be multi-byte UTF-8 over 64 KiB with a character across byte 65536")
		}
		n, moved := readAll(t, cs, s.sources[d.Runtime], 0, doc, d.Commit, d.Runtime)
		if n < 4 || moved == 0 {
			t.Fatalf("%d fragments, %d ends moved back to a boundary", n, moved)
		}
		if n, moved = readAll(t, cs, s.sources[d.Runtime], 10000, doc, d.Commit, d.Runtime); n < 20 || moved == 0 {
			t.Fatalf("max_bytes 10000: %d fragments, %d moved back", n, moved)
		}
		readAll(t, cs, s.sources[d.Odd], 0, d.Files[d.Odd], d.Commit, d.Odd)
		readAll(t, cs, s.sources[d.Empty], 0, d.Files[d.Empty], d.Commit, d.Empty)
		out, isErr = callTool(t, cs, "git_document_get", map[string]any{"source_id": s.sources[d.MaxSize]})
		if isErr || out["file_bytes"] != float64(1<<20) || len(out["content"].(string)) != 65536 {
			t.Fatalf("exactly 1 MiB: %v", out["error"])
		}

		// Revoke between two reads: the continuation is refused, and so is a
		// fresh read; GitHub is not asked again.
		out, _ = callTool(t, cs, "git_document_get", map[string]any{"source_id": s.sources[d.Runtime]})
		next := out["next_cursor"].(string)
		s.admin(t, "revoke-document-source", "--project-id", s.projectA, "--source-id", s.sources[d.Runtime])
		before := s.emu.ContentsRequests()
		for _, args := range []map[string]any{
			{"source_id": s.sources[d.Runtime], "cursor": next},
			{"source_id": s.sources[d.Runtime]},
		} {
			if out, isErr := callTool(t, cs, "git_document_get", args); !isErr || errorCode(t, out) != "source_revoked" {
				t.Fatalf("after revocation: %v", out)
			}
		}
		if s.emu.ContentsRequests() != before {
			t.Fatal("a read of a revoked source reached GitHub")
		}
		// With the only runtime source revoked, bootstrap is unconfigured.
		if out, isErr := callTool(t, cs, "runtime_bootstrap_get", nil); !isErr || errorCode(t, out) != "runtime_unconfigured" {
			t.Fatalf("bootstrap without a runtime source: %v", out)
		}
	})
}

// TestDocumentsCursorRefusals: a flipped byte, an expired cursor, and a
// cursor of another principal or another project are refused before any
// GitHub read.
func TestDocumentsCursorRefusals(t *testing.T) {
	eachBackend(t, func(t *testing.T, freshDB func(testing.TB) string) {
		s := newDocStack(t, freshDB(t), stackOptions{env: map[string]string{"AGENT_GATEWAY_CURSOR_TTL": "6s"}})
		d := s.docs
		src := s.sources[d.Runtime]
		s.admin(t, "add-member", "--project-id", s.projectA, "--subject", "bob")
		bob := s.session(t, s.consent(t, s.projectA, "bob", "documents:read"))
		projectB := s.admin(t, "create-project", "--name", "project-b")["project_id"].(string)
		s.admin(t, "add-member", "--project-id", projectB, "--subject", "alice")
		aliceB := s.session(t, s.consent(t, projectB, "alice", "documents:read"))
		alice := s.session(t, s.tokenA)

		out, _ := callTool(t, alice, "git_document_get", map[string]any{"source_id": src})
		cursor := out["next_cursor"].(string)
		issued := time.Now()
		flipped := []byte(cursor)
		i := len(flipped) / 2
		if flipped[i] == 'A' {
			flipped[i] = 'B'
		} else {
			flipped[i] = 'A'
		}
		before := s.emu.ContentsRequests()
		cases := []struct {
			name string
			cs   *mcp.ClientSession
			args map[string]any
			code string
		}{
			{"flipped byte", alice, map[string]any{"source_id": src, "cursor": string(flipped)}, "cursor_invalid"},
			{"truncated", alice, map[string]any{"source_id": src, "cursor": cursor[:len(cursor)-1]}, "cursor_invalid"},
			{"another principal", bob, map[string]any{"source_id": src, "cursor": cursor}, "cursor_invalid"},
			{"another project", aliceB, map[string]any{"source_id": src, "cursor": cursor}, "cursor_invalid"},
			{"another source", alice, map[string]any{"source_id": s.sources[d.Readme], "cursor": cursor}, "cursor_invalid"},
			{"over 4 KiB", alice, map[string]any{"source_id": src, "cursor": strings.Repeat("A", 4097)}, "invalid_arguments"},
			{"with start_byte", alice, map[string]any{"source_id": src, "cursor": cursor, "start_byte": 0}, "invalid_arguments"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if out, isErr := callTool(t, c.cs, "git_document_get", c.args); !isErr || errorCode(t, out) != c.code {
					t.Fatalf("got %v, want %s", out, c.code)
				}
			})
		}
		if s.emu.ContentsRequests() != before {
			t.Fatal("a refused cursor reached GitHub")
		}
		// The genuine cursor still works for its owner (unless a slow machine
		// has already let it expire), then expires.
		if time.Since(issued) < 4*time.Second {
			if out, isErr := callTool(t, alice, "git_document_get", map[string]any{"source_id": src, "cursor": cursor}); isErr {
				t.Fatalf("genuine cursor: %v", out)
			}
		}
		time.Sleep(time.Until(issued.Add(7 * time.Second)))
		if out, isErr := callTool(t, alice, "git_document_get", map[string]any{"source_id": src, "cursor": cursor}); !isErr || errorCode(t, out) != "cursor_invalid" {
			t.Fatalf("expired cursor: %v", out)
		}
	})
}

// rawCall posts one tools/call with a bearer and returns the HTTP answer.
func rawCall(t *testing.T, url, token, tool string, args map[string]any) (*http.Response, string) {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, tool, mustJSON(t, args))
	h := map[string]string{"MCP-Protocol-Version": "2025-06-18"}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	return postRPC(t, url, body, h)
}

// TestDocumentsAuthorization: authentication is required; legacy tokens
// and consents without documents:read are refused by the scope gate before
// GitHub is called; project B cannot read, list or guess project A's
// sources.
func TestDocumentsAuthorization(t *testing.T) {
	eachBackend(t, func(t *testing.T, freshDB func(testing.TB) string) {
		s := newDocStack(t, freshDB(t), stackOptions{})
		d := s.docs
		endpoint := s.gw.URL + "/mcp/documents"
		metadata := s.gw.URL + "/.well-known/oauth-protected-resource/mcp/documents"
		src := s.sources[d.Runtime]

		resp, body := rawCall(t, endpoint, "", "runtime_bootstrap_get", map[string]any{})
		if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="`+metadata+`"`) {
			t.Fatalf("no bearer: %d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
		}
		resp, _ = rawCall(t, endpoint, "agw_at_not-a-token", "runtime_bootstrap_get", map[string]any{})
		if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Fatalf("unknown bearer: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}

		legacy := s.admin(t, "issue-legacy-token", "--project-id", s.projectA, "--permissions", "memory,task")["token"].(string)
		s.canaries.Add("a legacy project token", legacy)
		s.admin(t, "add-member", "--project-id", s.projectA, "--subject", "mallory")
		noScope := s.consent(t, s.projectA, "mallory", "profile")
		for name, token := range map[string]string{"legacy token": legacy, "consent without documents:read": noScope} {
			t.Run(name, func(t *testing.T) {
				for _, tool := range []string{"runtime_bootstrap_get", "git_document_get"} {
					resp, body := rawCall(t, endpoint, token, tool, map[string]any{"source_id": src})
					wa := resp.Header.Get("WWW-Authenticate")
					if resp.StatusCode != 403 || !strings.Contains(wa, `error="insufficient_scope"`) || !strings.Contains(wa, `scope="documents:read"`) ||
						!strings.Contains(body, "insufficient_scope") {
						t.Fatalf("%s: %d %q %s", tool, resp.StatusCode, wa, body)
					}
				}
			})
		}
		if n, m := s.emu.ContentsRequests(), s.emu.TokenMints(); n != 0 || m != 0 {
			t.Fatalf("refused callers reached GitHub: %d contents requests, %d token mints", n, m)
		}

		// Project B: its own allowlist only.
		projectB := s.admin(t, "create-project", "--name", "project-b")["project_id"].(string)
		s.admin(t, "add-member", "--project-id", projectB, "--subject", "carol")
		s.admin(t, "link-repository", "--project-id", projectB, "--github-owner", docsOwner, "--github-repository", docsRepo,
			"--installation-id", strconv.Itoa(installationID))
		srcB := s.addSource(t, projectB, "runtime", d.Readme, "--commit-sha", d.Commit)
		carol := s.session(t, s.consent(t, projectB, "carol", "documents:read"))
		out, isErr := callTool(t, carol, "runtime_bootstrap_get", nil)
		if isErr || len(out["sources"].([]any)) != 1 || out["sources"].([]any)[0].(map[string]any)["source_id"] != srcB {
			t.Fatalf("project B bootstrap: %v", out)
		}
		// A guessed ID and every real ID of project A answer the same.
		absentOut, absent := callTool(t, carol, "git_document_get", map[string]any{"source_id": "src_" + strings.Repeat("a", 26)})
		if !absent || errorCode(t, absentOut) != "not_found" {
			t.Fatalf("absent source: %v", absentOut)
		}
		for _, id := range s.sources {
			out, isErr := callTool(t, carol, "git_document_get", map[string]any{"source_id": id})
			if !isErr || mustJSON(t, out) != mustJSON(t, absentOut) {
				t.Fatalf("project A's source %s seen from project B: %v (absent: %v)", id, out, absentOut)
			}
		}
		if n := s.emu.ContentsRequests(); n != 0 {
			t.Fatalf("cross-project reads reached GitHub %d times", n)
		}
		if out, isErr := callTool(t, carol, "git_document_get", map[string]any{"source_id": srcB}); isErr || out["path"] != d.Readme {
			t.Fatalf("project B's own source: %v", out)
		}

		// Discovery: metadata, landing page, readiness.
		code2, md := get(t, metadata)
		var mdj map[string]any
		if code2 != 200 || json.Unmarshal([]byte(md), &mdj) != nil || mdj["resource"] != endpoint ||
			mustJSON(t, mdj["authorization_servers"]) != mustJSON(t, []string{s.gw.URL}) || !sameScopes(strings.Join(toStrings(mdj["scopes_supported"]), " "), []string{"documents:read", "catalog:read", "workflow:dispatch"}) {
			t.Fatalf("resource metadata: %d %s", code2, md)
		}
		if code, page := get(t, s.gw.URL+"/"); code != 200 || !strings.Contains(page, "/mcp/documents") || !strings.Contains(page, "git_document_get") {
			t.Fatal("landing page lacks the documents endpoint")
		}
		if code, _ := get(t, s.gw.URL+"/readyz"); code != 200 {
			t.Fatalf("/readyz: %d", code)
		}
	})
}

// TestDocumentsRevokedConsent: a revoked consent's token is refused at
// once. The revocation uses the command's earlier name, revoke-grant
// --grant-id, which stays accepted for operators' scripts.
func TestDocumentsRevokedConsent(t *testing.T) {
	eachBackend(t, func(t *testing.T, freshDB func(testing.TB) string) {
		s := newDocStack(t, freshDB(t), stackOptions{})
		code, out, _ := s.runAdmin(t, "list-consents", "--project-id", s.projectA)
		var consents []map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &consents) != nil || len(consents) != 1 {
			t.Fatalf("list-consents: %d %s", code, out)
		}
		resp, _ := rawCall(t, s.gw.URL+"/mcp/documents", s.tokenA, "runtime_bootstrap_get", map[string]any{})
		if resp.StatusCode != 200 {
			t.Fatalf("before revocation: %d", resp.StatusCode)
		}
		s.admin(t, "revoke-grant", "--grant-id", consents[0]["grant_id"].(string))
		resp, _ = rawCall(t, s.gw.URL+"/mcp/documents", s.tokenA, "runtime_bootstrap_get", map[string]any{})
		if resp.StatusCode != 401 {
			t.Fatalf("after revocation: %d", resp.StatusCode)
		}
	})
}

// TestDocumentsRefusals: every refusal of
// docs/tools.md#errors-of-the-document-tools, through the binary.
func TestDocumentsRefusals(t *testing.T) {
	eachBackend(t, func(t *testing.T, freshDB func(testing.TB) string) {
		s := newDocStack(t, freshDB(t), stackOptions{})
		d := s.docs
		cs := s.session(t, s.tokenA)
		inside := bytes.IndexRune(d.Files[d.Runtime], 'ä') + 1
		files := []struct {
			name string
			args map[string]any
			code string
		}{
			{"directory", map[string]any{"source_id": s.sources[d.Dir]}, "not_regular_file"},
			{"symlink to a file", map[string]any{"source_id": s.sources[d.LinkToFile]}, "not_regular_file"},
			{"symlink outside", map[string]any{"source_id": s.sources[d.LinkOutside]}, "not_regular_file"},
			{"submodule", map[string]any{"source_id": s.sources[d.Submodule]}, "not_regular_file"},
			{"invalid UTF-8", map[string]any{"source_id": s.sources[d.NotUTF8]}, "not_utf8"},
			{"1 MiB + 1", map[string]any{"source_id": s.sources[d.TooLarge]}, "file_too_large"},
			{"missing path", map[string]any{"source_id": s.sources[d.MissingUnicode]}, "provider_not_found"},
			{"start inside a code point", map[string]any{"source_id": s.sources[d.Runtime], "start_byte": inside}, "range_not_utf8_boundary"},
			{"start past the end", map[string]any{"source_id": s.sources[d.Readme], "start_byte": 1 << 20}, "invalid_arguments"},
			{"tracking source", map[string]any{"source_id": s.sources["track"]}, "source_requires_dispatch"},
			{"max_bytes over 64 KiB", map[string]any{"source_id": s.sources[d.Runtime], "max_bytes": 65537}, "invalid_arguments"},
			{"string start_byte", map[string]any{"source_id": s.sources[d.Runtime], "start_byte": "0"}, "invalid_arguments"},
			{"unknown member", map[string]any{"source_id": s.sources[d.Runtime], "path": "/etc/passwd"}, "invalid_arguments"},
		}
		for _, c := range files {
			t.Run(c.name, func(t *testing.T) {
				if out, isErr := callTool(t, cs, "git_document_get", c.args); !isErr || errorCode(t, out) != c.code {
					t.Fatalf("got %v, want %s", out, c.code)
				}
			})
		}

		// Path traversal never gets into the allowlist: the model cannot
		// name a path, and the admin CLI refuses every such form.
		before := len(s.sources)
		for _, p := range []string{"../README.md", "docs/../../etc/passwd", "/etc/passwd", "docs//x.md", "docs/./x.md", `docs\x.md`, "docs/x/", "./x", ".."} {
			t.Run("path "+p, func(t *testing.T) {
				code, _, errs := s.runAdmin(t, "add-document-source", "--project-id", s.projectA, "--github-owner", docsOwner,
					"--github-repository", docsRepo, "--document-role", "runtime", "--path", p, "--commit-sha", d.Commit)
				if code == 0 || !strings.Contains(errs, "path") {
					t.Fatalf("exit %d: %s", code, errs)
				}
			})
		}
		for _, bad := range [][]string{
			{"--commit-sha", d.Commit[:39]}, {"--commit-sha", d.Commit + "0"}, {"--commit-sha", "main"},
			{"--commit-sha", strings.Repeat("g", 40)}, {}, {"--commit-sha", d.Commit, "--track", "main"}, {"--track", "refs/tags/v1"},
		} {
			code, _, errs := s.runAdmin(t, append([]string{"add-document-source", "--project-id", s.projectA, "--github-owner", docsOwner,
				"--github-repository", docsRepo, "--document-role", "runtime", "--path", "docs/x.md"}, bad...)...)
			if code == 0 {
				t.Fatalf("%v accepted: %s", bad, errs)
			}
		}
		if code, _, _ := s.runAdmin(t, "add-document-source", "--project-id", "prj_missing", "--github-owner", docsOwner,
			"--github-repository", docsRepo, "--document-role", "runtime", "--path", "docs/x.md", "--commit-sha", d.Commit); code == 0 {
			t.Fatal("a missing project was accepted")
		}
		if code, _, _ := s.runAdmin(t, "add-document-source", "--project-id", s.projectA, "--github-owner", docsOwner,
			"--github-repository", "unlinked", "--document-role", "runtime", "--path", "docs/x.md", "--commit-sha", d.Commit); code == 0 {
			t.Fatal("an unlinked repository was accepted")
		}
		code, out, _ := s.runAdmin(t, "list-document-sources", "--project-id", s.projectA)
		var listed []any
		if code != 0 || json.Unmarshal([]byte(out), &listed) != nil || len(listed) != before {
			t.Fatalf("refused commands stored sources: %d listed, want %d", len(listed), before)
		}

		// Upstream faults on the Contents route.
		readme := s.sources[d.Readme]
		reset := strconv.FormatInt(time.Now().Add(90*time.Second).Unix(), 10)
		faults := []struct {
			name  string
			fault githubemu.Fault
			code  string
		}{
			{"redirect", githubemu.Fault{Kind: githubemu.FaultRedirect, Location: "https://evil.example/steal?token=upstream-secret"}, "redirect_refused"},
			{"1,500,001 bytes with Content-Length", githubemu.Fault{Kind: githubemu.FaultHugeBody}, "response_too_large"},
			{"1,500,001 bytes without Content-Length", githubemu.Fault{Kind: githubemu.FaultHugeBodyChunked}, "response_too_large"},
			{"false Content-Length", githubemu.Fault{Kind: githubemu.FaultFalseLength, DeclaredLength: 1000}, "provider_malformed"},
			{"malformed JSON", githubemu.Fault{Kind: githubemu.FaultMalformedJSON}, "provider_malformed"},
			{"gzip", githubemu.Fault{Kind: githubemu.FaultGzip}, "provider_malformed"},
			{"403", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 403, Body: []byte(`{"message":"upstream-secret"}`)}, "provider_forbidden"},
			{"403 too_large", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 403, Body: []byte(`{"errors":[{"code":"too_large"}]}`)}, "file_too_large"},
			{"404", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 404}, "provider_not_found"},
			{"403 rate limit", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 403, Header: http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {reset}}}, "provider_rate_limited"},
			{"429", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 429, Header: http.Header{"Retry-After": {"17"}}}, "provider_rate_limited"},
			{"500", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 500}, "provider_unavailable"},
			{"503", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 503}, "provider_unavailable"},
		}
		for _, c := range faults {
			t.Run(c.name, func(t *testing.T) {
				s.emu.SetFault(githubemu.RouteContents, c.fault)
				defer s.emu.ClearFaults()
				out, isErr := callTool(t, cs, "git_document_get", map[string]any{"source_id": readme})
				if !isErr || errorCode(t, out) != c.code {
					t.Fatalf("got %v, want %s", out, c.code)
				}
				if text := mustJSON(t, out); strings.Contains(text, "evil.example") || strings.Contains(text, "upstream-secret") {
					t.Fatalf("upstream text in the error: %s", text)
				}
				if c.code == "provider_rate_limited" {
					secs, ok := out["error"].(map[string]any)["retry_after_seconds"].(float64)
					if !ok || secs < 1 || secs > 90 {
						t.Fatalf("retry_after_seconds = %v", out["error"])
					}
				}
			})
		}
		for _, r := range s.emu.Requests() {
			if strings.Contains(r.Path, "__redirected") || strings.Contains(r.Path, "steal") {
				t.Fatalf("the gateway followed a redirect: %s", r.Path)
			}
		}
		if logs := s.gw.Logs(); strings.Contains(logs, "upstream-secret") {
			t.Fatal("an upstream body reached the logs")
		}
	})
}

// TestDocumentsProviderUnconfigured: without the App key, reads answer
// provider_unconfigured and nothing is sent to GitHub.
func TestDocumentsProviderUnconfigured(t *testing.T) {
	eachBackend(t, func(t *testing.T, freshDB func(testing.TB) string) {
		s := newDocStack(t, freshDB(t), stackOptions{noApp: true})
		cs := s.session(t, s.tokenA)
		if out, isErr := callTool(t, cs, "runtime_bootstrap_get", nil); isErr {
			t.Fatalf("bootstrap needs no App: %v", out)
		}
		if out, isErr := callTool(t, cs, "git_document_get", map[string]any{"source_id": s.sources[s.docs.Readme]}); !isErr || errorCode(t, out) != "provider_unconfigured" {
			t.Fatalf("got %v, want provider_unconfigured", out)
		}
		if n := len(s.emu.Requests()); n != 0 {
			t.Fatalf("%d requests reached GitHub", n)
		}
	})
}

// TestDocumentsInstallationTokens: one mint is reused until near expiry,
// concurrent calls on a cold cache mint once, a token with under 5
// minutes left is replaced, and neither credential leaks.
func TestDocumentsInstallationTokens(t *testing.T) {
	eachBackend(t, func(t *testing.T, freshDB func(testing.TB) string) {
		t.Run("reused", func(t *testing.T) {
			s := newDocStack(t, freshDB(t), stackOptions{env: map[string]string{"AGENT_GATEWAY_LOG_LEVEL": "debug"}})
			cs := s.session(t, s.tokenA)
			for i := 0; i < 4; i++ {
				if out, isErr := callTool(t, cs, "git_document_get", map[string]any{"source_id": s.sources[s.docs.Readme]}); isErr {
					t.Fatal(out)
				}
			}
			if n := s.emu.TokenMints(); n != 1 {
				t.Fatalf("%d mints for 4 reads, want 1", n)
			}
			// Narrowed (a read-only injected credential,
			// docs/architecture.md#github-app-and-installation-tokens):
			// contents read on the bound repository only.
			want := `{"permissions":{"contents":"read"},"repositories":["` + docsRepo + `"]}`
			if m := s.emu.Mints(); len(m) != 1 || m[0].Installation != installationID || m[0].Body != want {
				t.Fatalf("mints %+v, want one for installation %d with body %s", m, installationID, want)
			}
			var ghTokens []string
			for _, r := range s.emu.Requests() {
				auth := r.Header.Get("Authorization")
				if strings.Contains(auth, "agw_") {
					t.Fatal("the MCP credential was sent to GitHub")
				}
				if r.Route == githubemu.RouteContents {
					ghTokens = append(ghTokens, strings.TrimPrefix(auth, "Bearer "))
				}
			}
			logs := s.gw.Logs()
			if len(ghTokens) == 0 || strings.Contains(logs, ghTokens[0]) || strings.Contains(logs, s.tokenA) {
				t.Fatal("a credential appears in the gateway's logs")
			}
		})
		t.Run("concurrent calls mint once", func(t *testing.T) {
			s := newDocStack(t, freshDB(t), stackOptions{emu: githubemu.Options{TokenDelay: 500 * time.Millisecond}})
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"git_document_get","arguments":{"source_id":%q}}}`, s.sources[s.docs.Readme])
			var wg sync.WaitGroup
			results := make(chan string, 8)
			for i := 0; i < 8; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req, _ := http.NewRequest(http.MethodPost, s.gw.URL+"/mcp/documents", strings.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					req.Header.Set("MCP-Protocol-Version", "2025-06-18")
					req.Header.Set("Authorization", "Bearer "+s.tokenA)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						results <- err.Error()
						return
					}
					defer resp.Body.Close()
					b, _ := io.ReadAll(resp.Body)
					results <- string(b)
				}()
			}
			wg.Wait()
			close(results)
			for r := range results {
				if strings.Contains(r, "isError") || !strings.Contains(r, "file_sha256") {
					t.Fatalf("a concurrent call failed: %s", r)
				}
			}
			if n := s.emu.TokenMints(); n != 1 {
				t.Fatalf("%d mints for 8 concurrent calls, want 1", n)
			}
		})
		t.Run("a short-lived token is not minted on every call", func(t *testing.T) {
			// A token issued with under 5 minutes to live was minted
			// again on every call; it is now used until its own expiry
			// and replaced in the background from half its life.
			s := newDocStack(t, freshDB(t), stackOptions{emu: githubemu.Options{TokenTTL: 4 * time.Minute}})
			cs := s.session(t, s.tokenA)
			for i := 0; i < 3; i++ {
				if out, isErr := callTool(t, cs, "git_document_get", map[string]any{"source_id": s.sources[s.docs.Readme]}); isErr {
					t.Fatal(out)
				}
			}
			if n := s.emu.TokenMints(); n != 1 {
				t.Fatalf("%d mints for 3 reads with a 4-minute token, want 1", n)
			}
		})
	})
}

// TestDocumentsTokenRefreshedInBackground: through the binary, a cached
// installation token past its refresh margin (half the life of this
// 10-second token) is still used while its replacement is minted, so the
// call does not wait on the mint: with the token route held, the call is
// answered, and the mint completes once released. (The gateway used to
// drop such a token and make every call wait for a new one.) SQLite
// only: the token cache does not touch the store.
func TestDocumentsTokenRefreshedInBackground(t *testing.T) {
	s := newDocStack(t, storetest.SQLiteURL(t), stackOptions{emu: githubemu.Options{TokenTTL: 10 * time.Second}})
	cs := s.session(t, s.tokenA)
	read := func() {
		if out, isErr := callTool(t, cs, "git_document_get", map[string]any{"source_id": s.sources[s.docs.Readme]}); isErr {
			t.Error(out)
		}
	}
	read()
	if n := s.emu.TokenMints(); n != 1 {
		t.Fatalf("%d mints for the first read, want 1", n)
	}
	// Past half its life (at most 10 s, as expiry is whole seconds) and
	// well before its end.
	time.Sleep(5500 * time.Millisecond)
	hold := s.emu.HoldRequest(fmt.Sprintf("/app/installations/%d/access_tokens", installationID))
	done := make(chan struct{})
	go func() { defer close(done); read() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		hold.Release()
		t.Fatal("the read waited on the held mint: the live token was not used")
	}
	select {
	case <-hold.Reached():
	case <-time.After(20 * time.Second):
		t.Fatal("no refresh was started past the refresh margin")
	}
	if n := s.emu.TokenMints(); n != 1 {
		t.Fatalf("%d mints while the refresh is held, want 1", n)
	}
	hold.Release()
	for deadline := time.Now().Add(20 * time.Second); s.emu.TokenMints() < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the held refresh did not complete once released")
		}
	}
	read()
	if n := s.emu.TokenMints(); n != 2 {
		t.Fatalf("%d mints after the refresh, want 2", n)
	}
}

// TestDocumentsCursorSecretShared: the generated cursor secret survives a
// restart, so a cursor issued before it still works after.
func TestDocumentsCursorSecretShared(t *testing.T) {
	s := newDocStack(t, storetest.SQLiteURL(t), stackOptions{})
	cs := s.session(t, s.tokenA)
	out, _ := callTool(t, cs, "git_document_get", map[string]any{"source_id": s.sources[s.docs.Runtime]})
	cursor := out["next_cursor"].(string)
	info, err := os.Stat(filepath.Join(s.dataDir, "cursor.secret"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("cursor.secret: %v %v", err, info)
	}
	s.gw.Stop()
	gw := gatewaytest.Start(t, gatewaytest.Options{Env: map[string]string{
		"AGENT_GATEWAY_DATABASE_URL": s.dbURL, "AGENT_GATEWAY_DATA_DIR": s.dataDir,
		"AGENT_GATEWAY_GITHUB_API_ORIGIN": s.emu.URL(),
		"HEYAIRA_GITHUB_APP_ID":           strconv.Itoa(appID), "HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE": s.keyFile,
	}})
	cs = gw.Connect(t, "/mcp/documents", s.tokenA)
	if out, isErr := callTool(t, cs, "git_document_get", map[string]any{"source_id": s.sources[s.docs.Runtime], "cursor": cursor}); isErr {
		t.Fatalf("cursor after restart: %v", out)
	}
}

func toStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}
