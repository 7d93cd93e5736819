package forgejo

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agent-gateway/agent-gateway/test/hostile"
	"github.com/agent-gateway/agent-gateway/upstream"
	et "github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence/evidencetest"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// hostileTimeout is the per-request I/O timeout of the hostile-upstream
// tests: short, so stalls end quickly, and five times the slow drip's gap.
const hostileTimeout = 500 * time.Millisecond

// surplus is what a hostile upstream sends after a complete answer; it
// must never reach a result (or a log: see test/e2e TestHostileUpstreams).
const surplus = "HTTP/1.1 200 OK\r\nContent-Length: 21\r\n\r\nSURPLUS-UPSTREAM-BYTES"

// noLeak fails the test if, after every later cleanup (servers closed,
// idle connections dropped), a goroutine started during the test is
// still running.
func noLeak(t *testing.T) goleak.Option {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	return ignore
}

// hostilePath is one strict client path of the Forgejo client with its
// genuine answer, the answers that carry a hostile payload, and the call
// that exercises it.
type hostilePath struct {
	name   string
	answer hostile.Answer
	// nested, hugeNumber, nulEscaped and nulRaw are bodies carrying that
	// payload where the path reads it.
	nested, nestedExtreme, hugeNumber, nulEscaped, nulRaw []byte
	call                                                  func(ctx context.Context, c *Client) (any, error)
	// failure is the code of every transport failure the path reports
	// through one code (delivery_uncertain for a write); "" means the
	// per-fault codes of a read.
	failure toolerr.Code
	// malformed, framing, timeout and unavailable are a read's codes.
	malformed, framing, truncated toolerr.Code
	// nulOK: an escaped NUL in a string is passed on as it came.
	nulOK bool
}

func jsonAnswer(status int, body string) hostile.Answer {
	return hostile.Answer{Status: status, Header: http.Header{"Content-Type": {"application/json;charset=utf-8"}}, Body: []byte(body)}
}

func hostilePaths() []hostilePath {
	diff := []byte(strings.Repeat("diff --git a/f b/f\n+line\n", 400))
	entity := et.Sample().WithDiff(diff)
	evidenceAnswer := func(body []byte) hostile.Answer {
		return hostile.Answer{Header: http.Header{
			"Content-Type": {"application/json"}, "Cache-Control": {"private, no-store"}, "Accept-Ranges": {"none"},
		}, Body: body}
	}
	envelope := func(grant, receipt string) string { return `{"grant":` + grant + `,"submission":` + receipt + `}` }
	return []hostilePath{
		{
			name:          "anonymous read",
			answer:        jsonAnswer(200, nativeRepo1),
			nested:        []byte(strings.Replace(nativeRepo1, `"permissions":`, `"extra":`+hostile.Nested("1", 40)+`,"permissions":`, 1)),
			nestedExtreme: []byte(strings.Replace(nativeRepo1, `"permissions":`, `"extra":`+hostile.Nested("1", 100000)+`,"permissions":`, 1)),
			hugeNumber:    []byte(strings.Replace(nativeRepo1, `"stars_count":3`, `"stars_count":1`+strings.Repeat("0", 400), 1)),
			nulEscaped:    []byte(strings.Replace(nativeRepo1, `"description":"`, `"description":"\u0000`, 1)),
			nulRaw:        []byte(strings.Replace(nativeRepo1, `"description":"`, "\"description\":\"\x00", 1)),
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.GetRepository(ctx, "team", "project")
			},
			malformed: toolerr.UpstreamMalformed, framing: toolerr.UpstreamMalformed, truncated: toolerr.UpstreamUnavailable, nulOK: true,
		},
		{
			name:          "grant read",
			answer:        jsonAnswer(200, testGrant("active")),
			nested:        []byte(strings.Replace(testGrant("active"), `"state":`, `"extra":`+hostile.Nested("1", 40)+`,"state":`, 1)),
			nestedExtreme: []byte(strings.Replace(testGrant("active"), `"state":`, `"extra":`+hostile.Nested("1", 100000)+`,"state":`, 1)),
			hugeNumber:    []byte(strings.Replace(testGrant("active"), `"id":7001`, `"id":7001`+strings.Repeat("0", 400), 1)),
			nulEscaped:    []byte(strings.Replace(testGrant("active"), `"task":"`, `"task":"\u0000`, 1)),
			nulRaw:        []byte(strings.Replace(testGrant("active"), `"task":"`, "\"task\":\"\x00", 1)),
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.GetAgentWorkGrant(ctx, testCred, "demo", "gateway", 7001)
			},
			malformed: toolerr.UpstreamMalformed, framing: toolerr.UpstreamMalformed, truncated: toolerr.UpstreamUnavailable, nulOK: true,
		},
		{
			name:   "grant write",
			answer: jsonAnswer(201, envelope(testGrant("active"), testReceipt("submitted"))),
			nested: []byte(envelope(strings.Replace(testGrant("active"), `"state":`, `"extra":`+hostile.Nested("1", 40)+`,"state":`, 1),
				testReceipt("submitted"))),
			nestedExtreme: []byte(envelope(strings.Replace(testGrant("active"), `"state":`, `"extra":`+hostile.Nested("1", 100000)+`,"state":`, 1),
				testReceipt("submitted"))),
			hugeNumber: []byte(envelope(testGrant("active"), strings.Replace(testReceipt("submitted"), `"grant_id":7001`, `"grant_id":1e400`, 1))),
			nulEscaped: []byte(envelope(strings.Replace(testGrant("active"), `"task":"`, `"task":"\u0000`, 1), testReceipt("submitted"))),
			nulRaw:     []byte(envelope(strings.Replace(testGrant("active"), `"task":"`, "\"task\":\"\x00", 1), testReceipt("submitted"))),
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.SubmitAgentWorkProposal(ctx, testCred, "demo", "gateway", 7001, Submission{
					Proposal:   Proposal{Schema: ProposalSchema, Version: ProposalVersion, Digest: testDigest},
					RequestKey: testKey, Title: "t", Body: "b",
				})
			},
			failure: toolerr.DeliveryUncertain, nulOK: true,
		},
		{
			name:          "diff evidence",
			answer:        evidenceAnswer(et.Bytes(entity, diff)),
			nested:        et.Bytes(entity, diff, et.Override("repository.owner", hostile.Nested(`"team"`, 40))),
			nestedExtreme: et.Bytes(entity, diff, et.Override("repository.owner", hostile.Nested(`"team"`, 100000))),
			hugeNumber:    et.Bytes(entity, diff, et.Override("repository.id", "42"+strings.Repeat("0", 400))),
			nulEscaped:    et.Bytes(entity, diff, et.Override("repository.owner", `"te\u0000am"`)),
			nulRaw:        et.Bytes(entity, diff, et.Override("repository.owner", "\"te\x00am\"")),
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.PullDiffEvidence(ctx, testCred, DiffEvidenceRequest{Owner: "team", Repo: "project", Index: 7, Window: 1024})
			},
			malformed: toolerr.EvidenceMalformed, framing: toolerr.EvidenceFraming, truncated: toolerr.EvidenceFraming,
		},
	}
}

func hostileClient(t *testing.T, srv *hostile.Server) *Client {
	t.Helper()
	u, _ := url.Parse(srv.URL())
	up := upstream.New(upstream.Config{Name: "forgejo", Origin: u, IOTimeout: hostileTimeout})
	t.Cleanup(up.CloseIdleConnections)
	return New(up)
}

// TestHostileUpstream points every Forgejo client path at an upstream
// that misbehaves at the byte level. Each misbehaviour ends in a clean
// error with its stable code (or, where the contract allows it, a correct
// result that holds none of the hostile bytes), exactly one request, and
// no goroutine left behind.
func TestHostileUpstream(t *testing.T) {
	for _, p := range hostilePaths() {
		t.Run(p.name, func(t *testing.T) {
			code := func(read toolerr.Code) toolerr.Code {
				if p.failure != "" {
					return p.failure
				}
				return read
			}
			with := func(body []byte) hostile.Answer { a := p.answer; a.Body = body; return a }
			half := len(p.answer.Body) / 2
			cases := []hostileCase{
				{"genuine answer", hostile.Respond(p.answer), "", 0},
				{"stall mid-body", hostile.StallMidBody(p.answer, half), code(toolerr.UpstreamTimeout), 0},
				{"reset after a valid prefix", hostile.ResetAfterPrefix(p.answer, half), code(toolerr.UpstreamUnavailable), 0},
				{"closed after a valid prefix", hostile.TruncateAfterPrefix(p.answer, half), code(p.truncated), 0},
				{"more bytes than Content-Length", hostile.ExtraBytes(p.answer, []byte(surplus)), "", 0},
				{"endless headers", hostile.EndlessHeaders(), code(p.framing), 0},
				{"1,000 Via headers", hostile.ManyVia(p.answer, 1000, 0), "", 0},
				{"1,000 Via headers over 64 KiB", hostile.ManyVia(p.answer, 1000, 80), code(p.framing), 0},
				{"two identical Content-Length lines", hostile.Respond(hostile.TwoLengths(p.answer)), code(p.framing), 0},
				{"JSON nesting over 32 levels", hostile.Respond(with(p.nested)), code(p.malformed), 0},
				{"JSON nesting of 100,000 levels", hostile.Respond(with(p.nestedExtreme)), code(p.malformed), 0},
				{"huge number", hostile.Respond(with(p.hugeNumber)), code(p.malformed), 0},
				{"raw NUL in a string", hostile.Respond(with(p.nulRaw)), code(p.malformed), 0},
				{"slow drip under the I/O timeout", hostile.SlowDrip(p.answer, len(p.answer.Body)/10+1, hostileTimeout/5), "", 0},
				{"endless drip, caller deadline", hostile.EndlessDrip(p.answer, 1<<20, hostileTimeout/5), code(toolerr.UpstreamTimeout), 3 * hostileTimeout},
			}
			nul := toolerr.Code("")
			if !p.nulOK {
				nul = code(p.malformed)
			}
			cases = append(cases, hostileCase{"escaped NUL in a string", hostile.Respond(with(p.nulEscaped)), nul, 0})
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					before := noLeak(t)
					srv := hostile.Start(t, c.b)
					client := hostileClient(t, srv)
					ctx := context.Background()
					if c.callerDeadline > 0 {
						var cancel context.CancelFunc
						ctx, cancel = context.WithTimeout(ctx, c.callerDeadline)
						defer cancel()
					}
					start := time.Now()
					out, err := p.call(ctx, client)
					if c.callerDeadline > 0 {
						// The upstream is still dripping: once the caller has
						// given up, nothing of the gateway may wait on it.
						goleak.VerifyNone(t, append(srv.LeakOptions(), before)...)
					}
					if d := time.Since(start); d > 20*hostileTimeout {
						t.Errorf("the call took %v", d)
					}
					if n := srv.Requests(); n != 1 {
						t.Errorf("the upstream saw %d requests, want exactly 1", n)
					}
					text := resultText(t, out, err)
					if strings.Contains(text, "SURPLUS") || strings.Contains(text, "padding") || strings.Contains(text, "proxy-") {
						t.Errorf("hostile bytes reached the result or error: %s", text)
					}
					if c.want == "" {
						if err != nil {
							t.Fatalf("want a result, got %v", err)
						}
						return
					}
					if got := codeOf(err); got != c.want {
						t.Fatalf("code %q (%v), want %s", got, err, c.want)
					}
				})
			}
		})
	}
}

// hostileCase is one misbehaviour and the outcome it must have.
type hostileCase struct {
	name string
	b    hostile.Behaviour
	want toolerr.Code // "" means a result
	// callerDeadline, when set, bounds the call from outside.
	callerDeadline time.Duration
}

// resultText renders what a caller would see: the result, or the error's
// message and details.
func resultText(t *testing.T, out any, err error) string {
	t.Helper()
	var v any = out
	if err != nil {
		v = toolerr.As(err).Body()
	}
	b, merr := json.Marshal(v)
	if merr != nil {
		t.Fatalf("the outcome cannot be encoded: %v", merr)
	}
	if bytes.Contains(b, []byte{0}) {
		t.Fatal("a raw NUL reached the encoded outcome")
	}
	return string(b)
}

// TestReusedConnectionDropped: Core answers a call on a kept-alive
// connection, then closes that connection on the next call's request
// without answering it. Every client path sends that request once: the
// second call fails with an honest unavailable (delivery_uncertain for
// the write), and the upstream counts exactly two requests. A transport
// that re-sent the request on a new connection would make three and
// return that connection's answer as the second call's success.
func TestReusedConnectionDropped(t *testing.T) {
	for _, p := range hostilePaths() {
		t.Run(p.name, func(t *testing.T) {
			noLeak(t)
			srv := hostile.StartDropReused(t, hostile.Respond(p.answer))
			client := hostileClient(t, srv)
			if _, err := p.call(context.Background(), client); err != nil {
				t.Fatalf("first call: %v", err)
			}
			out, err := p.call(context.Background(), client)
			want := p.failure
			if want == "" {
				want = toolerr.UpstreamUnavailable
			}
			if err == nil {
				t.Fatalf("second call: a result (%T) from a request the upstream never answered", out)
			}
			if got := codeOf(err); got != want {
				t.Fatalf("second call: code %q (%v), want %s", got, err, want)
			}
			if n := srv.Requests(); n != 2 {
				t.Fatalf("the upstream saw %d requests for two calls, want 2", n)
			}
		})
	}
}
