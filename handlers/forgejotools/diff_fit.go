package forgejotools

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/handlers/toolset"
	"github.com/agent-gateway/agent-gateway/upstream/forgejo/diffpage"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// EnvelopeLimit is the most bytes the complete JSON-RPC response to one
// get_pull_request_diff call may have (docs/architecture.md#page-fitting);
// the diff reader holds responses to the same bound.
const EnvelopeLimit = diffpage.EnvelopeLimit

// UnknownIDReserve is what an unknown request id is assumed to take in the
// response, quotes included. Both transports know the id — the HTTP
// chain's MCP peek records it, and over stdio toolset.RunStdio carries it
// to the call — so this is only a fallback for a call that reaches the
// tool some other way (unit tests).
const UnknownIDReserve = 1024

// resultTypeReserve is the member the SDK appends to every result for a
// request of protocol revision 2026-07-28 or later.
const resultTypeReserve = len(`,"resultType":"complete"`)

// Envelope measures, exactly, the JSON-RPC response the MCP SDK (v1.8.0)
// writes for a successful tool result of one text block. For a request of
// revision 2026-07-28 or later (SEP-2575) that is
//
//	{"jsonrpc":"2.0","id":<id>,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":<server>},"content":[{"type":"text","text":"<text>"}],"resultType":"complete"}}
//
// and for older revisions the same without _meta and resultType. A tool
// cannot see the revision, so the newer, longer form is always measured:
// responses to older clients end up that many bytes (about a hundred)
// under the bound, never over it.
//
// Everything but the text is fixed for a call, so the size is an overhead
// measured once with the SDK's own encoders (json.Marshal of the
// CallToolResult inside jsonrpc.EncodeMessage) and the request's own id,
// decoded as the SDK decodes it, plus the text as encoding/json escapes
// it. That escaping is HTML-safe: TextContent's MarshalJSON uses
// json.Marshal, so '<', '>' and '&' in the text cost six bytes each; the
// outer encoders do not HTML-escape, and never unescape.
// TestEnvelopeMatchesSDK checks all of this against real SDK responses.
type Envelope struct {
	overhead int
}

// NewEnvelope measures the envelope for a request id exactly as it was
// sent (nil when unknown: then UnknownIDReserve is assumed) and the
// implementation the MCP server announces.
func NewEnvelope(rawID json.RawMessage, server *mcp.Implementation) (Envelope, error) {
	id := jsonrpc.ID{}
	if rawID == nil {
		var err error
		if id, err = jsonrpc.MakeID(strings.Repeat("x", UnknownIDReserve-2)); err != nil {
			return Envelope{}, err
		}
	} else {
		// Decode the id with the SDK's own decoder: it turns numbers into
		// int64 (1.0 and 1e0 answer as 1) and re-escapes strings.
		msg, err := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":` + string(rawID) + `,"method":"tools/call"}`))
		if err != nil {
			return Envelope{}, toolerr.Wrap(err, toolerr.Internal, "the request id could not be measured")
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || !req.ID.IsValid() {
			return Envelope{}, toolerr.New(toolerr.Internal, "the request id could not be measured")
		}
		id = req.ID
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: ""}}}
	if server != nil {
		res.Meta = mcp.Meta{mcp.MetaKeyServerInfo: server}
	}
	result, err := json.Marshal(res)
	if err != nil {
		return Envelope{}, err
	}
	b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: result})
	if err != nil {
		return Envelope{}, err
	}
	return Envelope{overhead: len(b) + resultTypeReserve}, nil
}

// Size returns the bytes of the JSON-RPC response whose one text block
// holds text.
func (e Envelope) Size(text []byte) int { return e.overhead + escapedLen(text) }

// escapedLen is the length of text as encoding/json writes it inside a
// JSON string with HTML escaping, without the quotes: `"` `\` and the five
// controls with short escapes take 2 bytes; other controls, '<', '>',
// '&', U+2028, U+2029 and each byte of invalid UTF-8 take 6.
func escapedLen(text []byte) int {
	n := 0
	for i := 0; i < len(text); {
		b := text[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
				n += 2
			case b < 0x20 || b == '<' || b == '>' || b == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(text[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += size
		}
		i += size
	}
	return n
}

// WindowFitter decides how much of one verified window a page carries, so
// that the complete JSON-RPC response stays within Limit bytes:
//
//   - metadata (requested, manifest, cursor) is never clipped; when not
//     even one byte (or, for text, one character) of diff fits beside it
//     the call fails with envelope_too_small;
//   - a window that reaches the end of the diff and fits whole is the
//     last page;
//   - otherwise, when the window starts with UTF-8 text, the page ends on
//     a character boundary and carries the text, unless the text stops
//     early at a byte that is not UTF-8 and a page without text (just
//     data) would carry more than twice as many bytes: then that page is
//     taken, since every page costs a whole fetch and verification;
//   - a window that starts with non-UTF-8 bytes gives a data-only page.
//
// Sizes are exact (Envelope), so a page is the largest of its kind that
// fits; the search is a binary search over the page's length, re-rendering
// the real result each time.
type WindowFitter struct {
	Envelope Envelope
	Limit    int

	page      diffpage.Page // everything but the chunk
	window    []byte        // the verified bytes at page.ByteOffset
	byteCount int64         // of the whole diff
	cursor    func(next int64) string
	// sums are the chunk SHA-256s rendered so far, by length: the page
	// chosen is one of them, and the audit record names it (ChunkSHA256)
	// without hashing the chunk again.
	sums []renderedSum
}

type renderedSum struct {
	n   int
	hex string
}

// ChunkSHA256 is the SHA-256 (hex) of window[:n] as a page of n bytes
// carries it; Fit rendered that page, so it is looked up, not computed.
func (f *WindowFitter) ChunkSHA256(n int) string {
	for _, s := range f.sums {
		if s.n == n {
			return s.hex
		}
	}
	sum := sha256.Sum256(f.window[:n])
	return hex.EncodeToString(sum[:])
}

// render returns the result text of a page carrying window[:n].
func (f *WindowFitter) render(n int) ([]byte, error) {
	chunk := f.window[:n]
	p := f.page
	p.ChunkBytes = int64(n)
	p.Data = base64.StdEncoding.EncodeToString(chunk)
	sum := sha256.Sum256(chunk)
	p.ChunkSHA256 = hex.EncodeToString(sum[:])
	f.sums = append(f.sums, renderedSum{n, p.ChunkSHA256})
	if utf8.Valid(chunk) {
		s := string(chunk)
		p.Text = &s
	}
	p.NextByteOffset = p.ByteOffset + int64(n)
	p.EOF = p.NextByteOffset == f.byteCount
	if !p.EOF {
		c := f.cursor(p.NextByteOffset)
		p.NextCursor = &c
	}
	return toolset.EncodeJSON(p)
}

// try renders window[:n] and reports whether its response fits.
func (f *WindowFitter) try(n int) ([]byte, bool, error) {
	text, err := f.render(n)
	if err != nil {
		return nil, false, err
	}
	return text, f.Envelope.Size(text) <= f.Limit, nil
}

// largest returns the largest page length snap(m), m in [lo, hi], whose
// response fits, and its text; 0 when none does. Sizes grow with m (no
// candidate here reaches the end of the diff, so every one has a cursor).
func (f *WindowFitter) largest(lo, hi int, snap func(int) int) (int, []byte, error) {
	best, bestText := 0, []byte(nil)
	for lo <= hi {
		m := lo + (hi-lo)/2
		n := snap(m)
		if n == 0 {
			lo = m + 1
			continue
		}
		text, ok, err := f.try(n)
		if err != nil {
			return 0, nil, err
		}
		if ok {
			best, bestText = n, text
			lo = m + 1
		} else {
			hi = m - 1
		}
	}
	return best, bestText, nil
}

// Fit returns the result text of the page and how many window bytes it
// carries.
func (f *WindowFitter) Fit() ([]byte, int, error) {
	w := f.window
	reachesEnd := f.page.ByteOffset+int64(len(w)) == f.byteCount
	if reachesEnd {
		text, ok, err := f.try(len(w))
		if err != nil || ok {
			return text, len(w), err
		}
	}
	hi := len(w) // the last non-final candidate
	if reachesEnd {
		hi--
	}
	v := validUTF8Prefix(w)
	textEnd := min(v, hi)
	// A character cut by the window's own end is text that continues on
	// the next page, not a byte that is not UTF-8.
	invalid := v < len(w) && (reachesEnd || utf8.FullRune(w[v:]))

	t, tText, err := f.largest(1, textEnd, func(m int) int { return runeStartAtOrBefore(w, m, v) })
	if err != nil {
		return nil, 0, err
	}
	b, bText := 0, []byte(nil)
	if invalid && v+1 <= hi && (t == 0 || t == runeStartAtOrBefore(w, textEnd, v)) {
		if b, bText, err = f.largest(v+1, hi, func(m int) int { return m }); err != nil {
			return nil, 0, err
		}
	}
	switch {
	case b > 2*t:
		return bText, b, nil
	case t > 0:
		return tText, t, nil
	}
	return nil, 0, toolerr.New(toolerr.EnvelopeTooSmall,
		"the page's metadata leaves no room for diff bytes within the %d-byte response", f.Limit)
}

// validUTF8Prefix returns the length of the longest prefix of b that is
// valid UTF-8 made of whole characters.
func validUTF8Prefix(b []byte) int {
	i := 0
	for i < len(b) {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		i += size
	}
	return i
}

// runeStartAtOrBefore returns the largest character boundary ≤ m within
// the valid prefix b[:v] (v itself is a boundary).
func runeStartAtOrBefore(b []byte, m, v int) int {
	if m >= v {
		return v
	}
	for m > 0 && !utf8.RuneStart(b[m]) {
		m--
	}
	return m
}
