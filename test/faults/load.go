package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// kind is one sort of honest call.
type kind string

// The calls the run's clients make: an anonymous Forgejo read (Redis
// budget, Forgejo), a document-catalog read with a gateway bearer (token
// store, Redis budget) and an OAuth client registration (a stored row the
// caller is told about: the run checks afterwards that every
// acknowledged one is there).
const (
	anonRead kind = "anonymous read"
	docsRead kind = "documents read"
	register kind = "registration"
)

// record is one call's outcome.
type record struct {
	target     string // "pair" or "sqlite"
	kind       kind
	start, end time.Time
	ok         bool
	// accepted: the call reached a gateway that took its connection (a
	// refused dial, which a balancer moves to another replica, is not).
	accepted bool
	// outcome names what a failed call got: "503 unavailable", a tool
	// error's code, "connection reset", …
	outcome string
	// wrong names a fault answered as the caller's doing: 429,
	// invalid_token, a budget "spent".
	wrong    string
	clientID string // an acknowledged registration's client
}

// recorder keeps every call's record.
type recorder struct {
	mu      sync.Mutex
	records []record
}

func (r *recorder) add(rec record) {
	r.mu.Lock()
	r.records = append(r.records, rec)
	r.mu.Unlock()
}

func (r *recorder) all() []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]record(nil), r.records...)
}

// balancer sends each call to the next replica in rotation — those whose
// /readyz answered 200 at its last poll, or every replica when none did
// (Envoy's panic routing) — and moves a call whose connection was refused
// to the next replica, as load balancers do with a connection that was
// never accepted.
type balancer struct {
	target   string
	replicas []*replica
	next     atomic.Uint64
}

// pollReadiness polls each replica's /readyz every 100 ms until ctx ends.
func (b *balancer) pollReadiness(ctx context.Context) {
	hc := &http.Client{Timeout: time.Second}
	for _, r := range b.replicas {
		go func() {
			for ctx.Err() == nil {
				resp, err := hc.Get(r.url() + "/readyz")
				if err == nil {
					resp.Body.Close()
				}
				r.ready.Store(err == nil && resp.StatusCode == http.StatusOK)
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
	}
}

// rotation is the replicas calls go to now.
func (b *balancer) rotation() []*replica {
	var in []*replica
	for _, r := range b.replicas {
		if r.ready.Load() {
			in = append(in, r)
		}
	}
	if len(in) == 0 {
		return b.replicas
	}
	return in
}

// client is one honest caller: it makes its calls in turn, one every
// interval, through a balancer.
type client struct {
	lb       *balancer
	hc       *http.Client
	kinds    []kind
	interval time.Duration
	s        *stack
	rec      *recorder
}

func (c *client) run(ctx context.Context) {
	for i := 0; ctx.Err() == nil; i++ {
		c.rec.add(c.call(c.kinds[i%len(c.kinds)]))
		select {
		case <-ctx.Done():
		case <-time.After(c.interval):
		}
	}
}

// call makes one call of kind k and records it.
func (c *client) call(k kind) record {
	rec := record{target: c.lb.target, kind: k, start: time.Now()}
	rot := c.lb.rotation()
	first := int(c.lb.next.Add(1))
	var resp *http.Response
	var err error
	for i := range rot {
		var req *http.Request
		req, err = c.request(rot[(first+i)%len(rot)].url(), k)
		if err != nil {
			break
		}
		resp, err = c.hc.Do(req)
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
			break
		}
	}
	if err != nil {
		rec.end = time.Now()
		rec.accepted = !errors.Is(err, syscall.ECONNREFUSED)
		rec.outcome = transportOutcome(err)
		return rec
	}
	rec.accepted = true
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	rec.end = time.Now()
	if err != nil {
		rec.outcome = "answer cut: " + transportOutcome(err)
		return rec
	}
	rec.ok, rec.outcome, rec.clientID = judge(k, resp, body)
	rec.wrong = wrongBlame(resp, body)
	return rec
}

// request builds the HTTP request of one call of kind k to base.
func (c *client) request(base string, k kind) (*http.Request, error) {
	var path, body, bearer string
	switch k {
	case anonRead:
		path = "/mcp/forgejo"
		body = fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_repository","arguments":{"owner":%q,"repo":%q}}}`, c.s.demo.Owner, c.s.demo.PublicRepo)
	case docsRead:
		path, bearer = "/mcp/documents", c.s.docsToken
		body = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"runtime_bootstrap_get","arguments":{}}}`
	case register:
		path = "/oauth/register"
		body = `{"client_name":"faults","redirect_uris":["http://127.0.0.1:9/cb"],"token_endpoint_auth_method":"none"}`
	}
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if k != register {
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	return req, nil
}

// judge decides whether an answer is a success and names it otherwise.
func judge(k kind, resp *http.Response, body []byte) (ok bool, outcome, clientID string) {
	var msg struct {
		ClientID string `json:"client_id"`
		OAuthErr string `json:"error_description"`
		Error    json.RawMessage
		Result   *struct {
			IsError bool `json:"isError"`
			Content []struct{ Text string }
		}
	}
	_ = json.Unmarshal(body, &msg)
	status := strconv.Itoa(resp.StatusCode)
	if k == register {
		if resp.StatusCode == http.StatusCreated && msg.ClientID != "" {
			return true, "", msg.ClientID
		}
		var code string
		_ = json.Unmarshal(msg.Error, &code)
		return false, strings.TrimSpace(status + " " + code), ""
	}
	if resp.StatusCode != http.StatusOK {
		var rpc struct{ Data struct{ Code string } }
		_ = json.Unmarshal(msg.Error, &rpc)
		return false, strings.TrimSpace(status + " " + rpc.Data.Code), ""
	}
	if msg.Result == nil {
		return false, "200 without a result", ""
	}
	if !msg.Result.IsError {
		return true, "", ""
	}
	var tool struct{ Error struct{ Code string } }
	if len(msg.Result.Content) > 0 {
		_ = json.Unmarshal([]byte(msg.Result.Content[0].Text), &tool)
	}
	return false, "tool " + tool.Error.Code, ""
}

// wrongBlame names an answer that blames the caller — spent budgets,
// refused bearers, too many requests — which no call of this run earns
// (budgets are far above what it spends), so only a fault can cause it.
func wrongBlame(resp *http.Response, body []byte) string {
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		return "429"
	case strings.Contains(resp.Header.Get("WWW-Authenticate"), "invalid_token"):
		return "invalid_token"
	case bytes.Contains(body, []byte("spent")), bytes.Contains(body, []byte("too many")):
		return "budget spent"
	}
	return ""
}

// transportOutcome names a call that got no answer.
func transportOutcome(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed"
	case errors.Is(err, context.DeadlineExceeded), strings.Contains(err.Error(), "Timeout"):
		return "client timeout"
	}
	return "transport error"
}
