package e2e

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	_ "modernc.org/sqlite" // the "sqlite" driver, to tamper with the audit rows as an attacker would

	"github.com/agent-gateway/agent-gateway/store/audit"
	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// exportLine is one line of `admin audit export --format jsonl`.
type exportLine struct {
	Type   string       `json:"type"`
	Seq    int64        `json:"seq"`
	Record audit.Record `json:"record"`
}

// TestAuditDiffPages reads a multi-page pull request diff through the real
// binary with audit.mode best_effort, then, with the gateway stopped,
// exports the audit record and finds one record per page whose evidence
// identity is what the client verified (manifest content, input pair,
// offset, chunk length and SHA-256); `admin audit verify` passes on the data directory and on
// the export offline with only the public key, and names a record
// altered in the SQLite store. Neither the store nor the export holds the
// bearer, the fingerprint secret or a byte of the diff.
func TestAuditDiffPages(t *testing.T) {
	st := startForgejoStack(t, map[string]string{"AGENT_GATEWAY_AUDIT_MODE": "best_effort"})
	d := st.demo
	p := addPullWithFiles(t, st.emu, d.Owner, d.PrivateRepo, "topic/audited", mixedFiles())
	s, rec := measuredSession(t, st.gw.URL+"/mcp/forgejo", d.ReaderToken)
	_, pages := readAllPages(t, s, rec, d.Owner, d.PrivateRepo, p.Index())
	if len(pages) < 3 {
		t.Fatalf("%d pages: the diff no longer spans several", len(pages))
	}
	fingerprintKey, err := os.ReadFile(filepath.Join(st.gw.DataDir, audit.FingerprintKeyFile))
	if err != nil {
		t.Fatalf("the generated fingerprint secret: %v", err)
	}
	signingKey, err := os.ReadFile(filepath.Join(st.gw.DataDir, audit.SigningKeyFile))
	if err != nil {
		t.Fatalf("the generated signing key: %v", err)
	}
	st.canaries.Add("the audit fingerprint secret", strings.TrimSpace(string(fingerprintKey)))
	st.canaries.Add("the audit signing key", strings.TrimSpace(string(signingKey)))
	// SIGTERM: the writer flushes its queue and signs a last checkpoint.
	st.gw.Stop()

	bin := gatewaytest.Binary(t)
	admin := func(args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"admin", "audit"}, args...)...)
		cmd.Env = append(gatewaytest.CleanEnv(), "AGENT_GATEWAY_DATA_DIR="+st.gw.DataDir)
		return runCommand(t, cmd)
	}
	code, export, errs := admin("export", "--format", "jsonl")
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, errs)
	}
	var diffRecords []audit.Record
	checkpoints := 0
	sc := bufio.NewScanner(strings.NewReader(export))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l exportLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		switch {
		case l.Type == "checkpoint":
			checkpoints++
		case l.Record.Tool == diffTool:
			diffRecords = append(diffRecords, l.Record)
		}
	}
	if len(diffRecords) != len(pages) || checkpoints == 0 {
		t.Fatalf("%d diff records and %d checkpoints for %d pages read", len(diffRecords), checkpoints, len(pages))
	}
	for i, page := range pages {
		r := diffRecords[i]
		want := audit.DiffEvidence{
			DiffSHA256: page.Manifest.Content.SHA256, DiffBytes: page.Manifest.Content.ByteCount,
			BaseOID: page.Manifest.Generation.Base.OID, HeadOID: page.Manifest.Generation.Head.OID,
			ByteOffset: page.ByteOffset, ChunkBytes: int64(page.ChunkBytes), ChunkSHA256: page.ChunkSHA256,
		}
		// The page's own evidence identifies it; its whole result text is
		// not hashed again (docs/audit.md).
		if r.Evidence.Diff == nil || *r.Evidence.Diff != want || r.Evidence.ResultSHA256 != "" {
			t.Fatalf("record of page %d: evidence %+v (result %s), want %+v and no result hash", i, r.Evidence.Diff, r.Evidence.ResultSHA256, want)
		}
		if r.Outcome != "ok" || r.Toolset != "agent-gateway-forgejo" || r.Target.Owner != d.Owner || r.Target.Repo != d.PrivateRepo ||
			r.Target.Index != p.Index() || r.Principal.Kind != "forgejo_bearer" || len(r.Principal.Fingerprint) != 64 ||
			r.RequestID == "" || r.AddressKey == "" {
			t.Fatalf("record of page %d: %+v", i, r)
		}
		if i > 0 && r.Principal.Fingerprint != diffRecords[0].Principal.Fingerprint {
			t.Fatal("one bearer's calls carry different fingerprints")
		}
	}

	// Nothing secret and no content: the bearer (also as the budget key's
	// plain hash), the fingerprint secret, the diff's bytes.
	dbFiles, _ := filepath.Glob(filepath.Join(st.gw.DataDir, "agent-gateway.db*"))
	var stored strings.Builder
	for _, f := range dbFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		stored.Write(b)
	}
	leaks := map[string]string{
		"the bearer":                 d.ReaderToken,
		"the fingerprint secret":     strings.TrimSpace(string(fingerprintKey)),
		"the bearer's plain SHA-256": sha256Hex([]byte(d.ReaderToken)),
		"diff text":                  "ligne 12 : caf",
		"diff data":                  pages[1].Data[:64],
	}
	checkNoLeak(t, map[string]string{"the store": stored.String(), "the export": export}, leaks)

	// admin audit list finds the same pages by repository, pull request
	// and tool, in the order read, each naming the bytes answered.
	code, listed, errs := admin("list", "--repository", d.Owner+"/"+d.PrivateRepo, "--index", strconv.FormatInt(p.Index(), 10),
		"--tool", diffTool, "--outcome", "ok", "--json")
	var rows []map[string]any
	if code != 0 || json.Unmarshal([]byte(listed), &rows) != nil || len(rows) != len(pages) {
		t.Fatalf("list: exit %d, %d rows for %d pages\n%s%s", code, len(rows), len(pages), listed, errs)
	}
	for i, row := range rows {
		ev, _ := row["evidence"].(map[string]any)
		if diff, _ := ev["diff"].(map[string]any); diff["chunk_sha256"] != pages[i].ChunkSHA256 || row["principal_kind"] != "forgejo_bearer" {
			t.Fatalf("listed row %d: %v", i, row)
		}
	}
	if code, listed, errs := admin("list", "--repository", d.Owner+"/"+d.PrivateRepo, "--outcome", "error"); code != 0 || strings.TrimSpace(listed) != "(none)" {
		t.Fatalf("list of refusals: exit %d\n%s%s", code, listed, errs)
	}

	code, out, errs := admin("verify")
	if code != 0 || !regexp.MustCompile(`(?m)^w_[0-9a-f]{16}\trecords \d+\tcheckpoints [1-9]\d*\tok$`).MatchString(out) {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errs)
	}
	code, pub, errs := admin("public-key")
	if code != 0 || len(strings.TrimSpace(pub)) != 64 {
		t.Fatalf("public-key: exit %d %q %s", code, pub, errs)
	}
	exportFile := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(exportFile, []byte(export), 0o600); err != nil {
		t.Fatal(err)
	}
	offline := exec.Command(bin, "admin", "audit", "verify", "--export", exportFile, "--public-key", strings.TrimSpace(pub))
	offline.Env = gatewaytest.CleanEnv()
	offline.Dir = t.TempDir() // no data directory to read a key from
	if code, out, errs := runCommand(t, offline); code != 0 || !strings.Contains(out, "\tok") {
		t.Fatalf("offline verify: exit %d\n%s%s", code, out, errs)
	}

	// An attacker with the database rewrites what the second page's record
	// says was answered: verify fails and names it.
	db, err := sql.Open("sqlite", filepath.Join(st.gw.DataDir, "agent-gateway.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var seq int64
	if err := db.QueryRow(`SELECT seq FROM audit_records WHERE record LIKE '%' || $1 || '%'`, pages[1].ChunkSHA256).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE audit_records SET record = REPLACE(record, $1, $2) WHERE seq = $3`,
		pages[1].ChunkSHA256, strings.Repeat("0", 64), seq); err != nil {
		t.Fatal(err)
	}
	code, out, _ = admin("verify")
	if want := "FAILED: record " + strconv.FormatInt(seq, 10) + " altered"; code == 0 || !strings.Contains(out, want) {
		t.Fatalf("verify after tampering: exit %d\n%s\nwant %q", code, out, want)
	}
}

// TestAuditDocumentFragments reads a document in fragments on each
// backend with audit.mode best_effort and finds, in the export, one record
// per fragment whose evidence identity (commit, path, file SHA-256, byte
// range, fragment SHA-256) is what the client verified, under the OAuth
// consent's subject, client and project; `admin audit verify` passes, and names the
// record an attacker deleted from the store.
func TestAuditDocumentFragments(t *testing.T) {
	eachBackend(t, func(t *testing.T, freshDB func(testing.TB) string) {
		s := newDocStack(t, freshDB(t), stackOptions{env: map[string]string{"AGENT_GATEWAY_AUDIT_MODE": "best_effort"}})
		d := s.docs
		doc := d.Files[d.Runtime]
		n, _ := readAll(t, s.session(t, s.tokenA), s.sources[d.Runtime], 10000, doc, d.Commit, d.Runtime)
		s.gw.Stop()

		code, export, errs := runCommand(t, s.adminCmd(t, "audit", "export", "--format", "jsonl"))
		if code != 0 {
			t.Fatalf("export: exit %d: %s", code, errs)
		}
		var records []audit.Record
		for _, line := range strings.Split(strings.TrimSpace(export), "\n") {
			var l exportLine
			if err := json.Unmarshal([]byte(line), &l); err != nil {
				t.Fatal(err)
			}
			if l.Type == "record" {
				records = append(records, l.Record)
			}
		}
		if len(records) != n {
			t.Fatalf("%d records for %d fragments read", len(records), n)
		}
		next := int64(0)
		for i, r := range records {
			e := r.Evidence.Document
			if e == nil || r.Tool != "git_document_get" || r.Outcome != "ok" || r.Target.SourceID != s.sources[d.Runtime] ||
				r.Principal.Kind != "oauth" || r.Principal.Subject != "alice" || r.Principal.ProjectID != s.projectA || r.Principal.ConsentID == "" ||
				r.Principal.ClientID != "admin-cli" {
				t.Fatalf("record %d: %+v", i, r)
			}
			if e.Commit != d.Commit || e.Path != d.Runtime || e.FileSHA256 != sha256Hex(doc) || e.StartByte != next ||
				e.EndByte <= e.StartByte || e.EndByte > int64(len(doc)) || e.FragmentSHA256 != sha256Hex(doc[e.StartByte:e.EndByte]) {
				t.Fatalf("record %d: evidence %+v", i, *e)
			}
			next = e.EndByte
		}
		if next != int64(len(doc)) {
			t.Fatalf("the records cover %d of %d bytes", next, len(doc))
		}
		if strings.Contains(export, string(doc[100:160])) {
			t.Fatal("the export holds document content")
		}

		code, listed, errs := runCommand(t, s.adminCmd(t, "audit", "list", "--subject", "alice", "--client-id", "admin-cli", "--tool", "git_document_get", "--json"))
		var rows []map[string]any
		if code != 0 || json.Unmarshal([]byte(listed), &rows) != nil || len(rows) != n || rows[0]["project_id"] != s.projectA {
			t.Fatalf("list by subject and client: exit %d, %d rows for %d fragments\n%s%s", code, len(rows), n, listed, errs)
		}
		if code, listed, _ := runCommand(t, s.adminCmd(t, "audit", "list", "--subject", "bob", "--json")); code != 0 || strings.TrimSpace(listed) != "[]" {
			t.Fatalf("list of another subject: exit %d\n%s", code, listed)
		}

		if code, out, errs := runCommand(t, s.adminCmd(t, "audit", "verify")); code != 0 || !strings.Contains(out, "\tok") {
			t.Fatalf("verify: exit %d\n%s%s", code, out, errs)
		}
		storeExec(t, s.dbURL, `DELETE FROM audit_records WHERE seq = 2`)
		if code, out, _ := runCommand(t, s.adminCmd(t, "audit", "verify")); code == 0 || !strings.Contains(out, "FAILED: record 2 missing") {
			t.Fatalf("verify after a deletion: exit %d\n%s", code, out)
		}
	})
}

// auditedCalls makes n authenticated calls (get_repository with a Forgejo
// bearer) on the gateway at base and fails on any refusal.
func auditedCalls(t *testing.T, base, token, owner, repo string, n int) {
	t.Helper()
	s := gatewaytest.ConnectURL(t, base+"/mcp/forgejo", token)
	for range n {
		if out, isErr := callTool(t, s, "get_repository", map[string]any{"owner": owner, "repo": repo}); isErr {
			t.Fatalf("get_repository: %v", out)
		}
	}
}

// TestAuditReplicasOnPostgres runs two gateways on one PostgreSQL
// database, each with its own data directory and so its own writer and
// signing key; `admin audit verify` checks both chains given both public
// keys, and refuses the chain whose key it was not given.
func TestAuditReplicasOnPostgres(t *testing.T) {
	emu, demo := startDemoEmulator(t)
	dbURL := storetest.PostgresURL(t)
	env := map[string]string{"AGENT_GATEWAY_FORGEJO_ORIGIN": emu.URL(), "AGENT_GATEWAY_DATABASE_URL": dbURL, "AGENT_GATEWAY_AUDIT_MODE": "required"}
	gws := []*gatewaytest.Process{gatewaytest.Start(t, gatewaytest.Options{Env: env}), gatewaytest.Start(t, gatewaytest.Options{Env: env})}
	var keys []string
	for i, gw := range gws {
		auditedCalls(t, gw.URL, demo.ReaderToken, demo.Owner, demo.PublicRepo, 3+i)
		gw.Stop()
		cmd := exec.Command(gatewaytest.Binary(t), "admin", "audit", "public-key")
		cmd.Env = append(gatewaytest.CleanEnv(), "AGENT_GATEWAY_DATA_DIR="+gw.DataDir)
		code, pub, errs := runCommand(t, cmd)
		if code != 0 {
			t.Fatalf("public-key: exit %d: %s", code, errs)
		}
		keys = append(keys, strings.TrimSpace(pub))
	}
	if keys[0] == keys[1] {
		t.Fatal("the replicas share a signing key")
	}
	verify := func(keys ...string) (int, string) {
		t.Helper()
		args := []string{"admin", "audit", "verify"}
		for _, k := range keys {
			args = append(args, "--public-key", k)
		}
		cmd := exec.Command(gatewaytest.Binary(t), args...)
		cmd.Env = append(gatewaytest.CleanEnv(), "AGENT_GATEWAY_DATABASE_URL="+dbURL)
		code, out, _ := runCommand(t, cmd)
		return code, out
	}
	code, out := verify(keys...)
	chains := regexp.MustCompile(`(?m)^w_[0-9a-f]{16}\trecords (\d+)\tcheckpoints 1\tok$`).FindAllStringSubmatch(out, -1)
	if code != 0 || len(chains) != 2 || chains[0][1]+chains[1][1] != "34" && chains[0][1]+chains[1][1] != "43" {
		t.Fatalf("verify with both keys: exit %d\n%s", code, out)
	}
	if code, out := verify(keys[0]); code == 0 || strings.Count(out, "\tok\n") != 1 || !strings.Contains(out, "which is not trusted") {
		t.Fatalf("verify with one key: exit %d\n%s", code, out)
	}
}

// TestAuditKilledUnderLoad kills the gateway with SIGKILL while calls are
// being recorded in best_effort, with checkpoints every 100 ms, and finds
// its chain still verifying: whatever was committed is a whole prefix.
func TestAuditKilledUnderLoad(t *testing.T) {
	emu, demo := startDemoEmulator(t)
	gw := gatewaytest.Start(t, gatewaytest.Options{Env: map[string]string{
		"AGENT_GATEWAY_FORGEJO_ORIGIN": emu.URL(), "AGENT_GATEWAY_AUDIT_MODE": "best_effort",
		"AGENT_GATEWAY_AUDIT_CHECKPOINT_INTERVAL": "100ms",
	}})
	stop := make(chan struct{})
	done := make(chan struct{}, 4)
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			s, err := mcp.NewClient(&mcp.Implementation{Name: "load", Version: "1"}, nil).Connect(context.Background(),
				&mcp.StreamableClientTransport{Endpoint: gw.URL + "/mcp/forgejo", HTTPClient: &http.Client{Transport: bearer(demo.ReaderToken)}, DisableStandaloneSSE: true}, nil)
			if err != nil {
				return
			}
			defer s.Close()
			for i := 0; i < 2000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "get_repository", Arguments: map[string]any{"owner": demo.Owner, "repo": demo.PublicRepo}})
				cancel()
				if err != nil {
					return // the process is gone
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	if err := gw.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	close(stop)
	for range 4 {
		<-done
	}
	gw.Wait(10 * time.Second)

	cmd := exec.Command(gatewaytest.Binary(t), "admin", "audit", "verify")
	cmd.Env = append(gatewaytest.CleanEnv(), "AGENT_GATEWAY_DATA_DIR="+gw.DataDir)
	code, out, errs := runCommand(t, cmd)
	m := regexp.MustCompile(`(?m)^w_[0-9a-f]{16}\trecords (\d+)\tcheckpoints ([1-9]\d*)\tok$`).FindStringSubmatch(out)
	if code != 0 || m == nil || m[1] == "0" {
		t.Fatalf("verify after kill -9: exit %d\n%s%s", code, out, errs)
	}
	t.Logf("after kill -9: %s records, %s checkpoints, chain intact", m[1], m[2])
}

// bearer is a transport that adds a bearer token.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestAuditGrantWrites confirms a grant and submits under it with audit on:
// the confirmation's record carries the proposal digest and native status,
// the submission's also the Issue's id and index from the receipt the
// client got, and neither the Issue's title nor its body is stored.
func TestAuditGrantWrites(t *testing.T) {
	st := startForgejoStack(t, map[string]string{"AGENT_GATEWAY_AUDIT_MODE": "required"})
	d := st.demo
	g := prepare(t, st, d.PublicRepo, "audited task")
	s := st.gw.Connect(t, "/mcp/forgejo", d.BotToken)
	activate(t, st, s, g)
	title, body := "audited title 7f3a", "audited body 9c1e"
	out, isErr := callTool(t, s, "submit_agent_work_proposal", submitArgs(g, newKey(t), title, body))
	if isErr || out["native_status"] != float64(201) {
		t.Fatalf("submit: %v", out)
	}
	issue := obj(t, out, "submission", "issue")
	st.gw.Stop()

	cmd := exec.Command(gatewaytest.Binary(t), "admin", "audit", "export", "--format", "jsonl")
	cmd.Env = append(gatewaytest.CleanEnv(), "AGENT_GATEWAY_DATA_DIR="+st.gw.DataDir)
	code, export, errs := runCommand(t, cmd)
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, errs)
	}
	got := map[string]audit.Record{}
	for _, line := range strings.Split(strings.TrimSpace(export), "\n") {
		var l exportLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		if l.Type == "record" {
			got[l.Record.Tool] = l.Record
		}
	}
	confirm, submit := got["confirm_agent_work_grant"], got["submit_agent_work_proposal"]
	if confirm.Target.ProposalDigest != g.Digest || confirm.Target.GrantID != g.ID || confirm.Evidence.Grant == nil ||
		*confirm.Evidence.Grant != (audit.GrantEvidence{NativeStatus: 200}) {
		t.Fatalf("confirmation record %+v", confirm)
	}
	want := audit.GrantEvidence{NativeStatus: 201, IssueID: int64(issue["id"].(float64)), IssueIndex: int64(issue["index"].(float64))}
	if submit.Target.ProposalDigest != g.Digest || submit.Evidence.Grant == nil || *submit.Evidence.Grant != want || want.IssueID == 0 {
		t.Fatalf("submission record %+v, want grant evidence %+v", submit, want)
	}
	if strings.Contains(export, title) || strings.Contains(export, body) {
		t.Fatal("the export holds the Issue's title or body")
	}
}
