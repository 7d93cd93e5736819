package main

import (
	"encoding/pem"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agent-gateway/agent-gateway/handlers/oauth"
)

// The client metadata flood: the gateway under test accepts Client ID
// Metadata Documents from one loopback host, as an operator would allow a
// host, and the attacker sends /oauth/token and /oauth/revoke naming a new
// client_id URL on it each time, every third on a port the gateway does
// not allow. Each fetch the flood costs is counted where it lands, at the
// metadata host, and set against what the per-address fetch rate allows.

// metadataHost is the loopback TLS server the gateway may fetch client
// metadata documents from; it serves one for every path and counts them.
type metadataHost struct {
	srv     *httptest.Server
	fetches atomic.Int64
	caFile  string
}

func startMetadataHost(dir string) (*metadataHost, error) {
	m := &metadataHost{}
	m.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.fetches.Add(1)
		fmt.Fprintf(w, `{"client_id":%q,"redirect_uris":["http://127.0.0.1:9999/cb"]}`, m.srv.URL+r.URL.Path)
	}))
	m.caFile = filepath.Join(dir, "metadata-ca.pem")
	if err := os.WriteFile(m.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: m.srv.Certificate().Raw}), 0o600); err != nil {
		m.srv.Close()
		return nil, err
	}
	return m, nil
}

func (m *metadataHost) port() int { return m.srv.Listener.Addr().(*net.TCPAddr).Port }

// env lets the gateway fetch from the metadata host: its host and port,
// loopback, and its certificate (the stack's other upstreams are http).
func (m *metadataHost) env() []string {
	return []string{
		"AGENT_GATEWAY_OAUTH_CLIENT_METADATA_HOSTS=127.0.0.1",
		"AGENT_GATEWAY_OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK=true",
		"AGENT_GATEWAY_OAUTH_CLIENT_METADATA_PORTS=" + strconv.Itoa(m.port()),
		"SSL_CERT_FILE=" + m.caFile,
	}
}

func (m *metadataHost) close() {
	if m != nil {
		m.srv.Close()
	}
}

// cimdRequest is the flood's i-th request: /oauth/token and /oauth/revoke
// in turn, each naming a client_id URL never named before.
func cimdRequest(s *stack, i int) *http.Request {
	port := s.metadata.port()
	if i%3 == 2 {
		port = 1024 + i%60000 // not allowed: refused before any lookup
	}
	id := fmt.Sprintf("https://127.0.0.1:%d/flood/%d.json", port, i)
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"flood"}, "client_id": {id}}
	path := "/oauth/token"
	if i%2 == 1 {
		form, path = url.Values{"token": {"flood"}, "client_id": {id}}, "/oauth/revoke"
	}
	r, _ := http.NewRequest(http.MethodPost, s.url+path, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return r
}

// cimdBound is the most fetches one address may cause in an attack of
// length phase: the per-address rate for each one-minute window the attack
// touches (the rate is a sliding window, so a phase shorter than a minute
// may still straddle two).
func cimdBound(gatewayEnv []string, phase time.Duration) (bound, perMinute int) {
	perMinute = oauth.DefaultClientMetadataFetchesPerMinute
	for _, kv := range gatewayEnv {
		if v, ok := strings.CutPrefix(kv, "AGENT_GATEWAY_OAUTH_CLIENT_METADATA_FETCHES_PER_MINUTE="); ok {
			if n, err := strconv.Atoi(v); err == nil {
				perMinute = n
			}
		}
	}
	windows := int(math.Ceil(phase.Minutes())) + 1
	return perMinute * windows, perMinute
}

// cimdRow is the report's line of the flood.
func cimdRow(s *stack, gatewayEnv []string, phase time.Duration) string {
	bound, perMinute := cimdBound(gatewayEnv, phase)
	made := s.metadata.fetches.Load()
	verdict := "within"
	if made > int64(bound) {
		verdict = "OVER"
	}
	return fmt.Sprintf("| client metadata fetches made for the attacker | | %d, %s the bound of %d (%d a minute per address) |", made, verdict, bound, perMinute)
}
