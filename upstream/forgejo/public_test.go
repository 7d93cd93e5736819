package forgejo

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/upstream"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

const nativeRepo1 = `{"id":42,"owner":{"login":"team","id":7,"email":"x@example"},"name":"project","full_name":"team/project",
"description":"<b>&</b>","private":false,"fork":false,"archived":false,"empty":false,"default_branch":"main",
"html_url":"https://forge.example/team/project","clone_url":"https://forge.example/team/project.git","stars_count":3,
"forks_count":1,"open_pr_counter":2,"created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-03T03:04:05Z","permissions":{"admin":true}}`

const nativePull7 = `{"id":1001,"number":7,"title":"Fix","body":"Body text","state":"open","draft":false,"user":{"login":"alice"},
"html_url":"https://forge.example/team/project/pulls/7","head":{"label":"feature","ref":"feature","sha":"aaaa","repo_id":77},
"base":{"label":"main","ref":"main","sha":"bbbb","repo_id":42},"merge_base":"cccc","merged":false,"merged_at":null,
"created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-03T03:04:05Z","closed_at":null}`

// fakeForge is an httptest Forgejo answering the four anonymous routes.
type fakeForge struct {
	srv *httptest.Server
	mu  sync.Mutex
	// reqs are the requests seen, in order.
	reqs []*http.Request
	// override, if set, answers every request instead of the routes.
	override http.HandlerFunc
}

func newFakeForge(t *testing.T) *fakeForge {
	t.Helper()
	f := &fakeForge{}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeForge) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.reqs = append(f.reqs, r.Clone(context.Background()))
	override := f.override
	f.mu.Unlock()
	if override != nil {
		override(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	switch r.URL.EscapedPath() {
	case "/api/v1/repos/search":
		w.Header().Set("X-Total-Count", "31")
		_, _ = io.WriteString(w, `{"ok":true,"data":[`+nativeRepo1+`]}`)
	case "/api/v1/repos/team/project":
		_, _ = io.WriteString(w, nativeRepo1)
	case "/api/v1/repos/team/project/pulls":
		w.Header().Set("Link", `<`+f.srv.URL+`/api/v1/repos/team/project/pulls?page=2>; rel="next"`)
		_, _ = io.WriteString(w, `[`+nativePull7+`]`)
	case "/api/v1/repos/team/project/pulls/7":
		_, _ = io.WriteString(w, nativePull7)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeForge) client(t *testing.T) *Client {
	t.Helper()
	u, _ := url.Parse(f.srv.URL)
	return New(upstream.New(upstream.Config{Name: "forgejo", Origin: u, IOTimeout: 2 * time.Second}))
}

func (f *fakeForge) seen() []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*http.Request(nil), f.reqs...)
}

// calls runs each anonymous method once.
var calls = []struct {
	name string
	call func(ctx context.Context, c *Client) (any, error)
}{
	{"SearchRepositories", func(ctx context.Context, c *Client) (any, error) { return c.SearchRepositories(ctx, "proj", 1) }},
	{"GetRepository", func(ctx context.Context, c *Client) (any, error) { return c.GetRepository(ctx, "team", "project") }},
	{"ListPullRequests", func(ctx context.Context, c *Client) (any, error) {
		return c.ListPullRequests(ctx, "team", "project", "all", 1)
	}},
	{"GetPullRequest", func(ctx context.Context, c *Client) (any, error) { return c.GetPullRequest(ctx, "team", "project", 7) }},
}

// TestAnonymousRequests checks the native route, query and headers of each
// method, and that no Authorization header is sent even when the caller's
// context carries a principal with a credential.
func TestAnonymousRequests(t *testing.T) {
	ctx := middleware.WithPrincipal(t.Context(), middleware.NewPassthrough("caller-secret-token"))
	want := map[string]struct{ path, query string }{
		"SearchRepositories": {"/api/v1/repos/search", "limit=30&page=1&q=proj"},
		"GetRepository":      {"/api/v1/repos/team/project", ""},
		"ListPullRequests":   {"/api/v1/repos/team/project/pulls", "limit=30&page=1&state=all"},
		"GetPullRequest":     {"/api/v1/repos/team/project/pulls/7", ""},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeForge(t)
			if _, err := tc.call(ctx, f.client(t)); err != nil {
				t.Fatal(err)
			}
			reqs := f.seen()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			r := reqs[0]
			if r.Method != http.MethodGet || r.URL.EscapedPath() != want[tc.name].path || r.URL.RawQuery != want[tc.name].query {
				t.Errorf("request %s %s?%s", r.Method, r.URL.EscapedPath(), r.URL.RawQuery)
			}
			if v, present := r.Header["Authorization"]; present {
				t.Errorf("Authorization sent: %q", v)
			}
			for k, vs := range r.Header {
				for _, v := range vs {
					if strings.Contains(v, "caller-secret-token") {
						t.Errorf("credential sent in %s", k)
					}
				}
			}
			if r.Header.Get("Accept") != "application/json" || r.Header.Get("Accept-Encoding") != "identity" {
				t.Errorf("headers %v", r.Header)
			}
		})
	}
}

func TestAnonymousResults(t *testing.T) {
	f := newFakeForge(t)
	c := f.client(t)
	ctx := t.Context()

	page, err := c.SearchRepositories(ctx, "proj", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Items[0].Owner != "team" || page.Items[0].ID != 42 || !page.HasMore || *page.Total != 31 {
		t.Errorf("search page %+v", page)
	}
	b, _ := json.Marshal(page.Items[0])
	if strings.Contains(string(b), "permissions") || strings.Contains(string(b), "x@example") {
		t.Errorf("trimmed repository keeps untrimmed members: %s", b)
	}

	pulls, err := c.ListPullRequests(ctx, "team", "project", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(pulls.Items) != 1 || !pulls.HasMore || pulls.Total != nil || pulls.Items[0].Body != nil {
		t.Errorf("pulls page %+v", pulls)
	}

	pr, err := c.GetPullRequest(ctx, "team", "project", 7)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Body == nil || *pr.Body != "Body text" || pr.Author != "alice" || pr.Head.RepositoryID != 77 || pr.Base.SHA != "bbbb" || pr.MergeBase != "cccc" {
		t.Errorf("pull %+v", pr)
	}
}

func TestSearchOKFalse(t *testing.T) {
	f := newFakeForge(t)
	f.override = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":false,"data":[]}`)
	}
	_, err := f.client(t).SearchRepositories(t.Context(), "x", 1)
	if te := toolerr.As(err); te.Code != toolerr.UpstreamMalformed {
		t.Fatalf("err = %v", err)
	}
}

func TestStatusMapping(t *testing.T) {
	cases := []struct {
		status int
		code   toolerr.Code
	}{
		{400, toolerr.BadRequest},
		{401, toolerr.UpstreamUnauthorized},
		{403, toolerr.Forbidden},
		{404, toolerr.NotFound},
		{409, toolerr.Conflict},
		{422, toolerr.BadRequest},
		{429, toolerr.UpstreamUnavailable},
		{500, toolerr.UpstreamUnavailable},
		{503, toolerr.UpstreamUnavailable},
		{201, toolerr.UpstreamUnavailable},
		{204, toolerr.UpstreamUnavailable},
	}
	for _, tc := range cases {
		for _, m := range calls {
			t.Run(http.StatusText(tc.status)+"/"+m.name, func(t *testing.T) {
				f := newFakeForge(t)
				f.override = func(w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(tc.status)
					_, _ = io.WriteString(w, `{"message":"NATIVE-BODY-SECRET"}`)
				}
				_, err := m.call(t.Context(), f.client(t))
				te := toolerr.As(err)
				if te.Code != tc.code {
					t.Fatalf("code = %s, want %s", te.Code, tc.code)
				}
				if te.Details["native_status"] != tc.status {
					t.Errorf("native_status = %v", te.Details["native_status"])
				}
				body, _ := json.Marshal(te.Body())
				if strings.Contains(string(body), "NATIVE-BODY-SECRET") {
					t.Errorf("native body leaked: %s", body)
				}
			})
		}
	}
}

func TestResponseRefused(t *testing.T) {
	cases := []struct {
		name        string
		contentType string
		body        string
		code        toolerr.Code
	}{
		{"text/html", "text/html", nativeRepo1, toolerr.UpstreamMalformed},
		{"no media type", "", nativeRepo1, toolerr.UpstreamMalformed},
		{"json with latin1", "application/json; charset=iso-8859-1", nativeRepo1, toolerr.UpstreamMalformed},
		{"json with extra parameter", "application/json; charset=utf-8; x=y", nativeRepo1, toolerr.UpstreamMalformed},
		{"problem+json", "application/problem+json", nativeRepo1, toolerr.UpstreamMalformed},
		{"malformed JSON", "application/json", `{"id":42,`, toolerr.UpstreamMalformed},
		{"wrong type", "application/json", `{"id":"42"}`, toolerr.UpstreamMalformed},
		{"not an object", "application/json", `[]`, toolerr.UpstreamMalformed},
		{"empty body", "application/json", ``, toolerr.UpstreamMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeForge(t)
			f.override = func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				_, _ = io.WriteString(w, tc.body)
			}
			_, err := f.client(t).GetRepository(t.Context(), "team", "project")
			if te := toolerr.As(err); te.Code != tc.code {
				t.Fatalf("err = %v, want %s", err, tc.code)
			}
		})
	}
	t.Run("body over the bound", func(t *testing.T) {
		f := newFakeForge(t)
		f.override = func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"description":"`+strings.Repeat("x", MaxJSONBody)+`"}`)
		}
		_, err := f.client(t).GetRepository(t.Context(), "team", "project")
		if te := toolerr.As(err); te.Code != toolerr.UpstreamMalformed {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("redirect", func(t *testing.T) {
		f := newFakeForge(t)
		f.override = func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://elsewhere.example/", http.StatusFound)
		}
		_, err := f.client(t).GetRepository(t.Context(), "team", "project")
		te := toolerr.As(err)
		if te.Code != toolerr.RedirectRefused || te.Details["native_status"] != 302 || strings.Contains(te.Message, "elsewhere") {
			t.Fatalf("err = %v %v", te, te.Details)
		}
	})
	t.Run("dot segment is invalid arguments, no request", func(t *testing.T) {
		f := newFakeForge(t)
		_, err := f.client(t).GetRepository(t.Context(), "..", "project")
		if te := toolerr.As(err); te.Code != toolerr.InvalidArguments {
			t.Fatalf("err = %v", err)
		}
		if n := len(f.seen()); n != 0 {
			t.Fatalf("%d requests sent", n)
		}
	})
}

func TestIsJSON(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json": true, "application/json; charset=utf-8": true, "application/json;charset=UTF-8": true,
		"Application/JSON": true, "application/json; charset=latin1": false, "application/json; q=1": false,
		"text/json": false, "": false, "application/json; charset": false, "application/jsonl": false,
	} {
		if got := IsJSON(ct); got != want {
			t.Errorf("IsJSON(%q) = %v, want %v", ct, got, want)
		}
	}
}

func TestTransportError(t *testing.T) {
	cases := []struct {
		err  error
		code toolerr.Code
	}{
		{&upstream.Error{Kind: upstream.KindTimeout}, toolerr.UpstreamTimeout},
		{&upstream.Error{Kind: upstream.KindUnavailable}, toolerr.UpstreamUnavailable},
		{&upstream.Error{Kind: upstream.KindRedirect, Status: 301}, toolerr.RedirectRefused},
		{&upstream.Error{Kind: upstream.KindFraming}, toolerr.UpstreamMalformed},
		{&upstream.Error{Kind: upstream.KindTooLarge}, toolerr.UpstreamMalformed},
		{&upstream.Error{Kind: upstream.KindRequest}, toolerr.InvalidArguments},
		{errors.New("plain"), toolerr.UpstreamUnavailable},
		{toolerr.New(toolerr.NotFound, "kept"), toolerr.NotFound},
	}
	for _, tc := range cases {
		t.Run(tc.err.Error(), func(t *testing.T) {
			te := TransportError(tc.err)
			if te.Code != tc.code {
				t.Fatalf("code = %s, want %s", te.Code, tc.code)
			}
			if !errors.Is(te, tc.err) && te != tc.err {
				t.Errorf("cause lost")
			}
		})
	}
}
