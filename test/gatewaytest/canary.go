package gatewaytest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Canaries are the secrets of one test stack that must never appear in
// anything the gateway writes or shows: its logs (stdout and stderr), the
// MCP responses its clients received (tool results, tool errors, JSON-RPC
// errors), and its /metrics exposition. A stack registers every secret it
// hands out or configures — caller bearers (Forgejo passthrough tokens and
// gateway OAuth access tokens), the GitHub App private key, the cursor
// signing secret, and patterns for secrets it cannot know in advance
// (installation tokens the GitHub emulator mints, App JWTs) — and passes
// the set in Options.Canaries; the process is then scanned when the test
// ends, and the test fails naming the canary and where it appeared.
//
// OAuth authorization codes and refresh tokens, when the gateway issues
// them, are registered the same way: Add each one the test obtains (or
// AddPattern a shape they all share).
type Canaries struct {
	mu       sync.Mutex
	literals []literal
	patterns []pattern
}

type literal struct{ name, text string }

type pattern struct {
	name string
	re   *regexp.Regexp
}

// minCanaryBytes is the shortest text registered: shorter fragments of a
// secret could occur by chance.
const minCanaryBytes = 12

// NewCanaryToken returns a fresh random token shaped like a credential and
// marked as a canary, e.g. "canary-bearer-3f9a…": any occurrence of it in
// an output is a leak.
func NewCanaryToken(kind string) string {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return "canary-" + kind + "-" + hex.EncodeToString(b)
}

// Add registers a secret by name, with the encodings a careless log line
// might use: as is, and in standard and URL-safe base64.
func (c *Canaries) Add(name, secret string) {
	if len(secret) < minCanaryBytes {
		panic(fmt.Sprintf("gatewaytest: canary %s is shorter than %d bytes", name, minCanaryBytes))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.literals = append(c.literals, literal{name, secret})
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawURLEncoding} {
		c.literals = append(c.literals, literal{name + " (base64)", strings.TrimRight(enc.EncodeToString([]byte(secret)), "=")})
	}
}

// AddPEM registers a PEM-encoded private key: each line of its base64
// body (a key leaks line by line as easily as whole), the body joined
// without line breaks, and the DER bytes in URL-safe base64.
func (c *Canaries) AddPEM(name string, pemBytes []byte) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		panic("gatewaytest: AddPEM: no PEM block")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	body := base64.StdEncoding.EncodeToString(block.Bytes)
	c.literals = append(c.literals, literal{name + " (base64 body)", body},
		literal{name + " (base64url DER)", base64.RawURLEncoding.EncodeToString(block.Bytes)})
	for i := 0; i+64 <= len(body); i += 64 {
		c.literals = append(c.literals, literal{fmt.Sprintf("%s (PEM line %d)", name, i/64+1), body[i : i+64]})
	}
}

// AddPattern registers a shape every secret of a kind has (minted
// installation tokens, App JWTs), for secrets the test never sees.
func (c *Canaries) AddPattern(name string, re *regexp.Regexp) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.patterns = append(c.patterns, pattern{name, re})
}

// Find returns the names of the canaries that occur in text.
func (c *Canaries) Find(text string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var found []string
	seen := map[string]bool{}
	for _, l := range c.literals {
		if !seen[l.name] && strings.Contains(text, l.text) {
			seen[l.name] = true
			found = append(found, l.name)
		}
	}
	for _, p := range c.patterns {
		if !seen[p.name] && p.re.MatchString(text) {
			seen[p.name] = true
			found = append(found, p.name)
		}
	}
	return found
}

// Check fails the test if any canary occurs in text, naming where.
func (c *Canaries) Check(t testing.TB, where, text string) {
	t.Helper()
	if found := c.Find(text); len(found) > 0 {
		t.Errorf("canary leak: %s appear(s) in %s", strings.Join(found, ", "), where)
	}
}

// scan checks a stopped process's outputs: its logs, the MCP responses
// its clients recorded, and the /metrics exposition scraped before it
// stopped.
func (p *Process) scan(t testing.TB, metrics string) {
	t.Helper()
	p.canaries.Check(t, "the gateway's logs", p.logs.String())
	p.canaries.Check(t, "MCP responses (tool results and errors)", p.responses.String())
	p.canaries.Check(t, "the /metrics exposition", metrics)
}

// scrapeMetrics fetches the whole /metrics exposition (MetricsURL); ""
// when the process is gone.
func (p *Process) scrapeMetrics() string {
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(p.MetricsURL)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return string(b)
}

// Record adds text the test received from the gateway by other means
// than a Connect session (raw HTTP requests, a stdio transcript), so the
// canary scan covers it too.
func (p *Process) Record(text string) {
	_, _ = p.responses.Write([]byte(text + "\n"))
}

// recordingTransport keeps a copy of every response body a client reads.
type recordingTransport struct {
	base http.RoundTripper
	into io.Writer
}

func (r *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &teeBody{ReadCloser: resp.Body, w: r.into}
	return resp, nil
}

type teeBody struct {
	io.ReadCloser
	w io.Writer
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if n > 0 {
		_, _ = t.w.Write(p[:n])
	}
	return n, err
}

// Responses returns the MCP response bodies recorded so far (for tests of
// the recording itself).
func (p *Process) Responses() string { return p.responses.String() }
