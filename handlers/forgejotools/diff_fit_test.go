package forgejotools

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/handlers/toolset"
	"github.com/agent-gateway/agent-gateway/upstream/forgejo/diffpage"
	"github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence"
	et "github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence/evidencetest"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// sdkResponseSize is the size of the JSON-RPC response computed the long
// way: the whole CallToolResult marshalled and wrapped by the SDK's own
// encoders, plus the resultType reserve. It does not use escapedLen.
func sdkResponseSize(t testing.TB, rawID json.RawMessage, text []byte) int {
	t.Helper()
	return sdkResponse(t, rawID, text, testServer, true)
}

// testServer is the implementation the test toolsets announce.
var testServer = &mcp.Implementation{Name: "test", Version: "1"}

// sdkResponse renders the response the SDK sends, in the newer form
// (serverInfo and resultType) or the older one, and returns its length.
func sdkResponse(t testing.TB, rawID json.RawMessage, text []byte, server *mcp.Implementation, newer bool) int {
	t.Helper()
	msg, err := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":` + string(rawID) + `,"method":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}}
	if newer {
		res.Meta = mcp.Meta{mcp.MetaKeyServerInfo: server}
	}
	result, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: msg.(*jsonrpc.Request).ID, Result: result})
	if err != nil {
		t.Fatal(err)
	}
	if newer {
		return len(b) + resultTypeReserve
	}
	return len(b)
}

// testIDs are request ids as clients send them: numbers in every spelling
// the SDK accepts, and strings with escapes, HTML characters, separators
// and non-ASCII, up to several KiB.
func testIDs(r *rand.Rand) []json.RawMessage {
	ids := []json.RawMessage{
		json.RawMessage(`1`), json.RawMessage(`0`), json.RawMessage(`-7`), json.RawMessage(`1.0`),
		json.RawMessage(`1e3`), json.RawMessage(`9007199254740993`), json.RawMessage(`""`),
		json.RawMessage(`"a"`), json.RawMessage(`"\u0041\"\\\/<>&\u2028é"`),
		json.RawMessage(`"` + strings.Repeat(`\u00e9<`, 700) + `"`),
	}
	for range 4 {
		b, _ := json.Marshal(randomText(r, r.IntN(3000)))
		ids = append(ids, b)
	}
	return ids
}

// randomText returns valid UTF-8 heavy in what JSON escapes.
func randomText(r *rand.Rand, n int) string {
	alphabet := []string{"a", "Z", "0", " ", "\n", "\t", "\"", "\\", "<", ">", "&", "é", "€", "𝄞", "\u2028", "\x01", "\x7f", "/"}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

func TestEscapedLenMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		var s []byte
		if i%2 == 0 {
			s = []byte(randomText(r, r.IntN(200)))
		} else {
			s = make([]byte, r.IntN(200))
			for j := range s {
				s[j] = byte(r.Uint32())
			}
		}
		want, _ := json.Marshal(string(s))
		if got := escapedLen(s); got != len(want)-2 {
			t.Fatalf("escapedLen(%q) = %d, encoding/json wrote %d", s, got, len(want)-2)
		}
	}
}

func FuzzEscapedLen(f *testing.F) {
	f.Add([]byte("a<\"\\\n\x01\u2028\xff"))
	f.Fuzz(func(t *testing.T, s []byte) {
		want, _ := json.Marshal(string(s))
		if got := escapedLen(s); got != len(want)-2 {
			t.Fatalf("escapedLen(%q) = %d, encoding/json wrote %d", s, got, len(want)-2)
		}
	})
}

// TestEnvelopeMatchesSDK serves a tool through the toolset's real SDK
// handler (stateless, JSON responses) and compares each response body with
// Envelope's size, for many ids, texts and protocol revisions: equal for
// 2026-07-28, and exactly the older form's length (no serverInfo, no
// resultType) before it.
func TestEnvelopeMatchesSDK(t *testing.T) {
	type echoArgs struct {
		S string `json:"s" arg:"required"`
	}
	cat := toolset.New(testServer.Name, testServer.Version, "", toolset.Typed(toolset.Tool{Name: "echo", Policy: anonymousPolicy},
		func(_ context.Context, in echoArgs) (any, error) { return in.S, nil }))
	srv := httptest.NewServer(cat.HTTPHandler(nil, toolset.HTTPOptions{}))
	defer srv.Close()
	r := rand.New(rand.NewPCG(3, 4))
	seen := map[string]bool{}
	for i, id := range testIDs(r) {
		for _, version := range []string{"2025-06-18", "2025-11-25", "2026-07-28"} {
			s := randomText(r, r.IntN(20000))
			if i == 0 {
				s = ""
			}
			arg, _ := json.Marshal(s)
			meta := ""
			if version >= "2026-07-28" {
				meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + version + `","io.modelcontextprotocol/clientCapabilities":{}},`
			}
			body := `{"jsonrpc":"2.0","id":` + string(id) + `,"method":"tools/call","params":{` + meta + `"name":"echo","arguments":{"s":` + string(arg) + `}}}`
			req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", version)
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", "echo")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !bytes.Contains(got, []byte(`"content":[{"type":"text"`)) {
				t.Fatalf("id %s, %s: %d %.200s", id, version, resp.StatusCode, got)
			}
			text, _ := toolset.EncodeJSON(s)
			env, err := NewEnvelope(id, testServer)
			if err != nil {
				t.Fatal(err)
			}
			want := env.Size(text)
			if long := sdkResponseSize(t, id, text); long != want {
				t.Fatalf("id %s: Envelope says %d, the SDK's encoders %d", id, want, long)
			}
			if version >= "2026-07-28" {
				if len(got) != want || !bytes.Contains(got, []byte(`"resultType":"complete"`)) {
					t.Fatalf("id %s, %s: response of %d bytes, Envelope says %d: %.300s", id, version, len(got), want, got)
				}
			} else if older := sdkResponse(t, id, text, testServer, false); len(got) != older || older >= want {
				t.Fatalf("id %s, %s: response of %d bytes, the older form has %d: %.300s", id, version, len(got), older, got)
			}
			seen[version] = true
		}
	}
	t.Logf("observed: %v", seen)
}

// verified returns what the verifier yields for the diff at the offset.
func verified(t testing.TB, diff []byte, offset int64, e et.Entity) *evidence.Verified {
	t.Helper()
	v, err := evidence.Verify(bytes.NewReader(et.Bytes(e, diff)), evidence.Request{Index: e.Index, Offset: offset, Window: evidence.MaxWindow})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func fitterFor(t testing.TB, v *evidence.Verified, id json.RawMessage) *WindowFitter {
	t.Helper()
	env, err := NewEnvelope(id, testServer)
	if err != nil {
		t.Fatal(err)
	}
	return &WindowFitter{
		Envelope: env, Limit: EnvelopeLimit,
		page: diffpage.Page{
			Requested: diffpage.Requested{Owner: "team", Repo: "project", Index: v.Identity.Index},
			Manifest:  v.Manifest, Contract: diffContract, ByteOffset: v.Offset, Encoding: diffEncoding, WholeDiffVerified: true,
		},
		window: v.Window, byteCount: v.Identity.ByteCount,
		cursor: func(next int64) string { return newDiffCursor("team", "project", v.Identity, next).Encode() },
	}
}

// diffKinds generate diffs of the kinds a page must handle.
var diffKinds = map[string]func(r *rand.Rand, n int) []byte{
	"ascii code": func(r *rand.Rand, n int) []byte {
		lines := []string{"+func (a *b) c() error {\n", "-\treturn x < y && z > 0\n", " \"quoted\" \\ path\n", "@@ -1,3 +1,4 @@\n"}
		var b bytes.Buffer
		for b.Len() < n {
			b.WriteString(lines[r.IntN(len(lines))])
		}
		return b.Bytes()[:n]
	},
	"utf-8 text": func(r *rand.Rand, n int) []byte {
		s := []byte(randomText(r, n+4))
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		return s[:n]
	},
	"binary": func(r *rand.Rand, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	},
	"latin-1 lines": func(r *rand.Rand, n int) []byte {
		var b bytes.Buffer
		for b.Len() < n {
			b.WriteString("+caf\xe9 au lait, na\xefve r\xe9sum\xe9\n")
		}
		return b.Bytes()[:n]
	},
	"text then latin-1": func(r *rand.Rand, n int) []byte {
		b := []byte(strings.Repeat("+plain text line\n", n/17+1))[:n]
		if n > 0 {
			b[r.IntN(n)] = 0xe9
		}
		return b
	},
	"cjk": func(r *rand.Rand, n int) []byte {
		var b bytes.Buffer
		for b.Len() < n {
			b.WriteString("差分の行です。\n")
		}
		s := b.Bytes()
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		return s[:n]
	},
}

// TestWindowFitterRandom fits many windows of random diffs, offsets and
// ids, and checks for each page: the real response is at most 49,000
// bytes; the chunk is the window's prefix; text is the chunk exactly when
// it is UTF-8; and the page is full: the next longer page of the same
// kind (with text, or without) would not fit, so page fill — chunk bytes
// over the largest window of its kind that fits — is at least 0.95 (it is
// 1 unless the page is the last).
func TestWindowFitterRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	ids := testIDs(r)
	e := et.Sample()
	minFill, pages, textPages, full := 1.0, 0, 0, 0
	var used float64
	for name, gen := range diffKinds {
		for i := range 12 {
			size := []int{0, 1, 100, 20000, 40000, 90000, 200000}[i%7]
			diff := gen(r, size)
			offset := int64(0)
			if len(diff) > 0 && i%2 == 1 {
				offset = int64(r.IntN(len(diff)))
			}
			id := ids[r.IntN(len(ids))]
			v := verified(t, diff, offset, e)
			f := fitterFor(t, v, id)
			text, n, err := f.Fit()
			if err != nil {
				t.Fatalf("%s %d bytes at %d, id %.40s: %v", name, len(diff), offset, id, err)
			}
			size2 := sdkResponseSize(t, id, text)
			if size2 > EnvelopeLimit || size2 != f.Envelope.Size(text) {
				t.Fatalf("%s: response %d bytes (Envelope %d)", name, size2, f.Envelope.Size(text))
			}
			var page diffpage.Page
			if err := json.Unmarshal(text, &page); err != nil {
				t.Fatal(err)
			}
			chunk, err := base64.StdEncoding.DecodeString(page.Data)
			if err != nil || page.ChunkBytes != int64(n) || !bytes.Equal(chunk, diff[offset:offset+int64(n)]) {
				t.Fatalf("%s: chunk is not the window's prefix", name)
			}
			if (page.Text != nil) != utf8.Valid(chunk) || page.Text != nil && *page.Text != string(chunk) {
				t.Fatalf("%s: text %v for a chunk valid=%v", name, page.Text != nil, utf8.Valid(chunk))
			}
			if page.EOF != (offset+int64(n) == int64(len(diff))) || (page.NextCursor == nil) != page.EOF {
				t.Fatalf("%s: eof %v, cursor %v at %d+%d of %d", name, page.EOF, page.NextCursor, offset, n, len(diff))
			}
			fill := pageFill(t, f, id, n, page.Text != nil)
			if fill < 0.95 {
				t.Fatalf("%s %d bytes at %d: page fill %.3f", name, len(diff), offset, fill)
			}
			minFill = min(minFill, fill)
			if !page.EOF {
				used += float64(size2) / EnvelopeLimit
				full++
			}
			pages++
			if page.Text != nil {
				textPages++
			}
		}
	}
	t.Logf("%d pages (%d with text): minimum page fill %.4f; %d not last, their mean response %.4f of the envelope",
		pages, textPages, minFill, full, used/float64(full))
}

// pageFill is n over the largest window of the same kind (text or data
// only) that fits, found by growing the page one byte at a time until a
// page of that kind no longer fits; sizes within a kind only grow, so the
// first one that does not fit ends the search.
func pageFill(t testing.TB, f *WindowFitter, id json.RawMessage, n int, withText bool) float64 {
	t.Helper()
	best, end := n, len(f.window)
	if withText {
		end = validUTF8Prefix(f.window) // no longer page has text
	}
	for m := n + 1; m <= end; m++ {
		if utf8.Valid(f.window[:m]) != withText {
			continue
		}
		text, err := f.render(m)
		if err != nil {
			t.Fatal(err)
		}
		if sdkResponseSize(t, id, text) > EnvelopeLimit {
			break
		}
		best = m
	}
	if best == 0 {
		return 1
	}
	return float64(n) / float64(best)
}

// TestWindowFitterReassembles reads whole diffs page by page through the
// fitter, as a client would, and checks the concatenation.
func TestWindowFitterReassembles(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	e := et.Sample()
	for name, gen := range diffKinds {
		diff := gen(r, 150000)
		var got []byte
		offset, pages := int64(0), 0
		for {
			v := verified(t, diff, offset, e)
			text, _, err := fitterFor(t, v, json.RawMessage(`42`)).Fit()
			if err != nil {
				t.Fatal(err)
			}
			var page diffpage.Page
			json.Unmarshal(text, &page)
			chunk, _ := base64.StdEncoding.DecodeString(page.Data)
			got = append(got, chunk...)
			pages++
			if page.EOF {
				break
			}
			c, err := DecodeDiffCursor(*page.NextCursor)
			if err != nil || c.Offset != page.NextByteOffset {
				t.Fatalf("%s: cursor %v", name, err)
			}
			offset = c.Offset
		}
		if !bytes.Equal(got, diff) {
			t.Fatalf("%s: reassembled %d bytes differ from the %d-byte diff", name, len(got), len(diff))
		}
		t.Logf("%s: %d bytes in %d pages (%.0f bytes per page)", name, len(diff), pages, float64(len(diff))/float64(pages))
	}
}

// TestEnvelopeTooSmall: metadata that leaves no room for one byte fails the
// call, whatever the window holds.
func TestEnvelopeTooSmall(t *testing.T) {
	e := et.Sample()
	for _, diff := range [][]byte{nil, []byte("diff"), bytes.Repeat([]byte{0xff}, 100)} {
		v := verified(t, diff, 0, e)
		id := json.RawMessage(`"` + strings.Repeat("x", EnvelopeLimit-500) + `"`)
		_, _, err := fitterFor(t, v, id).Fit()
		if toolerr.As(err).Code != toolerr.EnvelopeTooSmall {
			t.Fatalf("%d-byte diff: %v", len(diff), err)
		}
	}
}

// TestEmptyDiffPage: an empty diff is one page, chunk_bytes 0, eof true.
func TestEmptyDiffPage(t *testing.T) {
	v := verified(t, nil, 0, et.Sample())
	text, n, err := fitterFor(t, v, json.RawMessage(`1`)).Fit()
	if err != nil || n != 0 {
		t.Fatal(err)
	}
	want := `"byte_offset":0,"chunk_bytes":0,"encoding":"base64","data":"","chunk_sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","text":"","whole_diff_verified":true,"eof":true,"next_byte_offset":0,"next_cursor":null}`
	if !strings.HasSuffix(string(text), want) {
		t.Fatalf("page %s", text)
	}
}

// TestPageShape pins the result's members and their order.
func TestPageShape(t *testing.T) {
	v := verified(t, []byte("diff --git a/x b/x\n<&>\n"), 0, et.Sample())
	text, _, err := fitterFor(t, v, json.RawMessage(`1`)).Fit()
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.Token()
	var names []string
	for dec.More() {
		tok, _ := dec.Token()
		names = append(names, tok.(string))
		var skip json.RawMessage
		dec.Decode(&skip)
	}
	want := "requested manifest contract atomic_latest_pr_snapshot byte_offset chunk_bytes encoding data chunk_sha256 text whole_diff_verified eof next_byte_offset next_cursor"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("members %s", got)
	}
	if !bytes.Contains(text, []byte(`"text":"diff --git a/x b/x\n<&>\n"`)) || !bytes.Contains(text, []byte(`"contract":"observed_input_range","atomic_latest_pr_snapshot":false`)) {
		t.Fatalf("page %s", text)
	}
	if !bytes.HasPrefix(text, []byte(`{"requested":{"owner":"team","repo":"project","index":7},"manifest":{"schema":"forgejo.pr-diff-evidence.v1",`)) {
		t.Fatalf("page %s", text)
	}
}
