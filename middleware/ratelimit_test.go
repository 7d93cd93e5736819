package middleware

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/httprate"
)

// budgetRig sends calls through ClientIP and the budgets.
type budgetRig struct {
	t        *testing.T
	h        http.Handler
	mu       sync.Mutex
	rejected []string
}

func newBudgetRig(t *testing.T, read, write int, counter func(string) httprate.LimitCounter) *budgetRig {
	return newCeilingRig(t, read, write, 0, counter)
}

// newCeilingRig is newBudgetRig with a per-IP ceiling (0: the read budget).
func newCeilingRig(t *testing.T, read, write, ceiling int, counter func(string) httprate.LimitCounter) *budgetRig {
	rig := &budgetRig{t: t}
	b := NewBudgets(testPolicies, BudgetOptions{
		ReadPerWindow: read, WritePerWindow: write, IPCeilingPerWindow: ceiling, Window: time.Minute, NewCounter: counter,
		Rejected: func(budget string) { rig.mu.Lock(); rig.rejected = append(rig.rejected, budget); rig.mu.Unlock() },
	})
	rig.h = ClientIP(nil, 0)(b.Handler(ok))
	return rig
}

// send makes one request from ip, as who (nil: anonymous), calling tool
// ("" for a non-call message) with JSON-RPC id.
func (rig *budgetRig) send(ip string, who *Principal, tool string, id string) *httptest.ResponseRecorder {
	r, rec := newReq(http.MethodPost, "/mcp", nil)
	r.RemoteAddr = net.JoinHostPort(ip, "1234")
	if tool != "" {
		rec.SetCall(Call{Method: "tools/call", Tool: tool, ID: json.RawMessage(id)})
	} else {
		rec.SetCall(Call{Method: "tools/list", ID: json.RawMessage(id)})
	}
	if who != nil {
		r = r.WithContext(WithPrincipal(r.Context(), who))
	}
	w := httptest.NewRecorder()
	rig.h.ServeHTTP(w, r)
	return w
}

func TestBudgetSpent(t *testing.T) {
	rig := newBudgetRig(t, 2, 1, nil)
	for i := range 2 {
		if w := rig.send("192.0.2.1", nil, "public_read", "1"); w.Code != http.StatusOK {
			t.Fatalf("request %d: status %d", i, w.Code)
		}
	}
	w := rig.send("192.0.2.1", nil, "public_read", `"call-9"`)
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("status = %d, want 429", w.Code)
	}
	if ra := w.Header().Get("Retry-After"); ra != "60" {
		t.Errorf("Retry-After = %q, want 60", ra)
	}
	id, e := rpcError(t, w.Body.String())
	if string(id) != `"call-9"` {
		t.Errorf("id = %s", id)
	}
	data := e["data"].(map[string]any)
	if data["code"] != "rate_limited" || data["budget"] != "read" {
		t.Errorf("error data = %v", data)
	}
	if len(rig.rejected) != 1 || rig.rejected[0] != "read" {
		t.Errorf("rejected = %v", rig.rejected)
	}
}

func TestBudgetsReadWriteSeparate(t *testing.T) {
	rig := newBudgetRig(t, 3, 1, nil)
	consent := &Principal{Kind: OAuthConsent, Key: "grant:1", ScopesKnown: true}
	steps := []struct {
		name string
		tool string
		want int
	}{
		{"first write", "doc_admin", http.StatusOK},
		{"second write spent", "doc_admin", http.StatusTooManyRequests},
		{"read still has budget", "doc_get", http.StatusOK},
		{"non-call message spends read", "", http.StatusOK},
		{"unknown tool spends read", "made_up", http.StatusOK},
		{"read spent", "doc_get", http.StatusTooManyRequests},
		{"write still spent", "doc_admin", http.StatusTooManyRequests},
	}
	for _, s := range steps {
		if w := rig.send("192.0.2.1", consent, s.tool, "1"); w.Code != s.want {
			t.Fatalf("%s: status %d, want %d", s.name, w.Code, s.want)
		}
	}
	if got := strings.Join(rig.rejected, ","); got != "write,read,write" {
		t.Errorf("rejected = %s", got)
	}
}

func TestBudgetKeys(t *testing.T) {
	alice := &Principal{Kind: OAuthConsent, Key: "grant:alice"}
	bob := NewPassthrough("bob-token")
	cases := []struct {
		name   string
		first  func(*budgetRig) int
		second func(*budgetRig) int
		want   int // status of the second request with a budget of 1
	}{
		{"same IP shares",
			func(r *budgetRig) int { return r.send("192.0.2.1", nil, "public_read", "1").Code },
			func(r *budgetRig) int { return r.send("192.0.2.1", nil, "public_read", "1").Code }, http.StatusTooManyRequests},
		{"other IP separate",
			func(r *budgetRig) int { return r.send("192.0.2.1", nil, "public_read", "1").Code },
			func(r *budgetRig) int { return r.send("192.0.2.2", nil, "public_read", "1").Code }, http.StatusOK},
		{"principal keyed on its key, not its IP",
			func(r *budgetRig) int { return r.send("192.0.2.1", alice, "public_read", "1").Code },
			func(r *budgetRig) int { return r.send("192.0.2.2", alice, "public_read", "1").Code }, http.StatusTooManyRequests},
		{"principal does not spend its IP's anonymous budget",
			func(r *budgetRig) int { return r.send("192.0.2.1", alice, "public_read", "1").Code },
			func(r *budgetRig) int { return r.send("192.0.2.1", nil, "public_read", "1").Code }, http.StatusOK},
		{"two principals separate",
			func(r *budgetRig) int { return r.send("192.0.2.1", alice, "public_read", "1").Code },
			func(r *budgetRig) int { return r.send("192.0.2.1", bob, "public_read", "1").Code }, http.StatusOK},
		{"passthrough on an authenticated tool keyed on its token hash",
			func(r *budgetRig) int {
				return r.send("192.0.2.1", NewPassthrough("bob-token"), "forgejo_diff", "1").Code
			},
			func(r *budgetRig) int {
				return r.send("192.0.2.9", NewPassthrough("bob-token"), "forgejo_diff", "1").Code
			}, http.StatusTooManyRequests},
		// An unverified bearer is not an identity
		// (docs/architecture.md#load-bounds).
		{"made-up bearers on an anonymous tool share the IP's budget",
			func(r *budgetRig) int { return r.send("192.0.2.1", NewPassthrough("fake-1"), "public_read", "1").Code },
			func(r *budgetRig) int { return r.send("192.0.2.1", NewPassthrough("fake-2"), "public_read", "1").Code }, http.StatusTooManyRequests},
		{"a bearer on an anonymous tool spends the anonymous IP budget",
			func(r *budgetRig) int { return r.send("192.0.2.1", nil, "public_read", "1").Code },
			func(r *budgetRig) int { return r.send("192.0.2.1", NewPassthrough("fake-1"), "public_read", "1").Code }, http.StatusTooManyRequests},
		{"made-up bearers on a non-call message share the IP's budget",
			func(r *budgetRig) int { return r.send("192.0.2.1", NewPassthrough("fake-1"), "", "1").Code },
			func(r *budgetRig) int { return r.send("192.0.2.1", NewPassthrough("fake-2"), "", "1").Code }, http.StatusTooManyRequests},
		{"made-up bearers on an authenticated tool meet the IP ceiling",
			func(r *budgetRig) int { return r.send("192.0.2.1", NewPassthrough("fake-1"), "forgejo_diff", "1").Code },
			func(r *budgetRig) int { return r.send("192.0.2.1", NewPassthrough("fake-2"), "forgejo_diff", "1").Code }, http.StatusTooManyRequests},
		{"the IP ceiling is per IP",
			func(r *budgetRig) int { return r.send("192.0.2.1", NewPassthrough("fake-1"), "forgejo_diff", "1").Code },
			func(r *budgetRig) int { return r.send("192.0.2.2", NewPassthrough("fake-2"), "forgejo_diff", "1").Code }, http.StatusOK},
		// One host rotating addresses inside its /64 is one client.
		{"IPv6 addresses in one /64 share the IP's budget",
			func(r *budgetRig) int { return r.send("2001:db8:1:2::a", nil, "public_read", "1").Code },
			func(r *budgetRig) int { return r.send("2001:db8:1:2:ffff::b", nil, "public_read", "1").Code }, http.StatusTooManyRequests},
		{"the next /64 is another client",
			func(r *budgetRig) int { return r.send("2001:db8:1:2::a", nil, "public_read", "1").Code },
			func(r *budgetRig) int { return r.send("2001:db8:1:3::a", nil, "public_read", "1").Code }, http.StatusOK},
		{"made-up bearers from rotating IPv6 addresses meet one IP ceiling",
			func(r *budgetRig) int {
				return r.send("2001:db8:1:2::1", NewPassthrough("fake-1"), "forgejo_diff", "1").Code
			},
			func(r *budgetRig) int {
				return r.send("2001:db8:1:2::2", NewPassthrough("fake-2"), "forgejo_diff", "1").Code
			}, http.StatusTooManyRequests},
		{"an IPv4-mapped address shares its IPv4 address's budget",
			func(r *budgetRig) int { return r.send("192.0.2.1", nil, "public_read", "1").Code },
			func(r *budgetRig) int { return r.send("::ffff:192.0.2.1", nil, "public_read", "1").Code }, http.StatusTooManyRequests},
		{"a verified principal meets no IP ceiling",
			func(r *budgetRig) int { return r.send("192.0.2.1", NewPassthrough("fake-1"), "forgejo_diff", "1").Code },
			func(r *budgetRig) int { return r.send("192.0.2.1", alice, "forgejo_diff", "1").Code }, http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rig := newBudgetRig(t, 1, 1, nil)
			if got := tc.first(rig); got != http.StatusOK {
				t.Fatalf("first request: %d", got)
			}
			if got := tc.second(rig); got != tc.want {
				t.Fatalf("second request: %d, want %d", got, tc.want)
			}
		})
	}
}

// failingCounter is a LimitCounter whose store is down.
type failingCounter struct{ failGet bool }

func (failingCounter) Config(int, time.Duration) {}
func (f failingCounter) Increment(string, time.Time) error {
	return errors.New("redis: connection refused")
}
func (f failingCounter) IncrementBy(string, time.Time, int) error {
	return errors.New("redis: connection refused")
}
func (f failingCounter) Get(string, time.Time, time.Time) (int, int, error) {
	if f.failGet {
		return 0, 0, errors.New("redis: connection refused")
	}
	return 0, 0, nil
}

// TestBudgetCounterFailureFailsClosed: a counter that fails (Redis down)
// refuses, as the budget store's fault: 503 unavailable naming the budget
// store with Retry-After, never "budget spent", never counted as a
// budget rejection, and the cause logged once with the request id.
func TestBudgetCounterFailureFailsClosed(t *testing.T) {
	for _, failGet := range []bool{true, false} {
		name := map[bool]string{true: "get fails", false: "increment fails"}[failGet]
		t.Run(name, func(t *testing.T) {
			var logs bytes.Buffer
			var rejected []string
			b := NewBudgets(testPolicies, BudgetOptions{ReadPerWindow: 100, WritePerWindow: 100, Window: time.Minute,
				NewCounter: func(string) httprate.LimitCounter { return failingCounter{failGet: failGet} },
				Rejected:   func(budget string) { rejected = append(rejected, budget) },
				Log:        slog.New(slog.NewJSONHandler(&logs, nil))})
			req, rec := newReq(http.MethodPost, "/mcp/forgejo", nil)
			setFrom(rec, "192.0.2.1")
			rec.requestID = "req-budget-1"
			rec.SetCall(Call{Method: "tools/call", Tool: "public_read", ID: json.RawMessage("5")})
			w := httptest.NewRecorder()
			b.Handler(mustNotRun(t)).ServeHTTP(w, req)
			if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" {
				t.Fatalf("status = %d Retry-After %q, want 503 and 1", w.Code, w.Header().Get("Retry-After"))
			}
			if strings.Contains(w.Body.String(), "redis") || strings.Contains(w.Body.String(), "spent") {
				t.Fatalf("body leaks the counter error or blames the caller: %s", w.Body.String())
			}
			id, e := rpcError(t, w.Body.String())
			data := e["data"].(map[string]any)
			if string(id) != "5" || data["code"] != "unavailable" || data["dependency"] != PartBudgetStore || !strings.Contains(e["message"].(string), "the budget store is unavailable") {
				t.Fatalf("id %s error %v", id, e)
			}
			if len(rejected) != 0 {
				t.Fatalf("a counter failure counted as a budget rejection: %v", rejected)
			}
			if n := strings.Count(logs.String(), "\n"); n != 1 || !strings.Contains(logs.String(), "req-budget-1") || !strings.Contains(logs.String(), "connection refused") {
				t.Fatalf("want the cause logged once with the request id, got %d lines: %s", n, logs.String())
			}
		})
	}
}

// TestBudgetIPCeiling: with a credential budget of 3 and an IP ceiling of
// 2, the third call from one IP is refused on the ceiling even with a
// fresh bearer, and the refusal names the ceiling; at the limit it passes.
func TestBudgetIPCeiling(t *testing.T) {
	rig := newCeilingRig(t, 3, 3, 2, nil)
	for i, want := range []int{http.StatusOK, http.StatusOK, http.StatusTooManyRequests} {
		w := rig.send("192.0.2.1", NewPassthrough(fmt.Sprintf("fake-%d", i)), "forgejo_diff", "1")
		if w.Code != want {
			t.Fatalf("call %d: status %d, want %d", i, w.Code, want)
		}
		if want == http.StatusTooManyRequests {
			_, e := rpcError(t, w.Body.String())
			if b := e["data"].(map[string]any)["budget"]; b != "ip_ceiling" {
				t.Fatalf("budget %v, want ip_ceiling", b)
			}
			if w.Header().Get("Retry-After") == "" {
				t.Fatal("no Retry-After")
			}
		}
	}
	if got := strings.Join(rig.rejected, ","); got != "ip_ceiling" {
		t.Errorf("rejected = %s", got)
	}
	// A spent credential budget refuses before the ceiling is touched.
	rig = newCeilingRig(t, 1, 1, 5, nil)
	same := NewPassthrough("one")
	rig.send("192.0.2.1", same, "forgejo_diff", "1")
	if w := rig.send("192.0.2.1", same, "forgejo_diff", "1"); w.Code != http.StatusTooManyRequests {
		t.Fatalf("status %d", w.Code)
	}
	if got := strings.Join(rig.rejected, ","); got != "read" {
		t.Errorf("rejected = %s", got)
	}
}

// TestDispatchBudget: a tool whose policy stores a row per call (Dispatch)
// spends, besides the write budget, its principal's dispatch budget over
// its own window; past it the call is refused with rate_limited, budget
// "dispatch", Retry-After and retry_after_seconds of that window. Another
// principal has its own; other tools, writes included, do not spend it; a
// call the write budget refuses does not reach it; zero is no bound.
func TestDispatchBudget(t *testing.T) {
	policies := policyMap{
		"wf_dispatch": {Scopes: []Scope{{Name: "workflow:dispatch", Allows: "dispatch"}}, Write: true, Dispatch: true},
		"doc_admin":   {Scopes: []Scope{docWrite}, Write: true},
		"doc_get":     {Scopes: []Scope{docRead}},
	}
	rig := func(write, dispatch int) *budgetRig {
		r := &budgetRig{t: t}
		b := NewBudgets(policies, BudgetOptions{
			ReadPerWindow: 100, WritePerWindow: write, Window: time.Minute,
			DispatchPerWindow: dispatch, DispatchWindow: time.Hour,
			Rejected: func(budget string) { r.mu.Lock(); r.rejected = append(r.rejected, budget); r.mu.Unlock() },
		})
		r.h = ClientIP(nil, 0)(b.Handler(ok))
		return r
	}
	alice := &Principal{Kind: OAuthConsent, Key: "grant:alice", ScopesKnown: true}
	bob := &Principal{Kind: OAuthConsent, Key: "grant:bob", ScopesKnown: true}

	r := rig(100, 2)
	for i, s := range []struct {
		who  *Principal
		tool string
		want int
	}{
		{alice, "wf_dispatch", http.StatusOK},
		{alice, "doc_admin", http.StatusOK}, // another write: no dispatch spent
		{alice, "wf_dispatch", http.StatusOK},
		{alice, "wf_dispatch", http.StatusTooManyRequests},
		{bob, "wf_dispatch", http.StatusOK}, // per principal
		{alice, "doc_admin", http.StatusOK},
		{alice, "doc_get", http.StatusOK},
	} {
		w := r.send("192.0.2.1", s.who, s.tool, "7")
		if w.Code != s.want {
			t.Fatalf("step %d (%s %s): status %d, want %d", i, s.who.Key, s.tool, w.Code, s.want)
		}
		if w.Code != http.StatusTooManyRequests {
			continue
		}
		if ra := w.Header().Get("Retry-After"); ra != "3600" {
			t.Errorf("Retry-After = %q, want 3600 (the dispatch window)", ra)
		}
		_, e := rpcError(t, w.Body.String())
		data := e["data"].(map[string]any)
		if data["code"] != "rate_limited" || data["budget"] != "dispatch" || data["retry_after_seconds"] != float64(3600) {
			t.Errorf("error data = %v", data)
		}
	}
	if got := strings.Join(r.rejected, ","); got != "dispatch" {
		t.Errorf("rejected = %s, want dispatch", got)
	}

	// The write budget refuses first, and names itself.
	r = rig(1, 5)
	r.send("192.0.2.1", alice, "wf_dispatch", "1")
	if w := r.send("192.0.2.1", alice, "wf_dispatch", "1"); w.Code != http.StatusTooManyRequests {
		t.Fatalf("status %d", w.Code)
	}
	if got := strings.Join(r.rejected, ","); got != "write" {
		t.Errorf("rejected = %s, want write", got)
	}

	// No dispatch budget configured: only the write budget applies.
	r = rig(100, 0)
	for i := range 5 {
		if w := r.send("192.0.2.1", alice, "wf_dispatch", "1"); w.Code != http.StatusOK {
			t.Fatalf("dispatch %d without a dispatch budget: %d", i, w.Code)
		}
	}
}
