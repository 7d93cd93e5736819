package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// TestHTTP2RapidReset: one HTTP/2 connection over TLS
// opens streams and resets each at once, as fast as it can. The gateway
// closes the connection once its resets pass its completions by
// middleware.ResetAllowance, counts it in /metrics, writes a bounded
// number of access lines for the address, and serves an honest HTTP/2
// client afterwards.
func TestHTTP2RapidReset(t *testing.T) {
	gw, roots, addr := startTLSGateway(t)

	sent, err := resetFlood(t, &net.Dialer{}, addr, roots, 20000)
	if sent == 20000 {
		t.Logf("all %d streams written before the close was seen (%v)", sent, err)
	} else {
		t.Logf("the gateway closed the connection after %d of 20000 reset streams (%v)", sent, err)
	}

	var h2only http.Protocols
	h2only.SetHTTP2(true)
	honest := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, Protocols: &h2only}, Timeout: 10 * time.Second}
	exposition := scrapeWith(t, honest, gw.MetricsURL)
	if n := metricValue(t, exposition, "agent_gateway_http2_connections_closed_total", ""); n != 1 {
		t.Fatalf("agent_gateway_http2_connections_closed_total %v, want 1", n)
	}
	if n := metricValue(t, exposition, "agent_gateway_http2_streams_reset_total", ""); n <= middleware.ResetAllowance {
		t.Fatalf("agent_gateway_http2_streams_reset_total %v, want over %d", n, middleware.ResetAllowance)
	}
	// The address's access lines are bounded: the burst plus what the
	// bucket refilled during the run, far fewer than the streams.
	lines := strings.Count(gw.Logs(), `"path":"/mcp/forgejo"`)
	if lines > middleware.AccessLinesBurst+middleware.AccessLinesPerSecond*60 {
		t.Fatalf("%d access lines for %d reset streams", lines, sent)
	}
	if !strings.Contains(gw.Logs(), "HTTP/2 connection closed: it reset far more streams than it completed") {
		t.Fatal("no log line names the closed connection")
	}

	// An honest HTTP/2 client is served.
	resp, err := honest.Get(gw.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Fatalf("honest client: HTTP/%d %d", resp.ProtoMajor, resp.StatusCode)
	}
}

// resetFlood opens one HTTP/2 connection over TLS to addr through d and
// opens and resets up to streams streams on it as fast as it can. It
// returns how many it sent before the connection ended and how it ended;
// it fails the test if the connection is still open 30 s after the last
// stream, and returns dialErr when the connection is refused before
// HTTP/2 starts.
func resetFlood(t *testing.T, d *net.Dialer, addr string, roots *x509.CertPool, streams int) (sent int, err error) {
	t.Helper()
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: roots, NextProtos: []string{"h2"}})
	if err != nil {
		return 0, dialErr{err}
	}
	defer conn.Close()
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q, want h2", p)
	}
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		return 0, err
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		return 0, err
	}
	// Read frames until the connection ends (bounded by a deadline).
	closed := make(chan error, 1)
	go func() {
		for {
			if _, err := fr.ReadFrame(); err != nil {
				closed <- err
				return
			}
		}
	}()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for id := uint32(1); sent < streams; id += 2 {
		hb.Reset()
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":authority", addr}, {":path", "/mcp/forgejo"},
			{"content-type", "application/json"}, {"accept", "application/json, text/event-stream"}} {
			_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		// HEADERS without END_STREAM (a body would follow), then RST_STREAM.
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
			break
		}
		if err := fr.WriteRSTStream(id, http2.ErrCodeCancel); err != nil {
			break
		}
		sent++
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	err = <-closed
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the connection was still open 30 s after %d reset streams", sent)
	}
	return sent, err
}

// dialErr is a connection refused before HTTP/2 started (at accept, or in
// the TLS handshake).
type dialErr struct{ error }

// TestHTTP2RapidResetPerAddress: one address opens
// connection after connection and resets streams on each until the
// gateway closes it, so no connection passes its own allowance by much.
// The address's resets are counted together: after a few connections the
// address is cut off, its next connection is refused at accept, the cut-off
// is counted and logged, and an honest HTTP/2 client from another address
// is served meanwhile.
func TestHTTP2RapidResetPerAddress(t *testing.T) {
	gw, roots, addr := startTLSGateway(t)
	from := func(ip string) *net.Dialer {
		return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	}

	// Each connection is closed by its own allowance after a few hundred
	// streams at most; the address's allowance is two connections' worth,
	// so it is cut off within a handful of connections.
	const maxConns = 10
	refusedAt := 0
	for i := 1; i <= maxConns && refusedAt == 0; i++ {
		sent, err := resetFlood(t, from("127.0.0.66"), addr, roots, 5000)
		var de dialErr
		if errors.As(err, &de) {
			refusedAt = i
			t.Logf("connection %d of the address was refused: %v", i, err)
			break
		}
		t.Logf("connection %d: %d reset streams sent before it ended (%v)", i, sent, err)
	}
	if refusedAt == 0 {
		t.Fatalf("%d connections from one address each reset streams until closed, and the address's next connection was still accepted", maxConns)
	}
	if refusedAt < 3 {
		t.Fatalf("the address was refused at its connection %d, before its resets passed two connections' allowance", refusedAt)
	}

	// An honest HTTP/2 client from another address is served, the
	// cut-off address is not (plain HTTPS, any protocol).
	client := func(ip string) *http.Client {
		var h2only http.Protocols
		h2only.SetHTTP2(true)
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: from(ip).DialContext,
			TLSClientConfig: &tls.Config{RootCAs: roots}, Protocols: &h2only}}
	}
	resp, err := client("127.0.0.2").Get(gw.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Fatalf("honest client: HTTP/%d %d", resp.ProtoMajor, resp.StatusCode)
	}
	if resp, err := client("127.0.0.66").Get(gw.URL + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatalf("the cut-off address was answered %d", resp.StatusCode)
	}

	exposition := scrapeWith(t, client("127.0.0.2"), gw.MetricsURL)
	if n := metricValue(t, exposition, "agent_gateway_http2_addresses_cut_off_total", ""); n != 1 {
		t.Fatalf("agent_gateway_http2_addresses_cut_off_total %v, want 1", n)
	}
	if n := metricValue(t, exposition, "agent_gateway_load_refusals_total", `bound="resets_per_ip"`); n < 2 {
		t.Fatalf(`agent_gateway_load_refusals_total{bound="resets_per_ip"} %v, want the two refused connections at least`, n)
	}
	if !strings.Contains(gw.Logs(), `client address cut off: its HTTP/2 connections reset far more streams than they completed","client_ip":"127.0.0.66"`) {
		t.Fatal("no log line names the cut-off address")
	}
}

// startTLSGateway starts the gateway serving TLS (so ALPN offers h2) with a
// fresh self-signed certificate, and returns it, the roots that trust it
// and its host:port.
func startTLSGateway(t *testing.T) (*gatewaytest.Process, *x509.CertPool, string) {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	cert := newSelfSigned(t)
	cert.write(t, certFile, keyFile)
	roots := x509.NewCertPool()
	roots.AddCert(cert.cert)
	gw := gatewaytest.Start(t, gatewaytest.Options{TLS: &tls.Config{RootCAs: roots}, Env: map[string]string{
		"AGENT_GATEWAY_TLS_CERT_FILE": certFile, "AGENT_GATEWAY_TLS_KEY_FILE": keyFile,
	}})
	return gw, roots, strings.TrimPrefix(gw.URL, "https://")
}

// scrapeWith fetches the /metrics exposition at url with c.
func scrapeWith(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return string(body)
}
