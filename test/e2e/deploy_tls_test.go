package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// selfSigned is a certificate for 127.0.0.1 and its key, as PEM, and the
// parsed certificate.
type selfSigned struct {
	certPEM, keyPEM []byte
	cert            *x509.Certificate
}

func newSelfSigned(t *testing.T) selfSigned {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "agent-gateway test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return selfSigned{
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		cert:    cert,
	}
}

// write puts the pair at certFile and keyFile, as an operator renewing it.
func (s selfSigned) write(t *testing.T, certFile, keyFile string) {
	t.Helper()
	if err := os.WriteFile(certFile, s.certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, s.keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
}

// servedSerial is the serial number of the certificate addr serves.
func servedSerial(t *testing.T, addr string, roots *x509.CertPool) *big.Int {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots})
	if err != nil {
		t.Fatalf("TLS to %s: %v", addr, err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber
}

// eventually polls cond every 50 ms until it holds or 30 s pass: a signal
// is handled asynchronously, and only its effect is checked.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("never: %s", what)
}

// TestDeployTLSReload (docs/deploy.md#4-tls): the binary serves TLS with the
// guide's tls.* block and a generated certificate; an MCP client connects
// over it and TLS 1.1 is refused. After the files are replaced, SIGHUP
// makes it serve the new certificate; after they are broken, SIGHUP keeps
// the previous one and says so in the log.
func TestDeployTLSReload(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	config := replaceAll(t, guideBlock(t, "docs/deploy.md", "TestDeployTLSReload", 0),
		"/etc/agent-gateway/tls/cert.pem", certFile, "/etc/agent-gateway/tls/key.pem", keyFile)
	configFile := filepath.Join(dir, "agent-gateway.yaml")
	if err := os.WriteFile(configFile, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	a, b := newSelfSigned(t), newSelfSigned(t)
	a.write(t, certFile, keyFile)
	roots := x509.NewCertPool()
	roots.AddCert(a.cert)
	roots.AddCert(b.cert)
	tlsConfig := &tls.Config{RootCAs: roots}
	// AGENT_GATEWAY_LISTEN (a free port) overrides the block's listen.
	gw := gatewaytest.Start(t, gatewaytest.Options{Binary: gatewaytest.MakeBinary(t), Args: []string{"--config", configFile}, TLS: tlsConfig})
	addr := strings.TrimPrefix(gw.URL, "https://")

	if got := servedSerial(t, addr, roots); got.Cmp(a.cert.SerialNumber) != 0 {
		t.Fatalf("serves certificate %v, want the configured one %v", got, a.cert.SerialNumber)
	}
	s := gw.Connect(t, "/mcp/forgejo", "")
	if names := toolNames(t, s); len(names) != len(anonymousTools) {
		t.Fatalf("tools over TLS: %v", names)
	}
	if c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, MaxVersion: tls.VersionTLS11}); err == nil {
		c.Close()
		t.Fatal("a TLS 1.1 handshake succeeded")
	}

	b.write(t, certFile, keyFile)
	if err := gw.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the renewed certificate is served after SIGHUP", func() bool {
		return servedSerial(t, addr, roots).Cmp(b.cert.SerialNumber) == 0
	})
	if !strings.Contains(gw.Logs(), `"msg":"TLS certificate reloaded"`) {
		t.Fatalf("no reload in the log:\n%s", gw.Logs())
	}

	if err := os.WriteFile(certFile, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := gw.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the failed reload is logged", func() bool {
		return strings.Contains(gw.Logs(), "TLS certificate reload failed; keeping the previous one")
	})
	if got := servedSerial(t, addr, roots); got.Cmp(b.cert.SerialNumber) != 0 {
		t.Fatalf("after a failed reload it serves %v, want the previous %v", got, b.cert.SerialNumber)
	}
}

// loggedClientIPs returns the client_ip of each access log line of path.
func loggedClientIPs(t *testing.T, logs, path string) []string {
	t.Helper()
	var ips []string
	for _, line := range strings.Split(logs, "\n") {
		var l struct {
			Msg      string `json:"msg"`
			Path     string `json:"path"`
			ClientIP string `json:"client_ip"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "request" && l.Path == path {
			ips = append(ips, l.ClientIP)
		}
	}
	return ips
}

// TestDeployBehindProxy (docs/deploy.md#5-behind-a-reverse-proxy): a
// TLS-terminating reverse proxy (Go's httputil.ReverseProxy) in front of the
// binary, configured with the guide's block (loopback addresses in place of
// 10.0.x): an MCP client on 127.0.0.2 lists and calls tools through it; the
// 401 of the documents endpoint names the proxy's public_url; the access log
// shows the client's address from X-Forwarded-For; a caller on 127.0.0.3 that
// reaches the gateway directly with an X-Forwarded-For of its choosing is
// logged under its own address.
func TestDeployBehindProxy(t *testing.T) {
	emu, d := startDemoEmulator(t)
	var target atomic.Pointer[httputil.ReverseProxy]
	proxy := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target.Load().ServeHTTP(w, r)
	}))
	proxy.StartTLS()
	t.Cleanup(proxy.Close)

	config := replaceAll(t, guideBlock(t, "docs/deploy.md", "TestDeployBehindProxy", 0),
		"https://gateway.example", proxy.URL, "[10.0.0.0/24]", "[127.0.0.1/32]")
	configFile := filepath.Join(t.TempDir(), "agent-gateway.yaml")
	if err := os.WriteFile(configFile, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	// AGENT_GATEWAY_LISTEN (a free loopback port) overrides the block's
	// listen; the proxy connects to it from 127.0.0.1.
	gw := gatewaytest.Start(t, gatewaytest.Options{Binary: gatewaytest.MakeBinary(t), Args: []string{"--config", configFile},
		Env: map[string]string{"AGENT_GATEWAY_FORGEJO_ORIGIN": emu.URL()}})
	gwURL, _ := url.Parse(gw.URL)
	target.Store(httputil.NewSingleHostReverseProxy(gwURL))

	from := func(ip string, tlsConfig *tls.Config) *http.Client {
		dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
		return &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext, TLSClientConfig: tlsConfig}}
	}
	client := from("127.0.0.2", &tls.Config{RootCAs: func() *x509.CertPool {
		p := x509.NewCertPool()
		p.AddCert(proxy.Certificate())
		return p
	}()})

	s := gatewaytest.ConnectThrough(t, proxy.URL+"/mcp/forgejo", "", client.Transport)
	if names := toolNames(t, s); len(names) != len(anonymousTools) {
		t.Fatalf("tools through the proxy: %v", names)
	}
	if out, isErr := callTool(t, s, "get_repository", map[string]any{"owner": d.Owner, "repo": d.PublicRepo}); isErr || out["name"] != d.PublicRepo {
		t.Fatalf("get_repository through the proxy: %v", out)
	}
	req, _ := http.NewRequest(http.MethodPost, proxy.URL+"/mcp/documents", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if want := `resource_metadata="` + proxy.URL + `/.well-known/oauth-protected-resource/mcp/documents"`; resp.StatusCode != http.StatusUnauthorized ||
		!strings.Contains(resp.Header.Get("WWW-Authenticate"), want) {
		t.Fatalf("documents without a bearer through the proxy: %d %q, want %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), want)
	}

	direct, _ := http.NewRequest(http.MethodGet, gw.URL+"/healthz", nil)
	direct.Header.Set("X-Forwarded-For", "198.51.100.7")
	resp, err = from("127.0.0.3", nil).Do(direct)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	// The start's own health checks already wrote /healthz lines from
	// 127.0.0.1, and a line is written after its response is sent: wait for
	// the direct request's own line, or its absence is a race, not a finding.
	eventually(t, "the direct request is logged under its own address, 127.0.0.3", func() bool {
		return slices.Contains(loggedClientIPs(t, gw.Logs(), "/healthz"), "127.0.0.3") && len(loggedClientIPs(t, gw.Logs(), "/mcp/documents")) > 0
	})
	for _, ip := range append(loggedClientIPs(t, gw.Logs(), "/mcp/forgejo"), loggedClientIPs(t, gw.Logs(), "/mcp/documents")...) {
		if ip != "127.0.0.2" {
			t.Errorf("a request through the proxy is logged from %q, want the client's 127.0.0.2", ip)
		}
	}
	for _, ip := range loggedClientIPs(t, gw.Logs(), "/healthz") {
		// The start's own health checks come from 127.0.0.1.
		if ip != "127.0.0.3" && ip != "127.0.0.1" {
			t.Errorf("a direct request is logged from %q: an untrusted peer's X-Forwarded-For was believed", ip)
		}
	}
	if strings.Contains(gw.Logs(), "198.51.100.7") {
		t.Error("the forged X-Forwarded-For reached the log")
	}
}
