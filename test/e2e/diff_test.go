package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/handlers/forgejotools"
	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
	et "github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence/evidencetest"
)

const diffTool = "get_pull_request_diff"

// diffPage is the documented result of get_pull_request_diff.
type diffPage struct {
	Requested struct {
		Owner string `json:"owner"`
		Repo  string `json:"repo"`
		Index int64  `json:"index"`
	} `json:"requested"`
	Manifest struct {
		Repository struct {
			ID    int64  `json:"id"`
			Owner string `json:"owner"`
			Name  string `json:"name"`
		} `json:"repository"`
		Generation struct {
			Base struct {
				OID string `json:"oid"`
			} `json:"base"`
			Head struct {
				OID string `json:"oid"`
				Ref string `json:"ref"`
			} `json:"head"`
		} `json:"generation"`
		Content struct {
			ByteCount int64  `json:"byte_count"`
			SHA256    string `json:"sha256"`
		} `json:"content"`
	} `json:"manifest"`
	Contract               string  `json:"contract"`
	AtomicLatestPRSnapshot *bool   `json:"atomic_latest_pr_snapshot"`
	ByteOffset             int64   `json:"byte_offset"`
	ChunkBytes             int     `json:"chunk_bytes"`
	Encoding               string  `json:"encoding"`
	Data                   string  `json:"data"`
	ChunkSHA256            string  `json:"chunk_sha256"`
	Text                   *string `json:"text"`
	WholeDiffVerified      bool    `json:"whole_diff_verified"`
	EOF                    bool    `json:"eof"`
	NextByteOffset         int64   `json:"next_byte_offset"`
	NextCursor             *string `json:"next_cursor"`

	raw []byte // the result text as received
}

// sizeRecorder is an HTTP transport that adds a bearer and records the
// size of every MCP response body, so a test can hold each JSON-RPC
// response to the 49,000-byte envelope.
type sizeRecorder struct {
	token string
	mu    sync.Mutex
	sizes []int
}

func (r *sizeRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost {
		return resp, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.sizes = append(r.sizes, len(b))
	r.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, nil
}

// last returns the size of the most recent response.
func (r *sizeRecorder) last() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sizes[len(r.sizes)-1]
}

// measuredSession connects the SDK client with a sizeRecorder.
func measuredSession(t testing.TB, endpoint, token string) (*mcp.ClientSession, *sizeRecorder) {
	t.Helper()
	rec := &sizeRecorder{token: token}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-diff", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: rec}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", endpoint, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, rec
}

// callDiff calls the tool and returns the page, or the error object.
func callDiff(t testing.TB, s *mcp.ClientSession, args map[string]any) (*diffPage, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: diffTool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", diffTool, err)
	}
	if len(res.Content) != 1 || res.StructuredContent != nil {
		t.Fatalf("%s: %d content blocks, structured %v", diffTool, len(res.Content), res.StructuredContent != nil)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError {
		var out map[string]any
		if err := json.Unmarshal([]byte(text), &out); err != nil {
			t.Fatal(err)
		}
		return nil, out
	}
	var p diffPage
	dec := json.NewDecoder(strings.NewReader(text))
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("page is not JSON: %v", err)
	}
	p.raw = []byte(text)
	return &p, nil
}

// wantDiffError checks a refusal: its code, and that nothing but the error
// object came back (no window, data, text or cursor).
func wantDiffError(t testing.TB, p *diffPage, out map[string]any, code string) {
	t.Helper()
	if p != nil {
		t.Fatalf("got a page (%d bytes at %d), want %s", p.ChunkBytes, p.ByteOffset, code)
	}
	if len(out) != 1 || out["error"] == nil {
		t.Fatalf("refusal carries more than the error: %v", out)
	}
	e := out["error"].(map[string]any)
	if e["code"] != code {
		t.Fatalf("code %v (%v), want %s", e["code"], e["message"], code)
	}
	for _, k := range []string{"data", "text", "next_cursor", "manifest", "window"} {
		if _, ok := e[k]; ok {
			t.Fatalf("error object carries %q", k)
		}
	}
}

// checkPage verifies one page on its own: its chunk against chunk_sha256,
// text against the chunk, eof and cursor against the offsets.
func checkPage(t testing.TB, p *diffPage) []byte {
	t.Helper()
	chunk, err := base64.StdEncoding.Strict().DecodeString(p.Data)
	if err != nil || len(chunk) != p.ChunkBytes {
		t.Fatalf("data: %v, %d bytes for chunk_bytes %d", err, len(chunk), p.ChunkBytes)
	}
	sum := sha256.Sum256(chunk)
	if hex.EncodeToString(sum[:]) != p.ChunkSHA256 {
		t.Fatal("chunk_sha256 does not match the chunk")
	}
	if (p.Text != nil) != utf8.Valid(chunk) || p.Text != nil && *p.Text != string(chunk) {
		t.Fatalf("text present=%v for a chunk whose UTF-8 validity is %v", p.Text != nil, utf8.Valid(chunk))
	}
	if p.Contract != "observed_input_range" || p.AtomicLatestPRSnapshot == nil || *p.AtomicLatestPRSnapshot ||
		p.Encoding != "base64" || !p.WholeDiffVerified || p.NextByteOffset != p.ByteOffset+int64(p.ChunkBytes) ||
		p.EOF != (p.NextByteOffset == p.Manifest.Content.ByteCount) || (p.NextCursor == nil) != p.EOF {
		t.Fatalf("page members: %+v", *p)
	}
	return chunk
}

// readAllPages reads a pull request's diff page by page as a client would,
// holding every response to the envelope, and returns the diff and the
// pages' manifests' content identity.
func readAllPages(t testing.TB, s *mcp.ClientSession, rec *sizeRecorder, owner, repo string, index int64) ([]byte, []*diffPage) {
	t.Helper()
	args := map[string]any{"owner": owner, "repo": repo, "index": index}
	var diff []byte
	var pages []*diffPage
	for {
		p, out := callDiff(t, s, args)
		if p == nil {
			t.Fatalf("page %d: %v", len(pages), out)
		}
		if size := rec.last(); size > forgejotools.EnvelopeLimit {
			t.Fatalf("page %d: JSON-RPC response of %d bytes", len(pages), size)
		}
		if p.ByteOffset != int64(len(diff)) {
			t.Fatalf("page %d starts at %d, want %d", len(pages), p.ByteOffset, len(diff))
		}
		diff = append(diff, checkPage(t, p)...)
		pages = append(pages, p)
		if p.EOF {
			return diff, pages
		}
		args["cursor"] = *p.NextCursor
	}
}

// addPullWithFiles makes a branch off main with files and opens a pull
// request from it.
func addPullWithFiles(t testing.TB, emu *forgejoemu.Emulator, owner, repo, branch string, files map[string][]byte) *forgejoemu.Pull {
	t.Helper()
	r, err := emu.Repo(owner, repo)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Branch(branch, r.DefaultBranch()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(branch, files, nil, "add "+branch); err != nil {
		t.Fatal(err)
	}
	p, err := emu.CreatePull(owner, repo, forgejoemu.PullOptions{Head: branch, Base: r.DefaultBranch(), Title: branch})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// gitDiff runs git diff -p --binary --histogram of the pull request's
// stored merge base and refs/pull/N/head, separately from the route.
func gitDiff(t testing.TB, emu *forgejoemu.Emulator, owner, repo string, p *forgejoemu.Pull) []byte {
	t.Helper()
	r, _ := emu.Repo(owner, repo)
	head, err := r.Git("rev-parse", p.HeadRef())
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.Git("diff", "-p", "--binary", "--histogram", p.MergeBase(), strings.TrimSpace(string(head)))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// mixedFiles are the files of the multi-page pull request: a binary file,
// a non-UTF-8 path with Latin-1 text, and UTF-8 source with characters
// JSON escapes.
func mixedFiles() map[string][]byte {
	r := rand.New(rand.NewPCG(11, 12))
	bin := make([]byte, 48<<10)
	for i := range bin {
		bin[i] = byte(r.Uint32())
	}
	var latin, src bytes.Buffer
	for i := range 300 {
		fmt.Fprintf(&latin, "ligne %d : caf\xe9, na\xefve, r\xe9sum\xe9\n", i)
	}
	for i := range 900 {
		fmt.Fprintf(&src, "\tif a[%d] < b && c > d || e&f != 0 { s = \"caf\u00e9 \u2028 \U0001d11e\" } // %d\n", i, i)
	}
	return map[string][]byte{
		"assets/blob.bin":  bin,
		"docs/caf\xe9.txt": latin.Bytes(),
		"src/main.go":      src.Bytes(),
	}
}

// TestPullDiffReconstruction reads a private pull request with binary
// files, a non-UTF-8 path and non-UTF-8 text through the real binary with
// the SDK client, page by page until eof, and checks that the pages
// concatenate, byte for byte, to git diff -p --binary --histogram run
// separately; every chunk_sha256 and the whole SHA-256 check; every
// JSON-RPC response is at most 49,000 bytes.
func TestPullDiffReconstruction(t *testing.T) {
	st := startForgejoStack(t, nil)
	d := st.demo
	p := addPullWithFiles(t, st.emu, d.Owner, d.PrivateRepo, "topic/mixed", mixedFiles())
	want := gitDiff(t, st.emu, d.Owner, d.PrivateRepo, p)

	s, rec := measuredSession(t, st.gw.URL+"/mcp/forgejo", d.ReaderToken)
	if names := toolNames(t, s); !slices.Contains(names, diffTool) {
		t.Fatalf("authenticated tools %v lack %s", names, diffTool)
	}
	st.emu.ResetRequests()
	diff, pages := readAllPages(t, s, rec, d.Owner, d.PrivateRepo, p.Index())
	if !bytes.Equal(diff, want) {
		t.Fatalf("reassembled %d bytes differ from git's %d", len(diff), len(want))
	}
	sum := sha256.Sum256(diff)
	last := pages[len(pages)-1]
	if int64(len(diff)) != last.Manifest.Content.ByteCount || hex.EncodeToString(sum[:]) != last.Manifest.Content.SHA256 {
		t.Fatal("the reassembled diff does not match manifest.content")
	}
	textPages := 0
	for _, pg := range pages {
		if pg.Manifest.Content != last.Manifest.Content || pg.Manifest.Generation != last.Manifest.Generation {
			t.Fatal("the pages' manifests name different diffs")
		}
		if pg.Text != nil {
			textPages++
		}
	}
	if len(pages) < 4 || textPages == 0 || textPages == len(pages) {
		t.Fatalf("%d pages, %d with text: the test diff no longer exercises both kinds", len(pages), textPages)
	}
	// Exactly one evidence GET per page, each with the caller's bearer.
	reqs := st.emu.Requests()
	if len(reqs) != len(pages) {
		t.Fatalf("%d upstream requests for %d pages", len(reqs), len(pages))
	}
	for _, r := range reqs {
		if r.Path != fmt.Sprintf("/api/v1/repos/%s/%s/pulls/%d.diff", d.Owner, d.PrivateRepo, p.Index()) ||
			r.RawQuery != "binary=true&evidence=v1" || r.Header.Get("Accept") != "application/json" ||
			r.Header.Get("Authorization") != "Bearer "+d.ReaderToken {
			t.Fatalf("upstream request %s?%s, Accept %q", r.Path, r.RawQuery, r.Header.Get("Accept"))
		}
	}
	t.Logf("%d-byte diff in %d pages (%d with text); largest response %d bytes", len(diff), len(pages), textPages, slices.Max(rec.sizes))
}

// TestPullDiffRequestIDs: the envelope is fitted to the request's own id,
// whatever its form, for raw JSON-RPC calls on every protocol revision;
// an id that leaves no room is envelope_too_small.
func TestPullDiffRequestIDs(t *testing.T) {
	st := startForgejoStack(t, nil)
	d := st.demo
	p := addPullWithFiles(t, st.emu, d.Owner, d.PublicRepo, "topic/ids", mixedFiles())
	r := rand.New(rand.NewPCG(13, 14))
	long := func(n int) string {
		alphabet := []string{"a", "\"", "\\", "<", "&", "é", "\u2028", "\\u00e9", "\n"}
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		s, _ := json.Marshal(b.String())
		return string(s)
	}
	// (1.0 and 1e3 are refused before the SDK: see
	// TestHostileLoadSmallPoints.)
	ids := []string{`1`, `123456789012345`, `9007199254740991`, `-7`, `"x"`, `"` + strings.Repeat(`\u00e9<&\"`, 500) + `"`, long(4000), long(12000)}
	args := map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "index": p.Index()}
	for _, version := range []string{"2025-06-18", "2025-11-25", "2026-07-28"} {
		for _, id := range ids {
			for page := 0; page < 3; page++ {
				size, res := rawDiffCall(t, st.gw.URL, d.ReaderToken, id, version, args)
				if size > forgejotools.EnvelopeLimit {
					t.Fatalf("%s, id %.40s: response of %d bytes", version, id, size)
				}
				if res.IsError {
					t.Fatalf("%s, id %.40s: %s", version, id, res.Content[0].(*mcp.TextContent).Text)
				}
				var pg diffPage
				json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &pg)
				checkPage(t, &pg)
				if pg.EOF {
					break
				}
				args["cursor"] = *pg.NextCursor
			}
			delete(args, "cursor")
		}
	}
	size, res := rawDiffCall(t, st.gw.URL, d.ReaderToken, `"`+strings.Repeat("x", 48500)+`"`, "2025-06-18", args)
	var out map[string]any
	json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &out)
	if !res.IsError || errorCode(t, out) != "envelope_too_small" || size > forgejotools.EnvelopeLimit {
		t.Fatalf("a 48.5 KB id: %d bytes, %v", size, out)
	}
}

// rawDiffCall posts one tools/call with a raw id and returns the response
// size and its result.
func rawDiffCall(t *testing.T, base, token, id, version string, args map[string]any) (int, *mcp.CallToolResult) {
	t.Helper()
	meta := ""
	if version >= "2026-07-28" {
		meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + version + `","io.modelcontextprotocol/clientCapabilities":{}},`
	}
	a, _ := json.Marshal(args)
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + meta + `"name":"` + diffTool + `","arguments":` + string(a) + `}}`
	resp, out := postRPC(t, base+"/mcp/forgejo", body, map[string]string{
		"Authorization": "Bearer " + token, "MCP-Protocol-Version": version, "Mcp-Method": "tools/call", "Mcp-Name": diffTool,
	})
	if resp.StatusCode != 200 {
		t.Fatalf("%s: HTTP %d %.300s", version, resp.StatusCode, out)
	}
	var msg struct {
		Result mcp.CallToolResult `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &msg); err != nil || len(msg.Result.Content) != 1 {
		t.Fatalf("%s: %v %.300s", version, err, out)
	}
	return len(out), &msg.Result
}

// TestPullDiffFaults: every fault of the Core side yields its stable code
// and nothing else: no window, data, text or cursor.
func TestPullDiffFaults(t *testing.T) {
	st := startForgejoStack(t, map[string]string{"AGENT_GATEWAY_FORGEJO_IO_TIMEOUT": "1s"})
	d := st.demo
	// A synthetic diff of a length with base64 padding, so that the pad
	// faults apply, and long enough for a late fault after a valid prefix.
	diff := bytes.Repeat([]byte("+line of the faulted diff\n"), 2000)[:50000]
	index := d.OpenPull
	if err := st.emu.SetSyntheticDiff(d.Owner, d.PublicRepo, index, func() io.Reader { return bytes.NewReader(diff) }); err != nil {
		t.Fatal(err)
	}
	n := int64(len(diff))
	s, _ := measuredSession(t, st.gw.URL+"/mcp/forgejo", d.ReaderToken)
	args := map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "index": index}
	if p, out := callDiff(t, s, args); p == nil {
		t.Fatalf("unfaulted: %v", out)
	}
	route := fmt.Sprintf("/api/v1/repos/%s/%s/pulls/%d.diff", d.Owner, d.PublicRepo, index)
	opts := func(o ...et.Option) forgejoemu.EvidenceFault { return forgejoemu.EvidenceFault{Options: o} }
	mutate := func(f func(*et.Entity)) forgejoemu.EvidenceFault { return forgejoemu.EvidenceFault{Mutate: f} }
	length := func(f func(n int64) []string) forgejoemu.EvidenceFault {
		return forgejoemu.EvidenceFault{ContentLength: f}
	}
	header := func(k string, v ...string) forgejoemu.EvidenceFault {
		return forgejoemu.EvidenceFault{Header: http.Header{k: v}}
	}
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	cases := []struct {
		name     string
		evidence forgejoemu.EvidenceFault
		fault    *forgejoemu.Fault
		code     string
	}{
		{name: "late corruption", evidence: opts(et.CorruptByteAt(n - 1)), code: "evidence_malformed"},
		{name: "bad character late", evidence: opts(et.InvalidCharAt(n - 2)), code: "evidence_malformed"},
		{name: "non-canonical pad bits", evidence: opts(et.NonZeroPadBits()), code: "evidence_malformed"},
		{name: "bad padding", evidence: opts(et.BadPadding()), code: "evidence_malformed"},
		{name: "duplicate top-level member", evidence: opts(et.Duplicate("content")), code: "evidence_malformed"},
		{name: "duplicate nested member", evidence: opts(et.Duplicate("generation.head.oid")), code: "evidence_malformed"},
		{name: "duplicate data", evidence: opts(et.Duplicate("data")), code: "evidence_malformed"},
		{name: "unknown member", evidence: opts(et.Extra("")), code: "evidence_malformed"},
		{name: "truncated JSON", evidence: opts(et.TruncateBy(1)), code: "evidence_malformed"},
		{name: "truncated in data", evidence: opts(et.TruncateTo(30000)), code: "evidence_malformed"},
		{name: "trailing bytes", evidence: opts(et.Trailing("x")), code: "evidence_malformed"},
		{name: "wrong whole hash", evidence: opts(et.WrongSHA256()), code: "evidence_malformed"},
		{name: "wrong byte count", evidence: opts(et.WrongByteCount()), code: "evidence_malformed"},
		{name: "escaped base64", evidence: opts(et.EscapedCharAt(n - 1)), code: "evidence_malformed"},
		{name: "line-broken base64", evidence: opts(et.LineBreaks()), code: "evidence_malformed"},
		{name: "wrong repository id", evidence: mutate(func(e *et.Entity) { e.RepositoryID++ }), code: "evidence_malformed"},
		{name: "zero pull request id", evidence: mutate(func(e *et.Entity) { e.PullRequestID = 0 }), code: "evidence_malformed"},
		{name: "wrong index", evidence: mutate(func(e *et.Entity) { e.Index++ }), code: "evidence_malformed"},
		{name: "wrong head ref", evidence: mutate(func(e *et.Entity) { e.HeadRef = "refs/heads/feature/assets" }), code: "evidence_malformed"},
		{name: "base from another repository", evidence: mutate(func(e *et.Entity) { e.BaseRepositoryID = 77 }), code: "evidence_malformed"},
		{name: "wrong object format", evidence: mutate(func(e *et.Entity) { e.ObjectFormat = "sha256" }), code: "evidence_malformed"},
		{name: "another repository's name", evidence: mutate(func(e *et.Entity) { e.Name = "other" }), code: "evidence_malformed"},
		{name: "data before content", evidence: opts(et.DataFirst()), code: ""},
		{name: "missing Content-Length", evidence: length(func(int64) []string { return nil }), code: "evidence_framing"},
		{name: "conflicting Content-Lengths", evidence: length(func(n int64) []string { return []string{itoa(n), itoa(n + 1)} }), code: "evidence_framing"},
		{name: "non-canonical Content-Length", evidence: length(func(n int64) []string { return []string{"0" + itoa(n)} }), code: "evidence_framing"},
		{name: "signed Content-Length", evidence: length(func(n int64) []string { return []string{"+" + itoa(n)} }), code: "evidence_framing"},
		{name: "Content-Length over the entity", evidence: length(func(n int64) []string { return []string{itoa(n + 1)} }), code: "evidence_framing"},
		{name: "Content-Length under the entity", evidence: length(func(n int64) []string { return []string{itoa(n - 1)} }), code: "evidence_malformed"},
		{name: "wrong Cache-Control", evidence: header("Cache-Control", "no-cache"), code: "evidence_framing"},
		{name: "no Cache-Control", evidence: header("Cache-Control"), code: "evidence_framing"},
		{name: "wrong Accept-Ranges", evidence: header("Accept-Ranges", "bytes"), code: "evidence_framing"},
		{name: "wrong Content-Type", evidence: header("Content-Type", "application/json; charset=latin1"), code: "evidence_framing"},
		{name: "non-JSON Content-Type, as a stock forge answers", evidence: header("Content-Type", "text/plain; charset=utf-8"), code: "forge_unsupported"},
		{name: "Content-Range", evidence: header("Content-Range", "bytes 0-9/20"), code: "evidence_framing"},
		{name: "Transfer-Encoding chunked", fault: &forgejoemu.Fault{Kind: forgejoemu.FaultChunked}, code: "evidence_framing"},
		{name: "Content-Encoding gzip", fault: &forgejoemu.Fault{Kind: forgejoemu.FaultGzip}, code: "evidence_framing"},
		{name: "redirect", fault: &forgejoemu.Fault{Kind: forgejoemu.FaultRedirect, Location: "https://evil.example/steal"}, code: "redirect_refused"},
		{name: "connection reset mid-body", fault: &forgejoemu.Fault{Kind: forgejoemu.FaultReset}, code: "evidence_framing"},
		{name: "stalled body", fault: &forgejoemu.Fault{Kind: forgejoemu.FaultSlowBody, Delay: 3 * time.Second, ChunkBytes: 4096}, code: "upstream_timeout"},
		{name: "409", fault: &forgejoemu.Fault{Kind: forgejoemu.FaultStatus, Status: 409}, code: "evidence_unavailable"},
		{name: "503 with a body", fault: &forgejoemu.Fault{Kind: forgejoemu.FaultStatus, Status: 503, Body: []byte("evil.example secret")}, code: "evidence_unavailable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.fault != nil {
				st.emu.SetFault(route, *c.fault)
			} else {
				st.emu.SetEvidenceFault(d.Owner, d.PublicRepo, index, c.evidence)
			}
			defer st.emu.ClearFaults()
			defer st.emu.ClearEvidenceFaults()
			p, out := callDiff(t, s, args)
			if c.code == "" {
				if p == nil {
					t.Fatalf("refused: %v", out)
				}
				checkPage(t, p)
				return
			}
			wantDiffError(t, p, out, c.code)
			if text := mustJSON(t, out); strings.Contains(text, "evil.example") || strings.Contains(text, d.ReaderToken) {
				t.Fatalf("refusal leaks upstream text: %s", text)
			}
		})
	}
}

// TestPullDiffContinuation: cursors across pages, callers, revocation and
// moved inputs; refusals that need no upstream request make none.
func TestPullDiffContinuation(t *testing.T) {
	st := startForgejoStack(t, nil)
	d := st.demo
	emu := st.emu
	p := addPullWithFiles(t, emu, d.Owner, d.PublicRepo, "topic/pages", mixedFiles())
	args := func(cursor string) map[string]any {
		a := map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "index": p.Index()}
		if cursor != "" {
			a["cursor"] = cursor
		}
		return a
	}
	tok := emu.IssueToken(d.Reader, "read:repository")
	reader, _ := measuredSession(t, st.gw.URL+"/mcp/forgejo", tok)
	first, out := callDiff(t, reader, args(""))
	if first == nil || first.EOF {
		t.Fatalf("first page: %v", out)
	}
	cursor := *first.NextCursor

	t.Run("another authorized caller continues", func(t *testing.T) {
		bot, _ := measuredSession(t, st.gw.URL+"/mcp/forgejo", d.BotToken)
		pg, out := callDiff(t, bot, args(cursor))
		if pg == nil || pg.ByteOffset != first.NextByteOffset {
			t.Fatalf("bot with the reader's cursor: %v", out)
		}
		checkPage(t, pg)
	})

	t.Run("refusals before any upstream request", func(t *testing.T) {
		flipped := []byte(cursor)
		flipped[len(flipped)/2] ^= 1
		for name, c := range map[string]struct {
			args map[string]any
			code string
		}{
			"flipped byte":        {args(string(flipped)), "cursor_invalid"},
			"over 4 KiB":          {args(cursor + strings.Repeat("A", 4097-len(cursor))), "cursor_invalid"},
			"4096 two-byte runes": {args(strings.Repeat("é", 4096)), "cursor_invalid"},
			"another pull":        {map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "index": d.OpenPull, "cursor": cursor}, "cursor_invalid"},
			"another repository":  {map[string]any{"owner": d.Owner, "repo": d.PrivateRepo, "index": p.Index(), "cursor": cursor}, "cursor_invalid"},
			"string index":        {map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "index": "1"}, "invalid_arguments"},
			"unknown member":      {map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "index": 1, "offset": 5}, "invalid_arguments"},
		} {
			emu.ResetRequests()
			pg, out := callDiff(t, reader, c.args)
			wantDiffError(t, pg, out, c.code)
			if n := len(emu.Requests()); n != 0 {
				t.Fatalf("%s: %d upstream requests", name, n)
			}
		}
	})

	t.Run("revoked access refuses the continuation", func(t *testing.T) {
		emu.RevokeToken(tok)
		pg, out := callDiff(t, reader, args(cursor))
		wantDiffError(t, pg, out, "upstream_unauthorized")
	})

	t.Run("moved inputs are cursor_stale", func(t *testing.T) {
		bot, _ := measuredSession(t, st.gw.URL+"/mcp/forgejo", d.BotToken)
		r, _ := emu.Repo(d.Owner, d.PublicRepo)
		if _, err := r.Commit("topic/pages", map[string][]byte{"later.txt": []byte("pushed later\n")}, nil, "later"); err != nil {
			t.Fatal(err)
		}
		if err := emu.UpdatePullHead(d.Owner, d.PublicRepo, p.Index()); err != nil {
			t.Fatal(err)
		}
		pg, out := callDiff(t, bot, args(cursor))
		wantDiffError(t, pg, out, "cursor_stale")
		// A restart without the cursor reads the new diff.
		pg, out = callDiff(t, bot, args(""))
		if pg == nil || pg.Manifest.Generation.Head.OID == first.Manifest.Generation.Head.OID {
			t.Fatalf("restart: %v", out)
		}
	})
}

// TestPullDiffAccess: native permissions decide, the tool never falls back.
func TestPullDiffAccess(t *testing.T) {
	st := startForgejoStack(t, nil)
	d := st.demo
	emu := st.emu
	p := addPullWithFiles(t, emu, d.Owner, d.PrivateRepo, "topic/small", map[string][]byte{"x.txt": []byte("x\n")})
	args := map[string]any{"owner": d.Owner, "repo": d.PrivateRepo, "index": p.Index()}
	for _, c := range []struct {
		name, token, code string
	}{
		{"outsider", emu.IssueToken("mallory", "read:repository"), "not_found"},
		{"no read:repository", emu.IssueToken(d.Reader, "write:issue"), "forbidden"},
		{"unknown token", "not-a-token", "upstream_unauthorized"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := measuredSession(t, st.gw.URL+"/mcp/forgejo", c.token)
			emu.ResetRequests()
			pg, out := callDiff(t, s, args)
			wantDiffError(t, pg, out, c.code)
			if n := len(emu.Requests()); n != 1 {
				t.Fatalf("%d upstream requests, want exactly one (no retry, no fallback)", n)
			}
		})
	}
	t.Run("anonymous", func(t *testing.T) {
		s := st.gw.Connect(t, "/mcp/forgejo", "")
		if slices.Contains(toolNames(t, s), diffTool) {
			t.Fatal("an anonymous caller is offered get_pull_request_diff")
		}
		resp, out := postRPC(t, st.gw.URL+"/mcp/forgejo",
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+diffTool+`","arguments":{"owner":"demo","repo":"notes","index":1}}}`, nil)
		if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") || !strings.Contains(out, "unauthenticated") {
			t.Fatalf("anonymous call: %d %s", resp.StatusCode, out)
		}
	})
	t.Run("empty diff is one page", func(t *testing.T) {
		s, _ := measuredSession(t, st.gw.URL+"/mcp/forgejo", d.ReaderToken)
		pg, out := callDiff(t, s, map[string]any{"owner": d.Owner, "repo": d.PublicRepo, "index": d.EmptyPull})
		if pg == nil {
			t.Fatal(out)
		}
		checkPage(t, pg)
		if pg.ChunkBytes != 0 || !pg.EOF || pg.NextCursor != nil || pg.Manifest.Content.ByteCount != 0 || pg.Text == nil || *pg.Text != "" {
			t.Fatalf("empty diff page: %+v", *pg)
		}
	})
}

// TestPullDiffOverStdio: the tool over stdio, with the process's own
// credential and the SDK client; each page is fitted to its request's own
// id (TestPullDiffStdioRequestIDs measures the lines).
func TestPullDiffOverStdio(t *testing.T) {
	emu, d := startDemoEmulator(t)
	p := addPullWithFiles(t, emu, d.Owner, d.PrivateRepo, "topic/stdio", mixedFiles())
	s := stdioSession(t, "AGENT_GATEWAY_FORGEJO_ORIGIN="+emu.URL(), "AGENT_GATEWAY_FORGEJO_TOKEN="+d.ReaderToken)
	args := map[string]any{"owner": d.Owner, "repo": d.PrivateRepo, "index": p.Index()}
	var diff []byte
	for {
		pg, out := callDiff(t, s, args)
		if pg == nil {
			t.Fatal(out)
		}
		diff = append(diff, checkPage(t, pg)...)
		if n := len(pg.raw); n > forgejotools.EnvelopeLimit {
			t.Fatalf("a %d-byte result cannot fit the envelope", n)
		}
		if pg.EOF {
			break
		}
		args["cursor"] = *pg.NextCursor
	}
	if !bytes.Equal(diff, gitDiff(t, emu, d.Owner, d.PrivateRepo, p)) {
		t.Fatal("the pages read over stdio differ from git's diff")
	}
}
