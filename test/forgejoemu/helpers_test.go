package forgejoemu

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"
)

// shared is one seeded emulator for the tests that only read: starting git
// processes is what costs, so the demo is built once. Tests that change
// state (faults, new repositories, pull states) start their own.
var shared struct {
	once sync.Once
	e    *Emulator
	d    *Demo
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.e != nil {
		if err := shared.e.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "close shared emulator:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// sharedDemo returns the shared seeded emulator; callers must not change
// its repositories, pull requests or faults (adding tokens is fine).
func sharedDemo(t *testing.T) (*Emulator, *Demo) {
	t.Helper()
	shared.once.Do(func() {
		shared.e, shared.err = Start(Options{})
		if shared.err == nil {
			shared.d, shared.err = shared.e.SeedDemo()
		}
	})
	if shared.err != nil {
		t.Fatalf("shared emulator: %v", shared.err)
	}
	return shared.e, shared.d
}

// lightEmu starts an emulator with demo/gateway holding one commit: enough
// for tests of framing and faults, at a fraction of SeedDemo's cost.
func lightEmu(t *testing.T) *Emulator {
	t.Helper()
	e := startEmu(t)
	r, err := e.CreateRepo("demo", "gateway", RepoOptions{Description: "light"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit("main", map[string][]byte{"README.md": []byte("hi\n")}, nil, "init"); err != nil {
		t.Fatal(err)
	}
	return e
}

// startEmu starts an emulator that the test closes.
func startEmu(t *testing.T) *Emulator {
	t.Helper()
	e, err := Start(Options{Logf: t.Logf})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}

// seeded starts an emulator with the demo data.
func seeded(t *testing.T) (*Emulator, *Demo) {
	t.Helper()
	e := startEmu(t)
	d, err := e.SeedDemo()
	if err != nil {
		t.Fatalf("SeedDemo: %v", err)
	}
	return e, d
}

// answer is a response read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
	resp   *http.Response
}

// plainClient is what an ordinary caller uses: no redirects followed, no
// transparent decompression, so faults are visible as sent.
func plainClient() *http.Client {
	return &http.Client{
		Timeout:       10 * time.Second,
		Transport:     &http.Transport{DisableCompression: true, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// get sends a GET with an optional Authorization header value.
func get(t *testing.T, e *Emulator, path, auth string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.URL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := plainClient().Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read: %v", path, err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: body, resp: resp}
}

// decode unmarshals an answer's body.
func decode[T any](t *testing.T, a answer) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(a.body, &v); err != nil {
		t.Fatalf("decode %q: %v", a.body, err)
	}
	return v
}

func tokenAuth(tok string) string { return "token " + tok }
