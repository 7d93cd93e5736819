package forgejoemu

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"
)

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
