// Package mcpdiff compares two HTTP answers as an MCP client reads them:
// the status, the response headers a client acts on, and the body byte for
// byte. It is what the owned tools/call path's differential tests hold it
// to against the SDK's handler (docs/architecture.md).
package mcpdiff

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Headers are the response headers a client reads: framing, the MCP
// session, authentication challenges and retry advice.
var Headers = []string{"Content-Type", "Content-Length", "Transfer-Encoding", "Cache-Control", "Mcp-Session-Id",
	"WWW-Authenticate", "Allow", "Retry-After", "X-Content-Type-Options", "Vary", "Access-Control-Allow-Origin", "Connection"}

// Answer is what a client reads of one response.
type Answer struct {
	Status  int
	Headers http.Header
	Body    []byte
}

// Read reads resp whole into an Answer and closes its body.
func Read(resp *http.Response) (Answer, error) {
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return Answer{}, err
	}
	a := Answer{Status: resp.StatusCode, Headers: http.Header{}, Body: body}
	for _, h := range Headers {
		if v := resp.Header.Values(h); v != nil {
			a.Headers[h] = v
		}
	}
	if resp.TransferEncoding != nil {
		a.Headers["Transfer-Encoding"] = resp.TransferEncoding
	}
	return a, nil
}

// Do sends req with client and reads the answer.
func Do(client *http.Client, req *http.Request) (Answer, error) {
	resp, err := client.Do(req)
	if err != nil {
		return Answer{}, err
	}
	return Read(resp)
}

// Differs says how the owned path's answer differs from the SDK's, ""
// when a client could not tell them apart; a body difference is shown
// around its first differing byte.
func Differs(owned, sdk Answer) string {
	var out []string
	if owned.Status != sdk.Status {
		out = append(out, fmt.Sprintf("status: owned %d, SDK %d", owned.Status, sdk.Status))
	}
	for _, h := range Headers {
		if x, y := strings.Join(owned.Headers[h], "\n"), strings.Join(sdk.Headers[h], "\n"); x != y {
			out = append(out, fmt.Sprintf("%s: owned %q, SDK %q", h, x, y))
		}
	}
	if !bytes.Equal(owned.Body, sdk.Body) {
		i := 0
		for i < len(owned.Body) && i < len(sdk.Body) && owned.Body[i] == sdk.Body[i] {
			i++
		}
		from := max(0, i-80)
		out = append(out, fmt.Sprintf("bodies differ at byte %d of %d/%d:\nowned …%.240q\nSDK   …%.240q",
			i, len(owned.Body), len(sdk.Body), owned.Body[from:], sdk.Body[from:]))
	}
	return strings.Join(out, "\n")
}
