package e2e

import (
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/store/audit"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// auditAdmin runs `agent-gateway admin audit args…` on the store in
// dataDir (SQLite) and returns its exit code, output and errors.
func auditAdmin(t *testing.T, dataDir string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(gatewaytest.Binary(t), append([]string{"admin", "audit"}, args...)...)
	cmd.Env = append(gatewaytest.CleanEnv(), "AGENT_GATEWAY_DATA_DIR="+dataDir)
	return runCommand(t, cmd)
}

// exportedRecords reads the records of an export, in export order.
func exportedRecords(t *testing.T, export string) []audit.Record {
	t.Helper()
	var out []audit.Record
	for _, line := range strings.Split(strings.TrimSpace(export), "\n") {
		if line == "" {
			continue
		}
		var l exportLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("export line %q: %v", line, err)
		}
		if l.Type == "record" {
			out = append(out, l.Record)
		}
	}
	return out
}

// TestAuditStdioCalls drives `agent-gateway stdio` with the process's own
// token and audit.mode best_effort: each call leaves a record naming the
// stdio transport, the JSON-RPC id and the process principal by its keyed
// fingerprint only, in the data directory's store, and the chain
// verifies.
func TestAuditStdioCalls(t *testing.T) {
	emu, d := startDemoEmulator(t)
	dataDir := t.TempDir()
	s := stdioSessionIn(t, "", "AGENT_GATEWAY_DATA_DIR="+dataDir, "AGENT_GATEWAY_FORGEJO_ORIGIN="+emu.URL(),
		"AGENT_GATEWAY_FORGEJO_TOKEN="+d.ReaderToken, "AGENT_GATEWAY_AUDIT_MODE=best_effort")
	for range 2 {
		if out, isErr := callTool(t, s, "get_repository", map[string]any{"owner": d.Owner, "repo": d.PublicRepo}); isErr {
			t.Fatalf("get_repository: %v", out)
		}
	}
	if err := s.Close(); err != nil { // stdin closes: the process flushes its record and exits
		t.Logf("close: %v", err)
	}
	code, export, errs := auditAdmin(t, dataDir, "export", "--format", "jsonl")
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, errs)
	}
	records := exportedRecords(t, export)
	if len(records) != 2 {
		t.Fatalf("%d records for 2 stdio calls:\n%s", len(records), export)
	}
	for _, r := range records {
		if r.Transport != "stdio" || r.RequestID == "" || r.Principal.Kind != audit.KindProcess || len(r.Principal.Fingerprint) != 64 ||
			r.Tool != "get_repository" || r.Outcome != "ok" || r.Target.Repo != d.PublicRepo || r.Evidence.ResultSHA256 == "" {
			t.Fatalf("stdio record %+v", r)
		}
	}
	if strings.Contains(export, d.ReaderToken) || strings.Contains(export, sha256Hex([]byte(d.ReaderToken))) {
		t.Fatal("the export holds the process's token")
	}
	if code, out, errs := auditAdmin(t, dataDir, "verify"); code != 0 || !strings.Contains(out, "\tok") {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errs)
	}
}

// TestAuditAnonymousReads: anonymous reads are recorded only with
// audit.anonymous set, under the principal kind anonymous and the
// caller's address key; authenticated calls are recorded either way.
func TestAuditAnonymousReads(t *testing.T) {
	for _, anonymous := range []bool{false, true} {
		t.Run(map[bool]string{false: "off", true: "on"}[anonymous], func(t *testing.T) {
			env := map[string]string{"AGENT_GATEWAY_AUDIT_MODE": "best_effort"}
			if anonymous {
				env["AGENT_GATEWAY_AUDIT_ANONYMOUS"] = "true"
			}
			st := startForgejoStack(t, env)
			d := st.demo
			args := map[string]any{"owner": d.Owner, "repo": d.PublicRepo}
			if out, isErr := callTool(t, st.gw.Connect(t, "/mcp/forgejo", ""), "get_repository", args); isErr {
				t.Fatalf("anonymous get_repository: %v", out)
			}
			if out, isErr := callTool(t, st.gw.Connect(t, "/mcp/forgejo", d.ReaderToken), "get_repository", args); isErr {
				t.Fatalf("authenticated get_repository: %v", out)
			}
			st.gw.Stop()
			code, export, errs := auditAdmin(t, st.gw.DataDir, "export", "--format", "jsonl")
			if code != 0 {
				t.Fatalf("export: exit %d: %s", code, errs)
			}
			kinds := map[string]int{}
			for _, r := range exportedRecords(t, export) {
				kinds[r.Principal.Kind]++
				if r.Principal.Kind == audit.KindAnonymous && (r.AddressKey == "" || r.Principal.Fingerprint != "" || r.Outcome != "ok") {
					t.Fatalf("anonymous record %+v", r)
				}
			}
			want := map[string]int{audit.KindForgejoBearer: 1}
			if anonymous {
				want[audit.KindAnonymous] = 1
			}
			if len(kinds) != len(want) || kinds[audit.KindForgejoBearer] != 1 || kinds[audit.KindAnonymous] != want[audit.KindAnonymous] {
				t.Fatalf("records by principal kind %v, want %v", kinds, want)
			}
		})
	}
}

// TestAuditPurgeKeepsVerifiable records calls on both sides of a cutoff
// (a checkpoint signed between them), purges the records before it with
// `admin audit purge`, and finds `admin audit verify` passing across the
// gap, on the store and offline on an export, naming the range purged;
// a record altered after the gap is still named.
func TestAuditPurgeKeepsVerifiable(t *testing.T) {
	emu, demo := startDemoEmulator(t)
	gw := gatewaytest.Start(t, gatewaytest.Options{Env: map[string]string{
		"AGENT_GATEWAY_FORGEJO_ORIGIN": emu.URL(), "AGENT_GATEWAY_AUDIT_MODE": "best_effort",
		"AGENT_GATEWAY_AUDIT_CHECKPOINT_INTERVAL": "100ms",
	}})
	auditedCalls(t, gw.URL, demo.ReaderToken, demo.Owner, demo.PublicRepo, 3)
	db, err := sql.Open("sqlite", filepath.Join(gw.DataDir, "agent-gateway.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The writer signs its head once the three records are stored; the
	// cutoff falls after that checkpoint.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var signed int
		if err := db.QueryRow(`SELECT COUNT(*) FROM audit_checkpoints WHERE seq = 3`).Scan(&signed); err == nil && signed == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no checkpoint of the first three records within 30 s")
		}
	}
	cutoff := time.Now().UTC()
	auditedCalls(t, gw.URL, demo.ReaderToken, demo.Owner, demo.PublicRepo, 2)
	gw.Stop()

	code, out, errs := auditAdmin(t, gw.DataDir, "purge", "--before", cutoff.Format(time.RFC3339Nano), "--json")
	var purged map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &purged) != nil || purged["audit_records"] != float64(3) {
		t.Fatalf("purge: exit %d\n%s%s", code, out, errs)
	}
	gap := regexp.MustCompile(`(?m)^w_[0-9a-f]{16}\trecords 2\tcheckpoints [1-9]\d*\tpurged 1-3\tok$`)
	if code, out, errs := auditAdmin(t, gw.DataDir, "verify"); code != 0 || !gap.MatchString(out) {
		t.Fatalf("verify after the purge: exit %d\n%s%s", code, out, errs)
	}
	_, pub, _ := auditAdmin(t, gw.DataDir, "public-key")
	_, export, _ := auditAdmin(t, gw.DataDir, "export", "--format", "jsonl")
	exportFile := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(exportFile, []byte(export), 0o600); err != nil {
		t.Fatal(err)
	}
	offline := exec.Command(gatewaytest.Binary(t), "admin", "audit", "verify", "--export", exportFile, "--public-key", strings.TrimSpace(pub))
	offline.Env, offline.Dir = gatewaytest.CleanEnv(), t.TempDir()
	if code, out, errs := runCommand(t, offline); code != 0 || !gap.MatchString(out) {
		t.Fatalf("offline verify after the purge: exit %d\n%s%s", code, out, errs)
	}

	if _, err := db.Exec(`UPDATE audit_records SET record = REPLACE(record, '"outcome":"ok"', '"outcome":"not_found"') WHERE seq = 5`); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := auditAdmin(t, gw.DataDir, "verify"); code == 0 || !strings.Contains(out, "FAILED: record 5 altered") {
		t.Fatalf("verify after tampering past the gap: exit %d\n%s", code, out)
	}
}
