package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
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
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	cert := newSelfSigned(t)
	cert.write(t, certFile, keyFile)
	roots := x509.NewCertPool()
	roots.AddCert(cert.cert)
	gw := gatewaytest.Start(t, gatewaytest.Options{TLS: &tls.Config{RootCAs: roots}, Env: map[string]string{
		"AGENT_GATEWAY_TLS_CERT_FILE": certFile, "AGENT_GATEWAY_TLS_KEY_FILE": keyFile,
	}})
	addr := strings.TrimPrefix(gw.URL, "https://")

	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q, want h2", p)
	}
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
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
	const streams = 20000
	sent := 0
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
	if sent == streams {
		t.Logf("all %d streams written before the close was seen (%v)", sent, err)
	} else {
		t.Logf("the gateway closed the connection after %d of %d reset streams (%v)", sent, streams, err)
	}

	var h2only http.Protocols
	h2only.SetHTTP2(true)
	honest := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, Protocols: &h2only}, Timeout: 10 * time.Second}
	mresp, err := honest.Get(gw.MetricsURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(io.LimitReader(mresp.Body, 8<<20))
	mresp.Body.Close()
	exposition := string(body)
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
