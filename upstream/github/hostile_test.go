package github

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agent-gateway/agent-gateway/test/hostile"
	"github.com/agent-gateway/agent-gateway/upstream"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// hostileTimeout is the per-request I/O timeout of the hostile-upstream
// tests: short, so stalls end quickly, and five times the slow drip's gap.
const hostileTimeout = 500 * time.Millisecond

func noLeak(t *testing.T) goleak.Option {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	return ignore
}

func jsonAnswer(status int, body string) hostile.Answer {
	return hostile.Answer{Status: status, Header: http.Header{"Content-Type": {"application/json; charset=utf-8"}}, Body: []byte(body)}
}

// hostileFile is a genuine Contents answer for a file guide.md at path.
func hostileFile(path string) string {
	content := []byte(strings.Repeat("A guide line.\n", 200))
	b, _ := json.Marshal(map[string]any{
		"type": "file", "encoding": "base64", "size": len(content), "name": "guide.md", "path": path,
		"sha": BlobSHA(content), "content": encodeLines(content),
		"_links": map[string]string{"self": "https://api.github.com/repos/octo/docs/contents/" + path},
	})
	return string(b)
}

// encodeLines is base64 broken into 60-character lines, as GitHub sends it.
func encodeLines(b []byte) string {
	s := base64.StdEncoding.EncodeToString(b)
	var out strings.Builder
	for len(s) > 60 {
		out.WriteString(s[:60] + "\n")
		s = s[60:]
	}
	return out.String() + s + "\n"
}

func tokenAnswer(token string) string {
	return fmt.Sprintf(`{"token":%q,"expires_at":%q,"permissions":{"contents":"read","metadata":"read"},"repository_selection":"selected","repositories":[{"name":"docs"}]}`,
		token, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
}

// githubPath is one strict client path of the GitHub client.
type githubPath struct {
	name string
	// route is the path prefix the hostile behaviour answers; every other
	// request gets its genuine answer (the token route before Contents).
	route                                                 string
	answer                                                hostile.Answer
	nested, nestedExtreme, hugeNumber, nulEscaped, nulRaw string
	call                                                  func(ctx context.Context, s *Installations, c *Client) (any, error)
}

func githubPaths() []githubPath {
	const path = "docs/guide.md"
	file := hostileFile(path)
	token := tokenAnswer("ghs_hostiletesttoken")
	return []githubPath{
		{
			name: "contents", route: "/repos/", answer: jsonAnswer(200, file),
			nested:        strings.Replace(file, `"_links":`, `"_links":`+hostile.Nested("{}", 40)+`,"x":`, 1),
			nestedExtreme: strings.Replace(file, `"_links":`, `"_links":`+hostile.Nested("{}", 100000)+`,"x":`, 1),
			hugeNumber:    strings.Replace(file, `"size":`, `"size":1`+strings.Repeat("0", 400)+`,"y":`, 1),
			nulEscaped:    strings.Replace(file, `"path":"`, `"path":"\u0000`, 1),
			nulRaw:        strings.Replace(file, `"path":"`, "\"path\":\"\x00", 1),
			call: func(ctx context.Context, _ *Installations, c *Client) (any, error) {
				return c.GetFile(ctx, FileRequest{InstallationID: 77, Owner: "octo", Repo: "docs", Path: path, Commit: strings.Repeat("a", 40)})
			},
		},
		{
			name: "token mint", route: "/app/", answer: jsonAnswer(201, token),
			nested: strings.Replace(token, `"permissions":`, `"permissions":`+hostile.Nested("{}", 40)+`,"x":`, 1),
			// 20,000 levels: past encoding/json's own limit of 10,000, within
			// the token answer's 64 KiB bound.
			nestedExtreme: strings.Replace(token, `"permissions":`, `"permissions":`+hostile.Nested("1", 20000)+`,"x":`, 1),
			hugeNumber:    strings.Replace(token, `"expires_at":`, `"expires_at":1e400,"y":`, 1),
			nulEscaped:    strings.Replace(token, `"token":"`, `"token":"\u0000`, 1),
			nulRaw:        strings.Replace(token, `"token":"`, "\"token\":\"\x00", 1),
			call: func(ctx context.Context, s *Installations, _ *Client) (any, error) {
				return s.Token(ctx, 77, "docs")
			},
		},
	}
}

// hostileClient is the GitHub client and its token source over srv.
func hostileClient(t *testing.T, srv *hostile.Server, app *App) (*Installations, *Client) {
	t.Helper()
	origin, err := upstream.ParseOrigin(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	up := upstream.New(upstream.Config{Name: "github", Origin: origin, IOTimeout: hostileTimeout})
	t.Cleanup(up.CloseIdleConnections)
	tokens := NewInstallations(up, app)
	return tokens, NewClient(up, tokens)
}

// TestHostileUpstream points the Contents read and the token mint at an
// upstream that misbehaves at the byte level. Each misbehaviour ends in a
// clean error with its stable code (or a correct result holding none of
// the hostile bytes), one request to the hostile route, and no goroutine
// left behind: not even the shared mint, which stops when its last caller
// gives up.
func TestHostileUpstream(t *testing.T) {
	app, err := NewApp(testAppID, appKey(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range githubPaths() {
		t.Run(p.name, func(t *testing.T) {
			with := func(body string) hostile.Answer { a := p.answer; a.Body = []byte(body); return a }
			half := len(p.answer.Body) / 2
			cases := []struct {
				name           string
				b              hostile.Behaviour
				want           toolerr.Code
				callerDeadline time.Duration
			}{
				{"genuine answer", hostile.Respond(p.answer), "", 0},
				{"stall mid-body", hostile.StallMidBody(p.answer, half), toolerr.ProviderUnavailable, 0},
				{"reset after a valid prefix", hostile.ResetAfterPrefix(p.answer, half), toolerr.ProviderUnavailable, 0},
				{"closed after a valid prefix", hostile.TruncateAfterPrefix(p.answer, half), toolerr.ProviderUnavailable, 0},
				{"more bytes than Content-Length", hostile.ExtraBytes(p.answer, []byte("HTTP/1.1 200 OK\r\n\r\nSURPLUS")), "", 0},
				{"endless headers", hostile.EndlessHeaders(), toolerr.ProviderMalformed, 0},
				{"1,000 Via headers", hostile.ManyVia(p.answer, 1000, 0), "", 0},
				{"1,000 Via headers over 64 KiB", hostile.ManyVia(p.answer, 1000, 80), toolerr.ProviderMalformed, 0},
				{"two identical Content-Length lines", hostile.Respond(hostile.TwoLengths(p.answer)), toolerr.ProviderMalformed, 0},
				{"JSON nesting over 32 levels", hostile.Respond(with(p.nested)), toolerr.ProviderMalformed, 0},
				{"JSON nesting past encoding/json's limit", hostile.Respond(with(p.nestedExtreme)), toolerr.ProviderMalformed, 0},
				{"huge number", hostile.Respond(with(p.hugeNumber)), toolerr.ProviderMalformed, 0},
				{"escaped NUL in a string", hostile.Respond(with(p.nulEscaped)), toolerr.ProviderMalformed, 0},
				{"raw NUL in a string", hostile.Respond(with(p.nulRaw)), toolerr.ProviderMalformed, 0},
				{"slow drip under the I/O timeout", hostile.SlowDrip(p.answer, half/5+1, hostileTimeout/5), "", 0},
				{"endless drip, caller deadline", hostile.EndlessDrip(p.answer, 1<<20, hostileTimeout/5), toolerr.ProviderUnavailable, 3 * hostileTimeout},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					before := noLeak(t)
					genuine := hostile.Respond(jsonAnswer(201, tokenAnswer("ghs_hostiletesttoken")))
					srv := hostile.Start(t, hostile.ByPath(p.route, c.b, genuine))
					tokens, client := hostileClient(t, srv, app)
					ctx := context.Background()
					if c.callerDeadline > 0 {
						var cancel context.CancelFunc
						ctx, cancel = context.WithTimeout(ctx, c.callerDeadline)
						defer cancel()
					}
					out, err := p.call(ctx, tokens, client)
					if c.callerDeadline > 0 {
						// The upstream is still dripping: once the caller has
						// given up, nothing of the gateway may wait on it (not
						// the shared mint either).
						goleak.VerifyNone(t, append(srv.LeakOptions(), before)...)
					}
					hits := 0
					for _, path := range srv.Paths() {
						if strings.HasPrefix(path, p.route) {
							hits++
						}
					}
					if hits != 1 {
						t.Errorf("the hostile route saw %d requests, want exactly 1", hits)
					}
					var v any = out
					if err != nil {
						v = toolerr.As(err).Body()
					}
					text, _ := json.Marshal(v)
					if strings.Contains(string(text), "SURPLUS") || strings.Contains(string(text), "proxy-") ||
						(err != nil && strings.Contains(string(text), "hostiletesttoken")) {
						t.Errorf("hostile bytes or the token reached the outcome: %s", text)
					}
					if c.want == "" {
						if err != nil {
							t.Fatalf("want a result, got %v", err)
						}
						return
					}
					if got := codeOf(t, err); got != c.want {
						t.Fatalf("code %q (%v), want %s", got, err, c.want)
					}
				})
			}
		})
	}
}

// TestReusedConnectionDropped: GitHub answers a Contents read on a
// kept-alive connection, then closes that connection on the next read's
// request without answering it. The read is sent once: the second call is
// provider_unavailable and the Contents route counts exactly two requests.
// A transport that re-sent the GET on a new connection would count three
// and return that connection's answer as a success. (The token mint goes
// on a connection of its own, so the first read's connection is fresh.)
func TestReusedConnectionDropped(t *testing.T) {
	noLeak(t)
	app, err := NewApp(testAppID, appKey(t))
	if err != nil {
		t.Fatal(err)
	}
	p := githubPaths()[0]
	srv := hostile.StartDropReused(t, hostile.ByPath(p.route, hostile.Respond(p.answer),
		hostile.Respond(jsonAnswer(201, tokenAnswer("ghs_hostiletesttoken")))))
	tokens, client := hostileClient(t, srv, app)
	if _, err := p.call(context.Background(), tokens, client); err != nil {
		t.Fatalf("first read: %v", err)
	}
	out, err := p.call(context.Background(), tokens, client)
	if err == nil {
		t.Fatalf("second read: a result (%T) from a request GitHub never answered", out)
	}
	if got := codeOf(t, err); got != toolerr.ProviderUnavailable {
		t.Fatalf("second read: code %q (%v), want provider_unavailable", got, err)
	}
	hits := 0
	for _, path := range srv.Paths() {
		if strings.HasPrefix(path, p.route) {
			hits++
		}
	}
	if hits != 2 {
		t.Fatalf("the Contents route saw %d requests for two reads, want 2 (all: %q)", hits, srv.Paths())
	}
}
