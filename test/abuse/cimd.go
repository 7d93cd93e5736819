package main

import (
	"context"
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

// The client metadata floods: the gateway under test accepts Client ID
// Metadata Documents from one loopback host, as an operator would allow a
// host, and two attackers send /oauth/token and /oauth/revoke naming a new
// client_id URL on it each time, every third on a port the gateway does
// not allow. One sends from an address of its own (cimdSource), so it
// meets the per-address fetch rate and not the bounds the slow bodies of
// attackerSource fill; the other sends each request from another loopback
// address (cimdRotatingNet), so only the fetch rate of all addresses
// together holds it. Each fetch the floods cost is counted where it lands,
// at the metadata host, by flood, and set against what the rates allow.

// cimdSource is the address of the one-address client metadata flood.
const cimdSource = "127.0.0.67"

// cimdRotatingNet is where the rotating flood takes a new address for
// every request: 127.0.2.1 to 127.0.2.254.
const cimdRotatingNet = "127.0.2."

// metadataHost is the loopback TLS server the gateway may fetch client
// metadata documents from; it serves one for every path and counts them.
type metadataHost struct {
	srv      *httptest.Server
	fetches  atomic.Int64 // all of them
	rotating atomic.Int64 // those of the rotating flood (cimdRotatingPath)
	caFile   string
}

// cimdRotatingPath marks the rotating flood's client_id URLs.
const cimdRotatingPath = "/rotating/"

func startMetadataHost(dir string) (*metadataHost, error) {
	m := &metadataHost{}
	m.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.fetches.Add(1)
		if strings.HasPrefix(r.URL.Path, cimdRotatingPath) {
			m.rotating.Add(1)
		}
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

// cimdRequest is a flood's i-th request: /oauth/token and /oauth/revoke
// in turn, each naming a client_id URL never named before under dir.
func cimdRequest(s *stack, dir string, i int) *http.Request {
	port := s.metadata.port()
	if i%3 == 2 {
		port = 1024 + i%60000 // not allowed: refused before any lookup
	}
	id := fmt.Sprintf("https://127.0.0.1:%d%s%d.json", port, dir, i)
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"flood"}, "client_id": {id}}
	path := "/oauth/token"
	if i%2 == 1 {
		form, path = url.Values{"token": {"flood"}, "client_id": {id}}, "/oauth/revoke"
	}
	r, _ := http.NewRequest(http.MethodPost, s.url+path, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return r
}

// rotatingClient sends each request from the next address of
// cimdRotatingNet, on a new connection.
func rotatingClient() *http.Client {
	var next atomic.Int64
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		ip := cimdRotatingNet + strconv.Itoa(int(next.Add(1)%254)+1)
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
		return d.DialContext(ctx, network, addr)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// cimdBound is the most fetches a rate of perMinute (the default, or the
// gateway environment's key) allows in an attack of length phase: the rate
// for each one-minute window the attack touches (the rate is a sliding
// window, so a phase shorter than a minute may still straddle two).
func cimdBound(gatewayEnv []string, key string, perMinute int, phase time.Duration) (bound, rate int) {
	for _, kv := range gatewayEnv {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			if n, err := strconv.Atoi(v); err == nil {
				perMinute = n
			}
		}
	}
	windows := int(math.Ceil(phase.Minutes())) + 1
	return perMinute * windows, perMinute
}

// cimdRows are the report's lines of the floods: the one address's fetches
// against the per-address rate, and all fetches against the total rate.
func cimdRows(s *stack, gatewayEnv []string, phase time.Duration) string {
	verdict := func(made int64, bound int) string {
		if made > int64(bound) {
			return "OVER"
		}
		return "within"
	}
	addrBound, perAddr := cimdBound(gatewayEnv, "AGENT_GATEWAY_OAUTH_CLIENT_METADATA_FETCHES_PER_MINUTE", oauth.DefaultClientMetadataFetchesPerMinute, phase)
	totalBound, total := cimdBound(gatewayEnv, "AGENT_GATEWAY_OAUTH_CLIENT_METADATA_TOTAL_FETCHES_PER_MINUTE", oauth.DefaultClientMetadataTotalFetchesPerMinute, phase)
	all, rotating := s.metadata.fetches.Load(), s.metadata.rotating.Load()
	one := all - rotating
	return fmt.Sprintf("| client metadata fetches made for the one-address flood (%s) | | %d, %s the bound of %d (%d a minute per address) |\n", cimdSource, one, verdict(one, addrBound), addrBound, perAddr) +
		fmt.Sprintf("| client metadata fetches made for both floods (the other from %s1-254, a new address per request) | | %d (rotating %d), %s the bound of %d (%d a minute in all) |", cimdRotatingNet, all, rotating, verdict(all, totalBound), totalBound, total)
}
