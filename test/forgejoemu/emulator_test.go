package forgejoemu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLifecycle(t *testing.T) {
	t.Parallel()
	e, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^http://127\.0\.0\.1:[0-9]+$`).MatchString(e.URL()) {
		t.Errorf("URL %q", e.URL())
	}
	r, err := e.CreateRepo("team", "project", RepoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(e.Dir(), "team", "project.git"); r.GitDir() != want {
		t.Errorf("GitDir %s, want %s", r.GitDir(), want)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := os.Stat(e.Dir()); !os.IsNotExist(err) {
		t.Errorf("temporary directory survives Close: %v", err)
	}
	if _, err := http.Get(e.URL() + "/api/v1/repos/search"); err == nil {
		t.Errorf("server still answers after Close")
	}

	// A given directory is kept.
	dir := t.TempDir()
	e2, err := Start(Options{Dir: dir, Now: func() time.Time { return time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e2.CreateRepo("team", "kept", RepoOptions{}); err != nil {
		t.Fatal(err)
	}
	repo := decode[apiRepository](t, get(t, e2, "/api/v1/repos/team/kept", ""))
	if got := repo.Created.Format(time.RFC3339Nano); got != "2030-01-02T03:04:05Z" {
		t.Errorf("created_at %s, want the Options.Now clock at second precision", got)
	}
	if err := e2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "team", "kept.git", "HEAD")); err != nil {
		t.Errorf("given directory not kept: %v", err)
	}
	// A new emulator on the same directory does not adopt old repositories.
	e3, err := Start(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer e3.Close()
	if _, err := e3.CreateRepo("team", "kept", RepoOptions{}); !errors.Is(err, ErrExists) {
		t.Errorf("CreateRepo over an old repository: %v, want ErrExists", err)
	}
	if _, err := e3.CreateRepo("team", "kept", RepoOptions{}); !errors.Is(err, ErrExists) {
		t.Errorf("second attempt: %v, want ErrExists", err)
	}
}

func TestRequestsRecorded(t *testing.T) {
	t.Parallel()
	e := lightEmu(t)
	e.ResetRequests()
	get(t, e, "/api/v1/repos/search?q=a%20b&limit=5", "")
	get(t, e, "/api/v1/repos/demo/caf%C3%A9", "token abc")
	req, _ := http.NewRequest(http.MethodPost, e.URL()+"/api/v1/repos/demo/gateway/pulls", strings.NewReader(`{"title":"x"}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := plainClient().Do(req); err == nil {
		resp.Body.Close()
	}
	e.SetFault("", Fault{Kind: FaultStatus, Status: 500})
	get(t, e, "/api/v1/repos/demo/gateway", "")

	got := e.Requests()
	if len(got) != 4 {
		t.Fatalf("recorded %d requests, want 4: %+v", len(got), got)
	}
	checks := []struct {
		name      string
		ok        bool
		condition string
	}{
		{"anonymous sends no Authorization", len(got[0].Header.Values("Authorization")) == 0, fmt.Sprint(got[0].Header)},
		{"query kept raw", got[0].RawQuery == "q=a%20b&limit=5" && got[0].Query.Get("q") == "a b", got[0].RawQuery},
		{"path kept escaped", got[1].Path == "/api/v1/repos/demo/caf%C3%A9", got[1].Path},
		{"Authorization recorded", got[1].Header.Get("Authorization") == "token abc", fmt.Sprint(got[1].Header)},
		{"method and body", got[2].Method == http.MethodPost && string(got[2].Body) == `{"title":"x"}`, string(got[2].Body)},
		{"faulted requests too", got[3].Path == "/api/v1/repos/demo/gateway", got[3].Path},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: %s", c.name, c.condition)
		}
	}
	got[0].Header.Set("Authorization", "changed")
	if len(e.Requests()[0].Header.Values("Authorization")) != 0 {
		t.Errorf("Requests returned shared headers")
	}
	e.ResetRequests()
	if n := len(e.Requests()); n != 0 {
		t.Errorf("%d requests after ResetRequests", n)
	}
}

// TestRedirectNotFollowed shows how a test checks that a client refused a
// redirect: the redirect target never appears among the requests.
func TestRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	e := lightEmu(t)
	e.SetFault("/api/v1/repos/search", Fault{Kind: FaultRedirect})
	resp, err := http.Get(e.URL() + "/api/v1/repos/search") // the default client follows
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var followed bool
	for _, r := range e.Requests() {
		followed = followed || strings.HasPrefix(r.Path, "/__redirected/")
	}
	if !followed || resp.StatusCode != 404 {
		t.Errorf("a following client should land on /__redirected (404), got %d, followed %v", resp.StatusCode, followed)
	}
}

// TestConcurrentUse reads the API while commits, pushes and state changes
// happen, for the race detector.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	e, d := seeded(t)
	repo, _ := e.Repo(d.Owner, d.PublicRepo)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for _, path := range []string{"/api/v1/repos/search", "/api/v1/repos/demo/gateway/pulls?state=all", "/api/v1/repos/demo/gateway/pulls/1"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := plainClient()
			for ctx.Err() == nil {
				resp, err := client.Get(e.URL() + path)
				if err != nil {
					t.Errorf("GET %s: %v", path, err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("GET %s: %d", path, resp.StatusCode)
					return
				}
			}
		}()
	}
	for i := range 3 {
		if _, err := repo.Commit("feature/assets", map[string][]byte{"more.txt": bytes.Repeat([]byte{byte(i)}, 10)}, nil, "more"); err != nil {
			t.Fatal(err)
		}
		if err := e.UpdatePullHead(d.Owner, d.PublicRepo, d.OpenPull); err != nil {
			t.Fatal(err)
		}
		e.IssueToken(d.Reader, "read:repository")
		e.SetFault("/nothing", Fault{Kind: FaultSlow})
		_ = e.Requests()
	}
	if err := e.SetPullState(d.Owner, d.PublicRepo, d.EmptyPull, "closed", false); err != nil {
		t.Fatal(err)
	}
	cancel()
	wg.Wait()
}

func TestSeedDemo(t *testing.T) {
	t.Parallel()
	e, d := sharedDemo(t)
	repo, _ := e.Repo(d.Owner, d.PublicRepo)
	p, err := e.Pull(d.Owner, d.PublicRepo, d.OpenPull)
	if err != nil {
		t.Fatal(err)
	}
	var diff bytes.Buffer
	if err := repo.DiffBinary(context.Background(), &diff, p.MergeBase(), p.HeadRef()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"GIT binary patch", `caf\351.txt`, "rename from docs/guide.md"} {
		if !bytes.Contains(diff.Bytes(), []byte(want)) {
			t.Errorf("open pull's diff lacks %q", want)
		}
	}
	if d.ReaderToken == "" || d.BotToken == "" || d.ClosedPull == 0 || d.EmptyPull == 0 {
		t.Errorf("demo incomplete: %+v", d)
	}
	if a := get(t, e, "/api/v1/repos/demo/notes", tokenAuth(d.ReaderToken)); a.status != 200 {
		t.Errorf("reader cannot read the private repository: %d", a.status)
	}
}
