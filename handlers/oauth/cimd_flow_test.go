package oauth_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

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
