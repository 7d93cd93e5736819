package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/store/audit"
)

// TestAuditWorkedExample runs docs/audit.md's worked example, "which
// agent read pull request 7, which bytes, and were they the ones Forgejo
// generated", with the commands it shows: `admin audit list` by
// repository, index and tool; the bearer's fingerprint recomputed as
// HMAC-SHA256 under audit-fingerprint.key; the diff regenerated with `git
// diff -p --binary --histogram base head` in the repository, whose SHA-256
// and length are the records' and whose recorded ranges hash to each
// record's chunk SHA-256, joining from 0 to the end; and `admin audit
// verify`.
func TestAuditWorkedExample(t *testing.T) {
	st := startForgejoStack(t, map[string]string{"AGENT_GATEWAY_AUDIT_MODE": "best_effort"})
	d := st.demo
	var p interface{ Index() int64 }
	for i := 0; p == nil || p.Index() < 7; i++ {
		files := map[string][]byte{"filler.txt": []byte(strings.Repeat("filler\n", i+1))}
		if i > 0 {
			files = mixedFiles()
		}
		pull := addPullWithFiles(t, st.emu, d.Owner, d.PrivateRepo, "topic/example-"+string(rune('a'+i)), files)
		p = pull
		if pull.Index() == 7 {
			s, rec := measuredSession(t, st.gw.URL+"/mcp/forgejo", d.ReaderToken)
			readAllPages(t, s, rec, d.Owner, d.PrivateRepo, 7)
		}
	}
	st.gw.Stop()

	// Which agent, which bytes: the records of pull request 7's pages,
	// listed with the guide's own command line.
	guide := guideBlock(t, "docs/audit.md", "TestAuditWorkedExample", 0)
	cmdLine, _, _ := strings.Cut(guide, "\n")
	args, ok := strings.CutPrefix(cmdLine, "$ agent-gateway admin audit ")
	if !ok || !strings.Contains(args, "--repository "+d.Owner+"/"+d.PrivateRepo+" ") {
		t.Fatalf("the guide's first line %q is not the list of %s/%s", cmdLine, d.Owner, d.PrivateRepo)
	}
	code, human, errs := auditAdmin(t, st.gw.DataDir, strings.Fields(args)...)
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, errs)
	}
	t.Logf("%s\n%s", cmdLine, human)
	_, listed, _ := auditAdmin(t, st.gw.DataDir, append(strings.Fields(args), "--json")...)
	var rows []struct {
		Fingerprint string         `json:"fingerprint"`
		Outcome     string         `json:"outcome"`
		Evidence    audit.Evidence `json:"evidence"`
	}
	if err := json.Unmarshal([]byte(listed), &rows); err != nil || len(rows) < 2 {
		t.Fatalf("list --json: %v, %d rows\n%s", err, len(rows), listed)
	}

	// Who: the fingerprint is HMAC-SHA256 of the reader's bearer under the
	// data directory's secret.
	key, err := os.ReadFile(filepath.Join(st.gw.DataDir, audit.FingerprintKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := hex.DecodeString(strings.TrimSpace(string(key)))
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, raw)
	mac.Write([]byte(d.ReaderToken))
	whose := hex.EncodeToString(mac.Sum(nil))

	// Were they Forgejo's: the diff regenerated from the recorded inputs.
	first := rows[0].Evidence.Diff
	repo, err := st.emu.Repo(d.Owner, d.PrivateRepo)
	if err != nil {
		t.Fatal(err)
	}
	// The guide shows the command with this run's inputs: the emulator's
	// repositories are built the same way every time.
	if regenLine := "git diff -p --binary --histogram " + first.BaseOID + " " + first.HeadOID + " > pr7.diff"; !strings.Contains(guideBlock(t, "docs/audit.md", "TestAuditWorkedExample", 1), regenLine) {
		t.Errorf("the guide no longer shows %q: regenerate its example from this test's log", regenLine)
	}
	regen, err := exec.Command("git", "-C", repo.GitDir(), "diff", "-p", "--binary", "--histogram", first.BaseOID, first.HeadOID).Output()
	if err != nil {
		t.Fatal(err)
	}
	if sha256Hex(regen) != first.DiffSHA256 || int64(len(regen)) != first.DiffBytes {
		t.Fatalf("the regenerated diff: %d bytes, SHA-256 %s; the records say %d bytes, %s", len(regen), sha256Hex(regen), first.DiffBytes, first.DiffSHA256)
	}
	next := int64(0)
	for i, r := range rows {
		e := r.Evidence.Diff
		if r.Fingerprint != whose || r.Outcome != "ok" || e == nil || e.DiffSHA256 != first.DiffSHA256 || e.ByteOffset != next ||
			sha256Hex(regen[e.ByteOffset:e.ByteOffset+e.ChunkBytes]) != e.ChunkSHA256 {
			t.Fatalf("record %d: %+v, evidence %+v; want the reader's fingerprint and range [%d, …) of the regenerated diff", i, r, e, next)
		}
		next = e.ByteOffset + e.ChunkBytes
	}
	if next != first.DiffBytes {
		t.Fatalf("the recorded ranges end at %d of %d bytes", next, first.DiffBytes)
	}
	code, out, errs := auditAdmin(t, st.gw.DataDir, "verify")
	if code != 0 || !strings.Contains(out, "\tok") {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errs)
	}
	t.Logf("admin audit verify:\n%s", out)
}
