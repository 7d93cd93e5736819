// Package diffreadtest serves get_pull_request_diff pages from an MCP
// server built with the official Go SDK, honest by default and forged on
// request, so that tests of a diff reader (the diffread package, the
// `agent-gateway diff` command) can show what it accepts and what it
// refuses without a gateway: tampered chunks, gaps, wrong hashes, a moved
// pull request. It also serves diffs far larger than a test can make the
// Core emulator diff, from a generator, for memory benchmarks.
package diffreadtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/upstream/forgejo/diffpage"
)

// Diff is a diff the server serves: its length, its SHA-256 and any range
// of its bytes, so that it never has to be in memory whole.
type Diff struct {
	Count  int64
	SHA256 string
	At     func(off int64, n int) []byte
}

// Bytes is a diff held in memory.
func Bytes(b []byte) Diff {
	sum := sha256.Sum256(b)
	return Diff{Count: int64(len(b)), SHA256: hex.EncodeToString(sum[:]),
		At: func(off int64, n int) []byte { return b[off : off+int64(n)] }}
}

// Stream is a diff of n bytes read from a fresh reader of it at every
// call, hashed once here (for generators of hundreds of MiB).
func Stream(n int64, open func() io.Reader, at func(off int64, n int) []byte) (Diff, error) {
	h := sha256.New()
	got, err := io.Copy(h, open())
	if err != nil {
		return Diff{}, err
	}
	if got != n {
		return Diff{}, fmt.Errorf("diffreadtest: the reader gave %d bytes, want %d", got, n)
	}
	return Diff{Count: n, SHA256: hex.EncodeToString(h.Sum(nil)), At: at}, nil
}

// ServedPage is one page as the server sends it (diffpage.Page), for Edit to
// forge. Its Manifest is a JSON object tree; being the shallower member of
// that name, it is the one encoding/json writes.
type ServedPage struct {
	diffpage.Page
	Manifest map[string]any `json:"manifest"`
}

// Requested is the page's requested member.
type Requested = diffpage.Requested

// ToolError is an error result: {"error":{"code":…,"message":…}}.
type ToolError struct {
	Code    string
	Message string
}

// Options says what the server serves.
type Options struct {
	Owner, Repo string
	Index       int64
	Diff        Diff
	// Window is the most diff bytes per page (32 KiB when zero).
	Window int
	// Edit, when set, sees page n (1-based, counted over every call) before
	// it is sent and may forge it; a non-nil ToolError is sent instead.
	Edit func(n int, p *ServedPage) *ToolError
	// Rewrite, when set, sees page n's JSON text as it is about to be sent
	// and returns the text to send: forgeries a ServedPage cannot hold, such as
	// a member repeated or spelled in another case in a chosen order.
	Rewrite func(n int, text string) string
	// Deliver, when set, writes every HTTP answer in the server's place:
	// method is the JSON-RPC method of the request ("initialize",
	// "tools/call", …), status and answer what the MCP server wrote, whose
	// headers are already in w (WriteHeader not called yet). It can pad,
	// trickle or stall the answer, as a hostile or slow endpoint would.
	Deliver func(w http.ResponseWriter, r *http.Request, method string, status int, answer []byte)
	// Token, when set, is the bearer every request must carry (else 401).
	Token string
}

// Server is a running MCP server of get_pull_request_diff.
type Server struct {
	// URL is its MCP endpoint.
	URL   string
	o     Options
	calls atomic.Int64
}

// Start starts a server on loopback; it stops when the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	if o.Window == 0 {
		o.Window = 32 << 10
	}
	s := &Server{o: o}
	srv := mcp.NewServer(&mcp.Implementation{Name: "diffreadtest", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "get_pull_request_diff", InputSchema: &jsonschema.Schema{Type: "object"}}, s.handle)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.Token != "" && r.Header.Get("Authorization") != "Bearer "+o.Token {
			http.Error(w, `{"error":"unauthenticated"}`, http.StatusUnauthorized)
			return
		}
		if o.Deliver != nil {
			deliver(h, o.Deliver, w, r)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	s.URL = hs.URL + "/mcp/forgejo"
	return s
}

// deliver lets the MCP server answer r in full, then hands the answer to
// the Deliver hook to write.
func deliver(h http.Handler, hook func(http.ResponseWriter, *http.Request, string, int, []byte), w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &msg) // a GET or DELETE has no body: no method
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	for k, v := range rec.Header() {
		if k != "Content-Length" {
			w.Header()[k] = v
		}
	}
	hook(w, r, msg.Method, rec.Code, rec.Body.Bytes())
}

// Calls returns how many tool calls the server answered.
func (s *Server) Calls() int { return int(s.calls.Load()) }

const cursorPrefix = "forged."

func (s *Server) handle(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	n := int(s.calls.Add(1))
	var args struct {
		Cursor *string `json:"cursor"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
		return errorResult(&ToolError{"invalid_arguments", err.Error()}), nil
	}
	var off int64
	if args.Cursor != nil {
		o, err := strconv.ParseInt(strings.TrimPrefix(*args.Cursor, cursorPrefix), 10, 64)
		if err != nil || o < 0 || o > s.o.Diff.Count {
			return errorResult(&ToolError{"cursor_invalid", "not a cursor of this server"}), nil
		}
		off = o
	}
	p := NewServedPage(s.o, off)
	if s.o.Edit != nil {
		if e := s.o.Edit(n, p); e != nil {
			return errorResult(e), nil
		}
	}
	text, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	sent := string(text)
	if s.o.Rewrite != nil {
		sent = s.o.Rewrite(n, sent)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: sent}}}, nil
}

func errorResult(e *ToolError) *mcp.CallToolResult {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": e.Code, "message": e.Message}})
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// envelopeReserve is what a page's JSON-RPC response is taken to need
// beside the page's text as a JSON string: the envelope, the id, the
// server's _meta (about 150 bytes), with room to spare.
const envelopeReserve = 512

// NewServedPage returns the honest page at off: up to Window bytes, fewer when
// the page would not fit the 49,000-byte envelope as the gateway's tool
// fits it, text when they are UTF-8, a cursor unless it reaches the end.
// Its manifest's observations carry the time, so they differ between
// pages as the gateway's may.
func NewServedPage(o Options, off int64) *ServedPage {
	if o.Window == 0 {
		o.Window = 32 << 10
	}
	n := int(min(int64(o.Window), o.Diff.Count-off))
	for {
		p := pageOf(o, off, n)
		text, _ := json.Marshal(p)
		quoted, _ := json.Marshal(string(text)) // as the SDK writes the text block
		size := len(quoted) + envelopeReserve
		if size <= diffpage.EnvelopeLimit || n <= 1 {
			return p
		}
		n = max(1, min(n-1, n*(diffpage.EnvelopeLimit-envelopeReserve)/size))
	}
}

// pageOf is the honest page of the n bytes at off.
func pageOf(o Options, off int64, n int) *ServedPage {
	chunk := o.Diff.At(off, n)
	sum := sha256.Sum256(chunk)
	p := &ServedPage{Page: diffpage.Page{
		Requested:      Requested{Owner: o.Owner, Repo: o.Repo, Index: o.Index},
		Contract:       "observed_input_range",
		ByteOffset:     off,
		ChunkBytes:     int64(n),
		Encoding:       "base64",
		Data:           base64.StdEncoding.EncodeToString(chunk),
		ChunkSHA256:    hex.EncodeToString(sum[:]),
		NextByteOffset: off + int64(n),
	}, Manifest: Manifest(o)}
	p.WholeDiffVerified = true
	if utf8.Valid(chunk) {
		s := string(chunk)
		p.Text = &s
	}
	p.EOF = p.NextByteOffset == o.Diff.Count
	if !p.EOF {
		c := cursorPrefix + strconv.FormatInt(p.NextByteOffset, 10)
		p.NextCursor = &c
	}
	return p
}

// Manifest returns the manifest of o's diff, shaped as the gateway's
// (docs/architecture.md#evidence-entity), with observations of the current
// time.
func Manifest(o Options) map[string]any {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	oid := func(c string) string { return strings.Repeat(c, 40) }
	return map[string]any{
		"schema":        "forgejo.pr-diff-evidence.v1",
		"repository":    map[string]any{"id": 42, "owner": o.Owner, "name": o.Repo},
		"pull_request":  map[string]any{"id": 1001, "index": o.Index},
		"object_format": "sha1",
		"generation": map[string]any{
			"profile":      "git-diff-binary.v1",
			"base":         map[string]any{"repository_id": 42, "oid": oid("a"), "source": "pull_request.merge_base"},
			"head":         map[string]any{"repository_id": 42, "oid": oid("b"), "ref": fmt.Sprintf("refs/pull/%d/head", o.Index)},
			"captured_at":  now,
			"generated_at": now,
		},
		"observations": map[string]any{
			"target_tip":    map[string]any{"branch_b64": "bWFpbg==", "oid": oid("c"), "status": "present", "observed_at": now},
			"original_fork": map[string]any{"repository_id": nil, "branch_b64": "ZmVhdHVyZQ==", "resolution": "not_read", "generation_input": false},
		},
		"content": map[string]any{"media_type": "text/x-diff", "encoding": "base64", "byte_count": o.Diff.Count, "sha256": o.Diff.SHA256},
	}
}
