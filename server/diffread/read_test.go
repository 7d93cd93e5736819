package diffread_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/server/diffread"
	"github.com/agent-gateway/agent-gateway/server/diffread/diffreadtest"
)

// read reads target from the server with its token.
func read(t *testing.T, endpoint, token string, w *bytes.Buffer) (*diffread.Result, error) {
	t.Helper()
	return diffread.Read(context.Background(), diffread.Options{Endpoint: endpoint, Token: token}, target, w)
}

// TestReadOverMCP reads through the SDK client from an SDK server: every
// page is asked for with the previous page's cursor, the bearer goes with
// every request, progress is reported per page.
func TestReadOverMCP(t *testing.T) {
	diff := testDiff()
	o := serverOptions(diff)
	o.Token = "s3cret"
	var cursors []string
	o.Edit = func(n int, p *diffreadtest.ServedPage) *diffreadtest.ToolError {
		if p.NextCursor != nil {
			cursors = append(cursors, *p.NextCursor)
		}
		return nil
	}
	s := diffreadtest.Start(t, o)
	var w bytes.Buffer
	var progress []diffread.Progress
	res, err := diffread.Read(context.Background(), diffread.Options{Endpoint: s.URL, Token: "s3cret",
		Progress: func(p diffread.Progress) { progress = append(progress, p) }}, target, &w)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(w.Bytes(), diff) || res.Pages != 3 || s.Calls() != 3 || len(cursors) != 2 {
		t.Fatalf("%d bytes in %d pages, %d calls", w.Len(), res.Pages, s.Calls())
	}
	want := []diffread.Progress{{1, 100, 300}, {2, 200, 300}, {3, 300, 300}}
	if len(progress) != 3 || progress[0] != want[0] || progress[1] != want[1] || progress[2] != want[2] {
		t.Fatalf("progress %v", progress)
	}

	_, err = read(t, s.URL, "wrong", &bytes.Buffer{})
	var ce *diffread.CallError
	if !errors.As(err, &ce) || ce.Page != 0 {
		t.Fatalf("a refused bearer: %v", err)
	}
}

// TestReadRefusals: each failure comes back as its type, naming the page.
func TestReadRefusals(t *testing.T) {
	diff := testDiff()
	for _, c := range []struct {
		name  string
		edit  func(int, *diffreadtest.ServedPage) *diffreadtest.ToolError
		check func(error) bool
	}{
		{"a tampered page", func(n int, p *diffreadtest.ServedPage) *diffreadtest.ToolError {
			if n == 2 {
				flipByte(p)
			}
			return nil
		}, func(err error) bool { return isCheck(err, diffread.CheckChunkSHA256) && pageOf(err) == 2 }},
		{"a moved pull request", func(n int, p *diffreadtest.ServedPage) *diffreadtest.ToolError {
			if n == 3 {
				return &diffreadtest.ToolError{Code: "cursor_stale", Message: "moved"}
			}
			return nil
		}, func(err error) bool {
			var se *diffread.StaleError
			return errors.As(err, &se) && se.Page == 3 && se.Offset == 200 && strings.Contains(err.Error(), "the pull request moved; start again")
		}},
		{"another tool error", func(n int, p *diffreadtest.ServedPage) *diffreadtest.ToolError {
			return &diffreadtest.ToolError{Code: "not_found", Message: "no such pull request"}
		}, func(err error) bool {
			var te *diffread.ToolError
			return errors.As(err, &te) && te.Code == "not_found" && te.Page == 1
		}},
		{"an error result without a code", func(n int, p *diffreadtest.ServedPage) *diffreadtest.ToolError {
			return &diffreadtest.ToolError{}
		}, func(err error) bool {
			var te *diffread.ToolError
			return errors.As(err, &te) && te.Code == "unknown"
		}},
		{"a page that is not JSON of a page", func(n int, p *diffreadtest.ServedPage) *diffreadtest.ToolError {
			if n == 2 {
				p.Manifest = nil
			}
			return nil
		}, func(err error) bool { return isBound(err, diffread.BoundStrict, 2) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := serverOptions(diff)
			o.Edit = c.edit
			s := diffreadtest.Start(t, o)
			var w bytes.Buffer
			res, err := read(t, s.URL, "", &w)
			if res != nil || !c.check(err) {
				t.Fatalf("got %v, %v", res, err)
			}
			t.Log(err)
		})
	}
}

// isBound reports whether err is a refusal at bound b on page.
func isBound(err error, b diffread.Bound, page int) bool {
	var be *diffread.BoundError
	return errors.As(err, &be) && be.Bound == b && be.Page == page
}

func pageOf(err error) int {
	var ve *diffread.VerificationError
	if errors.As(err, &ve) {
		return ve.Page
	}
	return -1
}

// TestReadTransport: the reader talks only to its endpoint, in clear only
// on loopback, follows no redirect and holds no response over its bound.
func TestReadTransport(t *testing.T) {
	s := diffreadtest.Start(t, serverOptions(testDiff()))
	for _, c := range []struct {
		name    string
		handler http.HandlerFunc
	}{
		{"a redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, s.URL, http.StatusTemporaryRedirect) }},
		{"not MCP", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>")) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			hs := httptest.NewServer(c.handler)
			defer hs.Close()
			_, err := read(t, hs.URL+"/mcp/forgejo", "tok", &bytes.Buffer{})
			var ce *diffread.CallError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v", err)
			}
			t.Log(err)
		})
	}
	for _, endpoint := range []string{"http://example.test/mcp/forgejo", "ftp://127.0.0.1/x", "/mcp/forgejo", "http://u:p@127.0.0.1/x", "::"} {
		t.Run("endpoint "+endpoint, func(t *testing.T) {
			if _, err := read(t, endpoint, "tok", &bytes.Buffer{}); err == nil || errors.As(err, new(*diffread.CallError)) {
				t.Fatalf("endpoint %q: %v", endpoint, err)
			}
		})
	}
}

// TestCheckEndpoint: what a command line refuses before any call.
func TestCheckEndpoint(t *testing.T) {
	for _, tc := range []struct {
		endpoint, want string // want "" for accepted
	}{
		{"http://127.0.0.1:8080/mcp/forgejo", ""},
		{"https://gw.example/prefix/mcp/forgejo", ""},
		{"http://127.0.0.1:8080/mcp/documents", "this is not a Forgejo endpoint"},
		{"https://gw.example/mcp/documents/", "this is not a Forgejo endpoint"},
		{"http://gw.example/mcp/forgejo", "plain http is accepted only for a loopback host"},
		{"/mcp/forgejo", "want an absolute http(s) URL"},
		{"https://user:pw@gw.example/mcp/forgejo", "want an absolute http(s) URL"},
	} {
		err := diffread.CheckEndpoint(tc.endpoint)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.endpoint, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.endpoint, err, tc.want)
		}
	}
}
