package forgejoemu

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence"
	et "github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence/evidencetest"
)

func evidencePath(owner, repo string, index int64) string {
	return fmt.Sprintf("/api/v1/repos/%s/%s/pulls/%d.diff?binary=true&evidence=v1", owner, repo, index)
}

// entityData returns the decoded "data" and the parsed entity.
func entityData(t *testing.T, body []byte) ([]byte, map[string]json.RawMessage) {
	t.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("entity is not JSON: %v", err)
	}
	var data string
	if err := json.Unmarshal(doc["data"], &data); err != nil {
		t.Fatal(err)
	}
	diff, err := base64.StdEncoding.Strict().DecodeString(data)
	if err != nil {
		t.Fatal(err)
	}
	return diff, doc
}

// TestEvidenceFromGit: the entity's diff is byte for byte what git diff -p
// --binary --histogram of the stored merge base and refs/pull/N/head gives
// when run separately, the entity verifies, and the framing is that of
// docs/architecture.md#evidence-request-and-framing.
func TestEvidenceFromGit(t *testing.T) {
	e, d := sharedDemo(t)
	repo, _ := e.Repo(d.Owner, d.PublicRepo)
	for _, index := range []int64{d.OpenPull, d.ClosedPull, d.EmptyPull} {
		t.Run(strconv.FormatInt(index, 10), func(t *testing.T) {
			a := get(t, e, evidencePath(d.Owner, d.PublicRepo, index), tokenAuth(d.ReaderToken))
			if a.status != http.StatusOK {
				t.Fatalf("status %d: %s", a.status, a.body)
			}
			for k, want := range map[string]string{
				"Content-Type":   "application/json;charset=utf-8",
				"Cache-Control":  "private, no-store",
				"Accept-Ranges":  "none",
				"Content-Length": strconv.Itoa(len(a.body)),
			} {
				if got := a.header.Values(k); len(got) != 1 || got[0] != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			if len(a.resp.TransferEncoding) != 0 || a.header.Get("Content-Encoding") != "" {
				t.Errorf("transfer coding %v, content encoding %q", a.resp.TransferEncoding, a.header.Get("Content-Encoding"))
			}
			pull, _ := e.Pull(d.Owner, d.PublicRepo, index)
			head, _ := repo.Git("rev-parse", pull.HeadRef())
			want, err := repo.Git("diff", "-p", "--binary", "--histogram", pull.MergeBase(), strings.TrimSpace(string(head)))
			if err != nil {
				t.Fatal(err)
			}
			diff, _ := entityData(t, a.body)
			if !bytes.Equal(diff, want) {
				t.Fatalf("entity diff (%d bytes) differs from git diff (%d bytes)", len(diff), len(want))
			}
			if index == d.EmptyPull && len(diff) != 0 {
				t.Fatalf("empty pull request has a %d-byte diff", len(diff))
			}
			v, err := evidence.Verify(bytes.NewReader(a.body), evidence.Request{Index: index, Window: evidence.MaxWindow})
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			id := v.Identity
			if id.RepositoryID != repo.ID() || id.PullRequestID != pull.ID() || id.Index != index ||
				id.BaseOID != pull.MergeBase() || id.HeadOID != strings.TrimSpace(string(head)) ||
				id.HeadRef != pull.HeadRef() || id.Owner != d.Owner || id.Name != d.PublicRepo {
				t.Fatalf("identity %+v", id)
			}
		})
	}
}

// TestEvidenceSHA256Repository: a sha256 repository yields 64-hex OIDs that
// verify, with a non-UTF-8 path and content in the diff.
func TestEvidenceSHA256Repository(t *testing.T) {
	e := startEmu(t)
	r, err := e.CreateRepo("team", "hashes", RepoOptions{ObjectFormat: "sha256"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit("main", map[string][]byte{"a.txt": []byte("a\n")}, nil, "init"); err != nil {
		t.Fatal(err)
	}
	if err := r.Branch("topic", "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit("topic", map[string][]byte{"caf\xe9.txt": []byte("\xff\xfe\n"), "bin": {0, 1, 2, 0}}, nil, "add"); err != nil {
		t.Fatal(err)
	}
	p, err := e.CreatePull("team", "hashes", PullOptions{Head: "topic", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	a := get(t, e, evidencePath("team", "hashes", p.Index()), tokenAuth(e.IssueToken("team", "read:repository")))
	v, err := evidence.Verify(bytes.NewReader(a.body), evidence.Request{Index: p.Index(), Window: evidence.MaxWindow})
	if err != nil {
		t.Fatalf("status %d, Verify: %v", a.status, err)
	}
	if v.Identity.ObjectFormat != "sha256" || len(v.Identity.HeadOID) != 64 || !bytes.Contains(v.Window, []byte("+\xff\xfe\n")) {
		t.Fatalf("identity %+v, window %q", v.Identity, v.Window)
	}
}

// TestEvidencePermissions: the native checks of the route group.
func TestEvidencePermissions(t *testing.T) {
	e, d := seeded(t)
	priv, err := e.Repo(d.Owner, d.PrivateRepo)
	if err != nil {
		t.Fatal(err)
	}
	if err := priv.Branch("topic", "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := priv.Commit("topic", map[string][]byte{"more.md": []byte("more\n")}, nil, "more"); err != nil {
		t.Fatal(err)
	}
	p, err := e.CreatePull(d.Owner, d.PrivateRepo, PullOptions{Head: "topic", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	privPath := evidencePath(d.Owner, d.PrivateRepo, p.Index())
	revoked := e.IssueToken(d.Reader, "read:repository")
	e.RevokeToken(revoked)
	cases := []struct {
		name, path, auth string
		status           int
	}{
		{"reader on private", privPath, tokenAuth(d.ReaderToken), 200},
		{"anonymous on private", privPath, "", 404},
		{"outsider on private", privPath, tokenAuth(e.IssueToken("mallory", "read:repository")), 404},
		{"no repository scope", privPath, tokenAuth(e.IssueToken(d.Reader, "write:issue")), 403},
		{"public-only token on private", privPath, tokenAuth(e.IssueToken(d.Reader, "read:repository", "public-only")), 403},
		{"revoked token", privPath, tokenAuth(revoked), 401},
		{"unknown pull", evidencePath(d.Owner, d.PublicRepo, 99), tokenAuth(d.ReaderToken), 404},
		{"anonymous on public", evidencePath(d.Owner, d.PublicRepo, d.OpenPull), "", 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if a := get(t, e, c.path, c.auth); a.status != c.status {
				t.Fatalf("status %d, want %d: %s", a.status, c.status, a.body)
			}
		})
	}
}

// TestEvidenceFaultSwitches: each kind of switch changes the answer as it
// says, and Times counts answers.
func TestEvidenceFaultSwitches(t *testing.T) {
	e, d := seeded(t)
	path := evidencePath(d.Owner, d.PublicRepo, d.OpenPull)
	auth := tokenAuth(d.ReaderToken)
	verify := func(a answer) error {
		_, err := evidence.Verify(bytes.NewReader(a.body), evidence.Request{Index: d.OpenPull, Window: 100})
		return err
	}
	good := get(t, e, path, auth)
	if err := verify(good); err != nil {
		t.Fatal(err)
	}
	n := int64(len(good.body))

	e.SetEvidenceFault(d.Owner, d.PublicRepo, d.OpenPull, EvidenceFault{Options: []et.Option{et.WrongSHA256()}, Times: 1})
	if a := get(t, e, path, auth); verify(a) == nil || a.header.Get("Content-Length") != strconv.Itoa(len(a.body)) {
		t.Fatal("WrongSHA256 fault verified, or its Content-Length is not true")
	}
	if err := verify(get(t, e, path, auth)); err != nil {
		t.Fatalf("Times: 1 did not clear the fault: %v", err)
	}

	e.SetEvidenceFault(d.Owner, d.PublicRepo, d.OpenPull, EvidenceFault{Mutate: func(x *et.Entity) { x.Index++ }})
	if err := verify(get(t, e, path, auth)); err == nil {
		t.Fatal("a wrong index verified")
	}
	e.SetEvidenceFault(d.Owner, d.PublicRepo, d.OpenPull, EvidenceFault{Options: []et.Option{et.DataFirst()}})
	if a := get(t, e, path, auth); verify(a) != nil || !bytes.HasPrefix(a.body, []byte(`{"data":`)) {
		t.Fatal("DataFirst is not a valid layout here")
	}
	e.SetEvidenceFault(d.Owner, d.PublicRepo, d.OpenPull, EvidenceFault{Header: http.Header{"Cache-Control": nil, "Content-Range": {"bytes 0-1/2"}}})
	if a := get(t, e, path, auth); a.header.Get("Cache-Control") != "" || a.header.Get("Content-Range") == "" {
		t.Fatalf("header fault not applied: %v", a.header)
	}
	e.ClearEvidenceFaults()

	// Content-Length faults, read off the wire: Go's client would merge
	// duplicate values.
	for name, c := range map[string]struct {
		values func(int64) []string
		want   string
	}{
		"duplicate":    {func(n int64) []string { return []string{itoa(n), itoa(n)} }, "Content-Length: " + itoa(n) + "\r\nContent-Length: " + itoa(n) + "\r\n"},
		"leading zero": {func(n int64) []string { return []string{"0" + itoa(n)} }, "Content-Length: 0" + itoa(n) + "\r\n"},
		"missing":      {func(int64) []string { return nil }, ""},
	} {
		t.Run(name, func(t *testing.T) {
			e.SetEvidenceFault(d.Owner, d.PublicRepo, d.OpenPull, EvidenceFault{ContentLength: c.values})
			defer e.ClearEvidenceFaults()
			head, body := rawGet(t, e, path, auth)
			if c.want != "" && !strings.Contains(head, c.want) {
				t.Fatalf("head lacks %q:\n%s", c.want, head)
			}
			if c.want == "" && (strings.Contains(head, "Content-Length") || strings.Contains(head, "Transfer-Encoding")) {
				t.Fatalf("head has a length or transfer coding:\n%s", head)
			}
			if len(body) != len(good.body) || verify(answer{body: body}) != nil {
				t.Fatalf("body is not the unfaulted entity (%d vs %d bytes)", len(body), len(good.body))
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// rawGet sends a GET over a fresh connection and returns the response head
// as sent and the body read until the server closes the connection.
func rawGet(t *testing.T, e *Emulator, path, auth string) (string, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nConnection: close\r\n\r\n", path, auth)
	all, err := io.ReadAll(bufio.NewReader(conn))
	if err != nil {
		t.Fatal(err)
	}
	head, body, ok := bytes.Cut(all, []byte("\r\n\r\n"))
	if !ok {
		t.Fatalf("no response head in %q", all)
	}
	return string(head) + "\r\n", body
}

// TestSyntheticDiff: a generated diff replaces git's, with the real identity.
func TestSyntheticDiff(t *testing.T) {
	e, d := seeded(t)
	diff := bytes.Repeat([]byte("+synthetic \xff line\n"), 5000)
	if err := e.SetSyntheticDiff(d.Owner, d.PublicRepo, d.OpenPull, func() io.Reader { return bytes.NewReader(diff) }); err != nil {
		t.Fatal(err)
	}
	a := get(t, e, evidencePath(d.Owner, d.PublicRepo, d.OpenPull), tokenAuth(d.ReaderToken))
	got, _ := entityData(t, a.body)
	sum := sha256.Sum256(diff)
	v, err := evidence.Verify(bytes.NewReader(a.body), evidence.Request{Index: d.OpenPull, Window: 10})
	if err != nil || !bytes.Equal(got, diff) || v.Identity.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("synthetic diff not served: %v", err)
	}
	e.SetSyntheticDiff(d.Owner, d.PublicRepo, d.OpenPull, nil)
	a = get(t, e, evidencePath(d.Owner, d.PublicRepo, d.OpenPull), tokenAuth(d.ReaderToken))
	if got, _ := entityData(t, a.body); bytes.Equal(got, diff) {
		t.Fatal("clearing the synthetic diff did not restore git")
	}
}

// TestPlainDiff: without evidence=v1 the route answers the diff itself.
func TestPlainDiff(t *testing.T) {
	e, d := sharedDemo(t)
	repo, _ := e.Repo(d.Owner, d.PublicRepo)
	pull, _ := e.Pull(d.Owner, d.PublicRepo, d.OpenPull)
	head, _ := repo.Git("rev-parse", pull.HeadRef())
	want, _ := repo.Git("diff", "-p", "--binary", "--histogram", pull.MergeBase(), strings.TrimSpace(string(head)))
	a := get(t, e, fmt.Sprintf("/api/v1/repos/%s/%s/pulls/%d.diff?binary=true", d.Owner, d.PublicRepo, d.OpenPull), "")
	if a.status != 200 || !bytes.Equal(a.body, want) || !strings.HasPrefix(a.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("plain diff: %d %q", a.status, a.header.Get("Content-Type"))
	}
}
