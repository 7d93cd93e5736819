package e2e

import (
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/store/audit"
	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// auditPlaces are the texts the no-leak check searches: every file of a
// SQLite store (each row, whatever its table, and its write-ahead log),
// the audit export (`admin audit export` as cmd runs it), and the
// gateway's logs.
func auditPlaces(t *testing.T, dbPath string, cmd *exec.Cmd, logs string) map[string]string {
	t.Helper()
	files, _ := filepath.Glob(dbPath + "*")
	if len(files) == 0 {
		t.Fatalf("no store files at %s", dbPath)
	}
	var stored strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		stored.Write(b)
	}
	code, export, errs := runCommand(t, cmd)
	if code != 0 || strings.Count(export, `"type":"record"`) == 0 {
		t.Fatalf("export: exit %d\n%s%s", code, export, errs)
	}
	return map[string]string{"the store": stored.String(), "the export": export, "the gateway's logs": logs}
}

// fingerprintSecret is the generated fingerprint secret in dataDir, as
// stored (hex) and as the bytes the HMAC is keyed with (base64).
func fingerprintSecret(t *testing.T, dataDir string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, audit.FingerprintKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	hexKey := strings.TrimSpace(string(b))
	raw := make([]byte, len(hexKey)/2)
	for i := range raw {
		raw[i] = hexDigit(hexKey[2*i])<<4 | hexDigit(hexKey[2*i+1])
	}
	return map[string]string{"the fingerprint secret": hexKey, "the fingerprint secret (base64)": base64.StdEncoding.EncodeToString(raw)}
}

func hexDigit(c byte) byte {
	if c >= 'a' {
		return c - 'a' + 10
	}
	return c - '0'
}

// checkNoLeak fails for each secret or content sample found in a place.
func checkNoLeak(t *testing.T, places, leaks map[string]string) {
	t.Helper()
	for what, s := range leaks {
		if len(s) < 12 {
			t.Fatalf("sample %s is too short to mean anything: %q", what, s)
		}
		for where, text := range places {
			if strings.Contains(text, s) {
				t.Errorf("%s holds %s", where, what)
			}
		}
	}
}

// TestAuditLeavesNoSecretOrContent is the audit record's no-leak check:
// after diff pages, grant writes and a document
// read with audit.mode on, neither the store (every row of every table),
// the export nor the gateway's logs holds a bearer or OAuth token, a
// bearer's plain hash, the fingerprint secret, or a byte of content: the
// diff's text or base64, the Issue's title and body, the document's text.
func TestAuditLeavesNoSecretOrContent(t *testing.T) {
	t.Run("forgejo", func(t *testing.T) {
		st := startForgejoStack(t, map[string]string{"AGENT_GATEWAY_AUDIT_MODE": "required"})
		d := st.demo
		p := addPullWithFiles(t, st.emu, d.Owner, d.PrivateRepo, "topic/no-leak", mixedFiles())
		s, rec := measuredSession(t, st.gw.URL+"/mcp/forgejo", d.ReaderToken)
		diff, pages := readAllPages(t, s, rec, d.Owner, d.PrivateRepo, p.Index())
		g := prepare(t, st, d.PublicRepo, "no-leak task")
		bot := st.gw.Connect(t, "/mcp/forgejo", d.BotToken)
		activate(t, st, bot, g)
		title, body := "no-leak issue title 4b1d", "no-leak issue body 8e2f"
		if out, isErr := callTool(t, bot, "submit_agent_work_proposal", submitArgs(g, newKey(t), title, body)); isErr {
			t.Fatalf("submit: %v", out)
		}
		st.gw.Stop()

		leaks := map[string]string{
			"the reader's bearer": d.ReaderToken, "the bot's bearer": d.BotToken,
			"the reader's bearer's plain SHA-256": sha256Hex([]byte(d.ReaderToken)),
			"the bot's bearer's plain SHA-256":    sha256Hex([]byte(d.BotToken)),
			"the Issue's title":                   title, "the Issue's body": body,
		}
		for k, v := range fingerprintSecret(t, st.gw.DataDir) {
			leaks[k] = v
		}
		for i, page := range pages {
			mid := page.ByteOffset + int64(page.ChunkBytes)/2
			leaks["diff bytes of page "+string(rune('0'+i))] = string(diff[mid : mid+24])
			leaks["diff base64 of page "+string(rune('0'+i))] = page.Data[len(page.Data)/2 : len(page.Data)/2+32]
		}
		export := exec.Command(gatewaytest.Binary(t), "admin", "audit", "export", "--format", "jsonl")
		export.Env = append(gatewaytest.CleanEnv(), "AGENT_GATEWAY_DATA_DIR="+st.gw.DataDir)
		places := auditPlaces(t, filepath.Join(st.gw.DataDir, "agent-gateway.db"), export, st.gw.Logs())
		if !strings.Contains(places["the export"], `"submit_agent_work_proposal"`) || strings.Count(places["the export"], `"get_pull_request_diff"`) != len(pages) {
			t.Fatal("the export lacks the calls made: the check would prove nothing")
		}
		checkNoLeak(t, places, leaks)
	})
	t.Run("documents", func(t *testing.T) {
		dbURL := storetest.SQLiteURL(t)
		s := newDocStack(t, dbURL, stackOptions{env: map[string]string{"AGENT_GATEWAY_AUDIT_MODE": "required"}})
		d := s.docs
		doc := d.Files[d.Runtime]
		n, _ := readAll(t, s.session(t, s.tokenA), s.sources[d.Runtime], 10000, doc, d.Commit, d.Runtime)
		s.gw.Stop()

		leaks := map[string]string{"alice's access token": s.tokenA}
		for k, v := range fingerprintSecret(t, s.dataDir) {
			leaks[k] = v
		}
		for i := 0; i+40 <= len(doc); i += len(doc) / 8 {
			leaks["document bytes at "+string(rune('0'+i*8/len(doc)))+"/8"] = string(doc[i : i+40])
		}
		places := auditPlaces(t, strings.TrimPrefix(dbURL, "sqlite://"), s.adminCmd(t, "audit", "export", "--format", "jsonl"), s.gw.Logs())
		if strings.Count(places["the export"], `"git_document_get"`) != n {
			t.Fatal("the export lacks the fragments read: the check would prove nothing")
		}
		checkNoLeak(t, places, leaks)
	})
}
