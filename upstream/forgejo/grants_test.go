package forgejo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/upstream"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

const (
	testDigest = "3a7bd3e2360a3d29eea436fcfb7e44c735d117c42d1c1835420b6b9942dd4f1b"
	testKey    = "0f8fad5b-d9cb-469f-a165-70867728950e"
)

func testGrant(state string) string {
	return fmt.Sprintf(`{"id":7001,"repository":{"id":42,"owner":"demo","name":"gateway"},"agent":{"id":3,"login":"review-bot"},`+
		`"prepared_by":{"id":1,"login":"demo"},"approved_by":null,"state":%q,"state_revision":2,`+
		`"proposal":{"schema":"agent_work_grant.v1","version":1,"digest":%q,"task":"t","summary":"s"}}`, state, testDigest)
}

func testReceipt(outcome string) string {
	return fmt.Sprintf(`{"request_key":%q,"grant_id":7001,"repository_id":42,`+
		`"proposal":{"schema":"agent_work_grant.v1","version":1,"digest":%q},"outcome":%q,"review_state":"awaiting_review",`+
		`"issue":{"id":5001,"index":4,"html_url":"http://x/demo/gateway/issues/4"},"actor":{"id":3,"login":"review-bot"},"created_at":"2026-01-01T00:00:00Z"}`,
		testKey, testDigest, outcome)
}

func testClient(t *testing.T, h http.Handler) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	origin, err := upstream.ParseOrigin(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return New(upstream.New(upstream.Config{Name: "forgejo", Origin: origin, IOTimeout: 2 * time.Second}))
}

var testCred = upstream.Credential{Token: "tok"}

func codeOf(err error) toolerr.Code {
	var te *toolerr.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return ""
}

// TestSubmitSendsOnce: whatever happens to the answer, including a
// connection lost on a reused keep-alive connection (where net/http would
// replay a rewindable request), one submission is one POST.
func TestSubmitSendsOnce(t *testing.T) {
	var posts atomic.Int32
	var mode atomic.Value
	mode.Store("ok")
	c := testClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, testGrant("active"))
			return
		}
		posts.Add(1)
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body) != 6 || r.Header.Get("Authorization") != "Bearer tok" {
			t.Errorf("submission body %v (%v), auth %q", body, err, r.Header.Get("Authorization"))
		}
		switch mode.Load() {
		case "drop":
			panic(http.ErrAbortHandler)
		case "500":
			w.WriteHeader(500)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(201)
			_, _ = io.WriteString(w, `{"grant":`+testGrant("active")+`,"submission":`+testReceipt("submitted")+`}`)
		}
	}))
	ctx := context.Background()
	sub := Submission{Proposal: Proposal{Schema: ProposalSchema, Version: 1, Digest: testDigest}, RequestKey: testKey, Title: "t", Body: "b"}
	res, err := c.SubmitAgentWorkProposal(ctx, testCred, "demo", "gateway", 7001, sub)
	if err != nil || res.NativeStatus != 201 {
		t.Fatalf("submit: %v %+v", err, res)
	}
	for _, m := range []string{"drop", "500"} {
		t.Run(m, func(t *testing.T) {
			// Warm a keep-alive connection, so the POST goes on a reused one.
			if _, err := c.GetAgentWorkGrant(ctx, testCred, "demo", "gateway", 7001); err != nil {
				t.Fatal(err)
			}
			mode.Store(m)
			posts.Store(0)
			_, err := c.SubmitAgentWorkProposal(ctx, testCred, "demo", "gateway", 7001, sub)
			if codeOf(err) != toolerr.DeliveryUncertain {
				t.Fatalf("err = %v", err)
			}
			if n := posts.Load(); n != 1 {
				t.Fatalf("%d POSTs for one submission", n)
			}
		})
	}
}

// TestGrantStatusMapping: native refusals keep their meaning, everything
// else on a write is uncertain, and on a read a stable transport code.
func TestGrantStatusMapping(t *testing.T) {
	var status atomic.Int32
	c := testClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(status.Load()))
		_, _ = io.WriteString(w, `{"message":"native secret text"}`)
	}))
	ctx := context.Background()
	p := Proposal{Schema: ProposalSchema, Version: 1, Digest: testDigest}
	for _, tc := range []struct {
		status      int
		write, read toolerr.Code
	}{
		{400, toolerr.BadRequest, toolerr.BadRequest},
		{401, toolerr.UpstreamUnauthorized, toolerr.UpstreamUnauthorized},
		{403, toolerr.Forbidden, toolerr.Forbidden},
		{404, toolerr.NotFound, toolerr.NotFound},
		{409, toolerr.Conflict, toolerr.Conflict},
		{201, toolerr.DeliveryUncertain, toolerr.UpstreamUnavailable}, // confirm succeeds with 200 only
		{422, toolerr.DeliveryUncertain, toolerr.BadRequest},
		{500, toolerr.DeliveryUncertain, toolerr.UpstreamUnavailable},
		{307, toolerr.DeliveryUncertain, toolerr.RedirectRefused},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			status.Store(int32(tc.status))
			_, err := c.ConfirmAgentWorkGrant(ctx, testCred, "demo", "gateway", 7001, p)
			if codeOf(err) != tc.write {
				t.Fatalf("confirm: %v, want %s", err, tc.write)
			}
			var te *toolerr.Error
			errors.As(err, &te)
			if te.Details["native_status"] != tc.status {
				t.Fatalf("native_status = %v", te.Details["native_status"])
			}
			if strings.Contains(fmt.Sprint(te.Body()), "native secret") {
				t.Fatal("native body leaked")
			}
			if _, err := c.GetAgentWorkGrant(ctx, testCred, "demo", "gateway", 7001); codeOf(err) != tc.read {
				t.Fatalf("get: %v, want %s", err, tc.read)
			}
		})
	}
}

// TestCheckNativeJSON: answers a caller could read differently from the
// gateway are refused.
func TestCheckNativeJSON(t *testing.T) {
	for _, tc := range []struct {
		body string
		ok   bool
	}{
		{`{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}`, true},
		{`{"t":"\ud83d\ude80 and \\ud800 literally"}`, true},
		{`{"a":1,"a":2}`, false},
		{`{"id":1,"ID":2}`, false},
		{`{"b":{"x":1,"x":1}}`, false},
		{`{"t":"\ud800"}`, false},
		{`{"t":"\udc00x"}`, false},
		{"{\"t\":\"\xff\"}", false},
		{`{"a":1} {"a":2}`, false},
		{`{"a":1`, false},
		{strings.Repeat("[", 40) + strings.Repeat("]", 40), false},
	} {
		if err := checkNativeJSON([]byte(tc.body)); (err == nil) != tc.ok {
			t.Errorf("%q: %v, want ok=%v", tc.body, err, tc.ok)
		}
	}
}

// TestCheckGrantAndSubmission: the consistency checks accept a complete,
// consistent answer and refuse each kind of inconsistency.
func TestCheckGrantAndSubmission(t *testing.T) {
	want := grantWant{id: 7001, owner: "Demo", repo: "Gateway"}
	f, reason := checkGrant(json.RawMessage(testGrant("active")), want)
	if reason != "" || f.id != 7001 || f.repositoryID != 42 || f.agentID != 3 || f.digest != testDigest {
		t.Fatalf("good grant: %q %+v", reason, f)
	}
	if r := checkSubmission(json.RawMessage(testReceipt("issue_deleted")), f, submissionWant{requestKey: testKey}); r != "" {
		t.Fatalf("good receipt: %s", r)
	}
	grantCases := map[string]string{
		"other id":         strings.Replace(testGrant("active"), `"id":7001`, `"id":7002`, 1),
		"string id":        strings.Replace(testGrant("active"), `"id":7001`, `"id":"7001"`, 1),
		"float id":         strings.Replace(testGrant("active"), `"id":7001`, `"id":7001.0`, 1),
		"other repository": strings.Replace(testGrant("active"), `"name":"gateway"`, `"name":"other"`, 1),
		"zero agent":       strings.Replace(testGrant("active"), `"id":3`, `"id":0`, 1),
		"unknown state":    testGrant("approved"),
		"version 2":        strings.Replace(testGrant("active"), `"version":1`, `"version":2`, 1),
		"no revision":      strings.Replace(testGrant("active"), `"state_revision":2,`, ``, 1),
		"approver zero":    strings.Replace(testGrant("active"), `"approved_by":null`, `"approved_by":{"id":0}`, 1),
		"not an object":    `[]`,
	}
	for name, body := range grantCases {
		if _, r := checkGrant(json.RawMessage(body), want); r == "" {
			t.Errorf("grant %s accepted", name)
		}
	}
	subCases := map[string]string{
		"other key":       strings.Replace(testReceipt("submitted"), testKey, "7c9e6679-7425-40de-944b-e07fc1f90ae7", 1),
		"other grant":     strings.Replace(testReceipt("submitted"), `"grant_id":7001`, `"grant_id":7002`, 1),
		"other repo":      strings.Replace(testReceipt("submitted"), `"repository_id":42`, `"repository_id":43`, 1),
		"unknown outcome": testReceipt("merged"),
		"accepted":        strings.Replace(testReceipt("submitted"), `awaiting_review`, `accepted`, 1),
		"issue id zero":   strings.Replace(testReceipt("submitted"), `"id":5001`, `"id":0`, 1),
		"other actor":     strings.Replace(testReceipt("submitted"), `"actor":{"id":3`, `"actor":{"id":1`, 1),
		"no index":        strings.Replace(testReceipt("submitted"), `"index":4,`, ``, 1),
		"new but deleted": testReceipt("issue_deleted"),
	}
	for name, body := range subCases {
		if r := checkSubmission(json.RawMessage(body), f, submissionWant{requestKey: testKey, digest: testDigest, created: true}); r == "" {
			t.Errorf("receipt %s accepted", name)
		}
	}
}

// TestWriteNotSentIsUnavailable: a write whose connection was refused (a
// raw TCP listener that closes its port before the dial) never left the
// gateway, so it is upstream_unavailable — not delivery_uncertain, which
// is kept for a write that may have reached Forgejo (here, a raw TCP
// server that reads the request and closes without answering).
func TestWriteNotSentIsUnavailable(t *testing.T) {
	sub := Submission{Proposal: Proposal{Schema: ProposalSchema, Version: 1, Digest: testDigest}, RequestKey: testKey, Title: "t", Body: "b"}
	client := func(addr string) *Client {
		origin, err := upstream.ParseOrigin("http://" + addr)
		if err != nil {
			t.Fatal(err)
		}
		return New(upstream.New(upstream.Config{Name: "forgejo", Origin: origin, IOTimeout: 2 * time.Second}))
	}
	// A port nothing listens on: the dial is refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()
	_, err = client(refused).SubmitAgentWorkProposal(context.Background(), testCred, "demo", "gateway", 7001, sub)
	if codeOf(err) != toolerr.UpstreamUnavailable {
		t.Fatalf("refused dial: %v, want upstream_unavailable", err)
	}

	// A server that reads the request head and hangs up: it may have
	// acted on it, so the outcome is uncertain.
	ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			_, _ = c.Read(make([]byte, 4096))
			c.Close()
		}
	}()
	_, err = client(ln.Addr().String()).SubmitAgentWorkProposal(context.Background(), testCred, "demo", "gateway", 7001, sub)
	if codeOf(err) != toolerr.DeliveryUncertain {
		t.Fatalf("request read, then the connection closed: %v, want delivery_uncertain", err)
	}
}
