package toolset

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/handlers/jsonwire"
	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/store/audit"
	"github.com/agent-gateway/agent-gateway/test/githubemu"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// quotedText is a result whose JSON is one string, its text, and that
// writes that JSON as a JSON string too: a document fragment's shape
// (its content) without package documents, which imports this one.
type quotedText string

func (q quotedText) AppendJSON(dst []byte) []byte {
	return jsonwire.AppendStringKeepHTML(dst, string(q))
}

func (q quotedText) AppendJSONString(dst []byte) []byte {
	return append(jsonwire.AppendStringInString(append(dst, '"'), string(q)), '"')
}

// unfusedText is quotedText without AppendJSONString: the owned path
// must build its text.
type unfusedText string

func (u unfusedText) AppendJSON(dst []byte) []byte { return quotedText(u).AppendJSON(dst) }

// TestAppendJSONStringOfTestResult holds the test's fused result to the
// composition JSONStringAppender promises, on the differential fixtures.
func TestAppendJSONStringOfTestResult(t *testing.T) {
	for name, text := range diffFixtures {
		q := quotedText(text)
		if got, want := q.AppendJSONString(nil), jsonwire.AppendString(nil, string(q.AppendJSON(nil))); !bytes.Equal(got, want) {
			t.Errorf("%s: %.200q, want %.200q", name, got, want)
		}
	}
}

// TestCallFuses: with fuse set, call hands back unrendered exactly a
// successful result that offers JSONStringAppender, and renders every
// other outcome as it does without fuse; a refusing auditor turns even a
// fused result into its refusal; and the audit record gets the text the
// SDK would have answered whenever it asks for it.
func TestCallFuses(t *testing.T) {
	results := map[string]any{"fused": quotedText("<ü>\u2028\"\n"), "unfused": unfusedText("<ü>"), "map": map[string]any{"a": "<b>"}}
	tool := Typed(Tool{Name: "forge_private", Description: "Answers one of the results."},
		func(ctx context.Context, in echoArgs) (any, error) {
			if r, ok := results[in.Text]; ok {
				return r, nil
			}
			return nil, toolerr.New(toolerr.NotFound, "no result %q", in.Text)
		})
	for _, text := range []string{"fused", "unfused", "map", "missing"} {
		for _, audited := range []bool{false, true} {
			var a Auditor
			recorded := &fakeAuditor{}
			if audited {
				a = recorded
			}
			rendered, none, _ := bearerCall(t, tool, nil, text, false)
			res, fused, rec := bearerCall(t, tool, a, text, true)
			if none != nil {
				t.Fatalf("%s: fused without fuse", text)
			}
			if wantFused := text == "fused"; (fused != nil) != wantFused || (res == nil) != wantFused {
				t.Fatalf("%s: fused %v, rendered %+v; want fused: %v", text, fused, res, wantFused)
			}
			sdkText := rendered.Content[0].(*mcp.TextContent).Text
			if fused != nil {
				if got := jsonwire.AppendString(nil, sdkText); !bytes.Equal(fused.AppendJSONString(nil), got) {
					t.Fatalf("%s: fused writes %q, the SDK's text escapes to %q", text, fused.AppendJSONString(nil), got)
				}
			} else if got := res.Content[0].(*mcp.TextContent).Text; got != sdkText || res.IsError != rendered.IsError {
				t.Fatalf("%s: %q, want %q", text, got, sdkText)
			}
			if want := map[bool]string{true: "not_found", false: "ok"}[text == "missing"]; rec.Outcome() != want {
				t.Fatalf("%s: outcome %q, want %q", text, rec.Outcome(), want)
			}
			if !audited {
				continue
			}
			if got := recorded.calls[0]; (got.Result == nil) != rendered.IsError || got.Result != nil && got.Result() != sdkText {
				t.Fatalf("%s: recorded %+v, want the SDK's text %q", text, got, sdkText)
			}
		}
	}
	refusing := &fakeAuditor{err: toolerr.New(toolerr.AuditUnavailable, "full")}
	if res, fused, rec := bearerCall(t, tool, refusing, "fused", true); fused != nil || !res.IsError || rec.Outcome() != "audit_unavailable" {
		t.Fatalf("refused record: fused %v, answer %+v, outcome %s", fused, res, rec.Outcome())
	}
}

// TestOwnedAnswerBuildsNoText: the owned path's answer to a 64 KiB
// result that writes its own text block allocates far less than the text
// (it is never built), where the same result without AppendJSONString
// allocates at least the text: the figure this path exists for. So with
// an audit record that does not ask for the text (audit.Recorder, for a
// result its evidence identifies, as a fragment's is); one that asks
// gets it built.
func TestOwnedAnswerBuildsNoText(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation figures under the race detector mean nothing")
	}
	// The collector empties the answer pools; it must not run between
	// the two readings.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, a := range []textAuditor{{}, {record: true}, {record: true, askText: true}} {
		serve, size := ownedTextAnswers(t, a)
		// The least of three rounds: a round may meet a small answer
		// buffer another test left in a pool, and grow it.
		perCall := func(kind string) uint64 {
			serve(kind) // fills the pools
			least := uint64(math.MaxUint64)
			for range 3 {
				const calls = 20
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for range calls {
					serve(kind)
				}
				runtime.ReadMemStats(&after)
				least = min(least, (after.TotalAlloc-before.TotalAlloc)/calls)
			}
			return least
		}
		fused, unfused := perCall("fused"), perCall("unfused")
		t.Logf("%+v: %d bytes a call fused, %d unfused; the text is %d", a, fused, unfused, size)
		if built := fused >= uint64(size); built != a.askText || unfused < uint64(size) {
			t.Errorf("%+v: %d bytes a call fused, %d unfused; want the %d-byte text built only when asked for", a, fused, unfused, size)
		}
		if !a.askText && fused > uint64(size)/4 {
			t.Errorf("%+v: %d bytes a call fused, want under a quarter of the %d-byte text", a, fused, size)
		}
	}
}

// BenchmarkOwnedTextAnswer is the owned path's answer to a tool whose
// result is 64 KiB of the demo's document, self-encoded: written in one
// pass from the result (fused), and through its text (unfused).
func BenchmarkOwnedTextAnswer(b *testing.B) {
	serve, size := ownedTextAnswers(b, textAuditor{})
	for _, kind := range []string{"fused", "unfused"} {
		b.Run(kind, func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				serve(kind)
			}
		})
	}
}

// ownedTextAnswers serves, through the owned path of a toolset audited by
// a, calls of a tool whose result is 64 KiB of the demo's document as a
// quotedText (kind "fused") or an unfusedText ("unfused"); size is the
// text's.
func ownedTextAnswers(tb testing.TB, a textAuditor) (serve func(kind string), size int) {
	doc := string(githubemu.MultiByteDocument(64 << 10))
	tool := Typed(Tool{Name: "fragment", Description: "A fragment.", Policy: middleware.ToolPolicy{Anonymous: true}},
		func(ctx context.Context, in fixtureArgs) (any, error) {
			if in.Case == "unfused" {
				return unfusedText(doc), nil
			}
			return quotedText(doc), nil
		})
	c := New("test", "v0", "", tool)
	if a.record {
		c.SetAuditor(a)
	}
	h := c.HTTPHandler(nil, HTTPOptions{})
	return func(kind string) {
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(rpcCall("1", "fragment", `{"case":"`+kind+`"}`)))
		for k, v := range diffHeaders {
			req.Header.Set(k, v)
		}
		w := &discardWriter{header: http.Header{}}
		h.ServeHTTP(w, req)
		if w.n < len(doc) {
			tb.Fatalf("%s: an answer of %d bytes", kind, w.n)
		}
	}, len(doc)
}

// textAuditor records nothing; with askText it asks for each answer's
// text, as audit.Recorder does for a result no evidence identifies.
type textAuditor struct{ record, askText bool }

func (a textAuditor) Record(ctx context.Context, c audit.Call) error {
	if a.askText && c.Result != nil {
		_ = c.Result()
	}
	return nil
}

// discardWriter counts an answer's bytes and keeps none of them.
type discardWriter struct {
	header http.Header
	n      int
}

func (d *discardWriter) Header() http.Header         { return d.header }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Write(b []byte) (int, error) { d.n += len(b); return len(b), nil }
