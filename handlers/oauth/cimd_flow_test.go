package oauth_test

import (
	"fmt"
	"html"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/handlers/oauth"
)

// TestClientMetadataFlow: with oauth.client_metadata_hosts set, a client
// whose client_id is its metadata document's URL authorizes and gets
// tokens without registering; a redirect URI the document does not list
// is refused on a page; the metadata says so only when it is on, and a
// server without it refuses such a client on a page.
func TestClientMetadataFlow(t *testing.T) {
	var docURL string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"client_id":%q,"client_name":"Metadata Client","redirect_uris":[%q]}`, docURL, redirectURI)
	}))
	t.Cleanup(srv.Close)
	docURL = srv.URL + "/oauth/client.json"
	h := newHarness(t, harnessOptions{clientMetadata: oauth.ClientMetadataConfig{
		Hosts: []string{"127.0.0.1"}, AllowLoopback: true, Ports: []int{srv.Listener.Addr().(*net.TCPAddr).Port},
		RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs,
	}})

	var md map[string]any
	getJSONTo(t, h.gw.URL+"/.well-known/oauth-authorization-server", &md)
	if md["client_id_metadata_document_supported"] != true {
		t.Fatalf("metadata does not advertise client metadata documents: %v", md)
	}

	a := h.newAuthz()
	a.params.Set("client_id", docURL)
	b := newBrowser(t)
	p := h.login(t, b, a, "alice", "alice-pw")
	if !strings.Contains(p.body, "Metadata Client (metadata at 127.0.0.1)") {
		t.Errorf("the consent page does not name the document's client and host:\n%s", p.body)
	}
	p = h.consent(t, b, url.Values{"csrf_token": {csrfOf(t, p)}, "project": {h.projectA}, "action": {"allow"}})
	code := codeFrom(t, p, a)
	tok := h.tokenRequest(t, url.Values{
		"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI},
		"client_id": {docURL}, "code_verifier": {a.verifier},
	})
	if tok.status != http.StatusOK || !h.valid(t, tok.str("access_token")) {
		t.Fatalf("token: %d %v", tok.status, tok.body)
	}
	if r := h.refresh(t, tok.str("refresh_token"), "client_id", docURL); r.status != http.StatusOK {
		t.Fatalf("refresh: %d %v", r.status, r.body)
	}

	t.Run("redirect URI not in the document", func(t *testing.T) {
		a := h.newAuthz()
		a.params.Set("client_id", docURL)
		a.params.Set("redirect_uri", "http://127.0.0.1:9/elsewhere")
		p := h.start(t, newBrowser(t), a)
		if p.location != nil || p.status/100 != 4 || !strings.Contains(p.body, "not valid") {
			t.Fatalf("got %d to %v, want an error page", p.status, p.location)
		}
	})
	t.Run("off by default", func(t *testing.T) {
		off := newHarness(t, harnessOptions{})
		var md map[string]any
		getJSONTo(t, off.gw.URL+"/.well-known/oauth-authorization-server", &md)
		if _, ok := md["client_id_metadata_document_supported"]; ok {
			t.Fatalf("metadata advertises client metadata documents while they are off: %v", md)
		}
		a := off.newAuthz()
		a.params.Set("client_id", docURL)
		p := off.start(t, newBrowser(t), a)
		if p.location != nil || p.status/100 != 4 || !strings.Contains(p.body, "client_metadata_hosts") {
			t.Fatalf("got %d to %v, want an error page naming the setting:\n%s", p.status, p.location, p.body)
		}
	})
}

func getJSONTo(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	decode(t, resp, v)
}

// TestClientMetadataRefusalsAreGeneric: whatever keeps a client metadata
// document from being used — a 404, a body that is no document, a
// connection refused, a timeout, a name resolving to an internal address,
// a port or host not allowed — the caller of /oauth/token, /oauth/revoke
// and /oauth/authorize is told the same words, so the fetch cannot map
// what the gateway reaches; the log says which it was.
func TestClientMetadataRefusalsAreGeneric(t *testing.T) {
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad.json" {
			fmt.Fprint(w, "<html>not a document</html>")
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(docs.Close)
	closed := freePort(t)
	hang := hangingListener(t)
	var logs lockedBuffer
	h := newHarness(t, harnessOptions{log: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), clientMetadata: oauth.ClientMetadataConfig{
		Hosts: []string{"127.0.0.1"}, AllowLoopback: true, FetchTimeout: 300 * time.Millisecond,
		Ports:   []int{listenerPort(docs.Listener), closed, listenerPort(hang)},
		RootCAs: docs.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs,
	}})
	internal := newHarness(t, harnessOptions{log: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), clientMetadata: oauth.ClientMetadataConfig{
		Hosts: []string{"localhost"}, Ports: []int{listenerPort(docs.Listener)},
	}})
	for _, tc := range []struct {
		name, clientID string
		h              *harness
		logged         string
	}{
		{"not found", docs.URL + "/missing.json", h, "404"},
		{"not a document", docs.URL + "/bad.json", h, "not a JSON object"},
		{"connection refused", fmt.Sprintf("https://127.0.0.1:%d/client.json", closed), h, "refused"},
		{"timeout", fmt.Sprintf("https://%s/client.json", hang.Addr()), h, "timed out after"},
		{"internal address", strings.Replace(docs.URL, "127.0.0.1", "localhost", 1) + "/client.json", internal, "resolves to"},
		{"port not allowed", "https://127.0.0.1:1/client.json", h, "client_metadata_ports"},
		{"host not allowed", "https://clients.example/client.json", h, "client_metadata_hosts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := tc.h.tokenRequest(t, url.Values{
				"grant_type": {"authorization_code"}, "code": {"code"}, "redirect_uri": {redirectURI},
				"client_id": {tc.clientID}, "code_verifier": {strings.Repeat("v", 43)},
			})
			rev := postForm(t, tc.h.gw.URL+"/oauth/revoke", url.Values{"token": {"t"}, "client_id": {tc.clientID}})
			a := tc.h.newAuthz()
			a.params.Set("client_id", tc.clientID)
			p := tc.h.start(t, newBrowser(t), a)
			for _, got := range []struct {
				what   string
				status int
				text   string
			}{
				{"token", tok.status, tok.str("error") + ": " + tok.str("error_description")},
				{"revoke", rev.status, rev.str("error") + ": " + rev.str("error_description")},
				{"authorize", p.status, errorText(p.body)},
			} {
				want := "invalid_client: " + genericRefusal
				if got.what == "authorize" {
					want = "Client authentication failed (e.g., unknown client, no client authentication included, or unsupported authentication method). " + genericRefusal
				}
				if got.status != http.StatusUnauthorized || got.text != want {
					t.Errorf("%s: %d %q, want 401 %q", got.what, got.status, got.text, want)
				}
			}
			if !strings.Contains(logs.String(), tc.logged) {
				t.Errorf("the log does not say why (%q):\n%s", tc.logged, logs.String())
			}
		})
	}
}

// genericRefusal is what every refused client metadata document is called.
const genericRefusal = "The client metadata document could not be used; the gateway's log says why."

// errorText is the message of an error page.
func errorText(body string) string {
	_, rest, _ := strings.Cut(body, `<p class="error" role="alert">`)
	msg, _, _ := strings.Cut(rest, "</p>")
	return html.UnescapeString(msg)
}

func listenerPort(l net.Listener) int { return l.Addr().(*net.TCPAddr).Port }

// freePort is a loopback port nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := listenerPort(l)
	l.Close()
	return port
}

// hangingListener accepts connections and never answers on them.
func hangingListener(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return l
}

// lockedBuffer is a log sink the test reads while servers write to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestClientMetadataFetchRateFlow: /oauth/token and /oauth/revoke from one
// address naming ever new client_id URLs make at most the address's rate
// of fetches; past it they are answered 429 with Retry-After and nothing
// is fetched, and a client whose document is cached is still served.
func TestClientMetadataFetchRateFlow(t *testing.T) {
	var fetches atomic.Int32
	var docs *httptest.Server
	docs = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		fmt.Fprintf(w, `{"client_id":%q,"redirect_uris":[%q]}`, docs.URL+r.URL.Path, redirectURI)
	}))
	t.Cleanup(docs.Close)
	const rate = 3
	h := newHarness(t, harnessOptions{clientMetadata: oauth.ClientMetadataConfig{
		Hosts: []string{"127.0.0.1"}, AllowLoopback: true, Ports: []int{listenerPort(docs.Listener)},
		RootCAs:          docs.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs,
		FetchesPerMinute: rate,
	}})
	statuses := map[int]int{}
	for i := range 20 {
		id := fmt.Sprintf("%s/flood/%d.json", docs.URL, i)
		var a tokenAnswer
		var retryAfter string
		if i%2 == 0 {
			a = h.tokenRequest(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"x"}, "client_id": {id}})
		} else {
			resp, err := http.PostForm(h.gw.URL+"/oauth/revoke", url.Values{"token": {"x"}, "client_id": {id}})
			if err != nil {
				t.Fatal(err)
			}
			retryAfter = resp.Header.Get("Retry-After")
			a.status = resp.StatusCode
			resp.Body.Close()
		}
		statuses[a.status]++
		if i < rate && a.status == http.StatusTooManyRequests {
			t.Fatalf("request %d, within the rate: %d", i, a.status)
		}
		if i >= rate && (a.status != http.StatusTooManyRequests || i%2 == 1 && retryAfter == "") {
			t.Fatalf("request %d, past the rate: %d Retry-After %q", i, a.status, retryAfter)
		}
	}
	a := h.newAuthz()
	a.params.Set("client_id", docs.URL+"/flood/authorize.json")
	if p := h.start(t, newBrowser(t), a); p.status != http.StatusTooManyRequests || !strings.Contains(p.body, "try again in a minute") {
		t.Fatalf("authorize past the rate: %d\n%s", p.status, p.body)
	}
	if n := fetches.Load(); n != rate {
		t.Fatalf("20 requests naming new client_ids made %d fetches, want the rate, %d (answers %v)", n, rate, statuses)
	}
	if r := h.tokenRequest(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"x"}, "client_id": {docs.URL + "/flood/0.json"}}); r.str("error") != "invalid_grant" {
		t.Fatalf("a cached client past the rate: %d %v, want its refresh token judged (invalid_grant)", r.status, r.body)
	}
}
