// Package diffreadtest serves get_pull_request_diff pages from an MCP
// server built with the official Go SDK, honest by default and forged on
// request, so that tests of a diff reader (the diffread package, the
// `agent-gateway diff` command) can show what it accepts and what it
// refuses without a gateway: tampered chunks, gaps, wrong hashes, a moved
// pull request. It also serves diffs far larger than a test can make the
// Core emulator diff, from a generator, for memory benchmarks.
package diffreadtest

import (
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

// Page is one page as the server sends it (diffpage.Page), for Edit to
// forge. Its Manifest is a JSON object tree; being the shallower member of
// that name, it is the one encoding/json writes.
type Page struct {
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
	Edit func(n int, p *Page) *ToolError
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
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	s.URL = hs.URL + "/mcp/forgejo"
	return s
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
	p := NewPage(s.o, off)
	if s.o.Edit != nil {
		if e := s.o.Edit(n, p); e != nil {
			return errorResult(e), nil
		}
	}
	text, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}}, nil
}

func errorResult(e *ToolError) *mcp.CallToolResult {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": e.Code, "message": e.Message}})
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// NewPage returns the honest page at off: up to Window bytes, text when
// they are UTF-8, a cursor unless it reaches the end. Its manifest's
// observations carry the time, so they differ between pages as the
// gateway's may.
func NewPage(o Options, off int64) *Page {
	if o.Window == 0 {
		o.Window = 32 << 10
	}
	n := int(min(int64(o.Window), o.Diff.Count-off))
	chunk := o.Diff.At(off, n)
	sum := sha256.Sum256(chunk)
	p := &Page{Page: diffpage.Page{
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
// (DESIGN §5.2), with observations of the current time.
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
