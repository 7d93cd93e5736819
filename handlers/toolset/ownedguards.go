package toolset

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/upstream/strictjson"
)

// ownedCall is a stateless tools/call the owned path understands fully:
// everything the SDK would read from the request before it runs the tool.
type ownedCall struct {
	id     []byte // the id as the SDK writes it back
	params *mcp.CallToolParamsRaw
	run    ownedTool
}

// ownedVersions are the MCP-Protocol-Version values the owned path serves
// ("" is the header absent, which the SDK reads as 2025-03-26). All are
// before 2026-07-28, whose per-request _meta triple, Mcp-Method/Mcp-Name
// headers and error-to-status mapping (SEP-2575) the owned path leaves to
// the SDK; for these the SDK's answer to a tools/call does not depend on
// the version.
var ownedVersions = map[string]bool{"": true, "2024-11-05": true, "2025-03-26": true, "2025-06-18": true, "2025-11-25": true}

// sdkMaxDepth is internal/json's defaultMaxDepth: the SDK refuses a body
// nested deeper as malformed, encoding/json would not.
const sdkMaxDepth = 1000

// reservedMetaPrefix starts the _meta keys the SDK itself reads (the
// SEP-2575 protocolVersion/clientInfo/clientCapabilities triple).
const reservedMetaPrefix = "io.modelcontextprotocol/"

// ownable is every guard the SDK's stateless handler applies before it
// dispatches a call, in the SDK's order, and the one place they are
// enumerated. Each line names the go-sdk v1.8.0 function it mirrors.
// ownable never refuses: a request any guard does not pass is not owned,
// and the SDK handler, which then reads it, gives its own answer (so a
// refusal is the SDK's by construction, byte for byte). The body read here
// is put back for the SDK whatever the outcome.
//
// When go-sdk is upgraded, re-read those functions; the differential test
// (owned_diff_test.go) is what shows whether this list still matches.
func (o *ownedPath) ownable(r *http.Request) (ownedCall, bool) {
	opts := o.opts
	// StreamableHTTPHandler.ServeHTTP: DNS-rebinding protection, a
	// non-loopback Host on a loopback listener is 403.
	if !opts.DisableLocalhostProtection {
		if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la != nil && loopback(la.String()) && !loopback(r.Host) {
			return ownedCall{}, false
		}
	}
	// StreamableHTTPHandler.ServeHTTP: cross-origin protection, when
	// configured (the gateway's Origin middleware stands before both paths).
	//lint:ignore SA1019 deprecated, yet the SDK still applies it when set
	if opts.CrossOriginProtection != nil && opts.CrossOriginProtection.Check(r) != nil {
		return ownedCall{}, false
	}
	// StreamableHTTPHandler.ServeHTTP: MCP-Protocol-Version must be one
	// the server negotiates; serveStateless/servePOST then branch on it.
	if !ownedVersions[r.Header.Get("Mcp-Protocol-Version")] || len(r.Header.Values("Mcp-Protocol-Version")) > 1 {
		return ownedCall{}, false
	}
	// serveStateless: POST only.
	if r.Method != http.MethodPost {
		return ownedCall{}, false
	}
	// serveStateless: Content-Type application/json (baseMediaType).
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return ownedCall{}, false
	}
	// serveStateless: Accept names both application/json and
	// text/event-stream (streamableAccepts).
	if !acceptsBoth(r.Header.Values("Accept")) {
		return ownedCall{}, false
	}
	// serveStateless (Mcp-Session-Id under allowsessionsinstateless),
	// servePOST (Last-Event-ID is 400) and validateMcpHeaders (Mcp-Method,
	// Mcp-Name, Mcp-Param-*): any session or standard MCP header but the
	// protocol version goes to the SDK.
	for k := range r.Header {
		if k == "Last-Event-Id" || (strings.HasPrefix(k, "Mcp-") && k != "Mcp-Protocol-Version") {
			return ownedCall{}, false
		}
	}
	// StreamableHTTPHandler.ServeHTTP (http.MaxBytesReader) and
	// ephemeralConnectOpts/servePOST (413, read errors, an empty body).
	body, ok := o.readBody(r)
	if !ok || len(bytes.TrimSpace(body)) == 0 {
		return ownedCall{}, false
	}
	// internal/json.Unmarshal: checkMaxDepth.
	if nestingDepth(body) > sdkMaxDepth {
		return ownedCall{}, false
	}
	// servePOST readBatch: a batch.
	if bytes.TrimLeft(body, " \t\r\n")[0] == '[' {
		return ownedCall{}, false
	}
	// jsonrpc2.DecodeMessage: one object of jsonrpc "2.0", id, method and
	// params, each member once, nothing after it.
	env, ok := members(body)
	if !ok || !only(env, "jsonrpc", "id", "method", "params") || string(env["jsonrpc"]) != `"2.0"` {
		return ownedCall{}, false
	}
	// jsonrpc2.MakeID and checkRequest: a call (notifications have no id)
	// whose id the SDK writes back as it came.
	id, ok := plainID(env["id"])
	if !ok {
		return ownedCall{}, false
	}
	// checkRequest: the method, and its params present.
	if string(env["method"]) != `"tools/call"` || len(env["params"]) == 0 {
		return ownedCall{}, false
	}
	// newMethodInfo's unmarshalParams into CallToolParamsRaw: name a
	// string, arguments an object or absent, no multi-round-trip members
	// (inputResponses, requestState) and no member the SDK would ignore.
	p, ok := members(env["params"])
	if !ok || !only(p, "name", "arguments", "_meta") {
		return ownedCall{}, false
	}
	name, ok := plainString(p["name"])
	if !ok {
		return ownedCall{}, false
	}
	if a := p["arguments"]; a != nil && a[0] != '{' {
		return ownedCall{}, false
	}
	// servePOST extractRequestMeta: _meta an object without the reserved
	// keys the SDK acts on.
	params := &mcp.CallToolParamsRaw{Name: name, Arguments: p["arguments"]}
	if m := p["_meta"]; m != nil {
		var meta map[string]any
		if m[0] != '{' || json.Unmarshal(m, &meta) != nil {
			return ownedCall{}, false
		}
		for k := range meta {
			if strings.HasPrefix(k, reservedMetaPrefix) {
				return ownedCall{}, false
			}
		}
		params.Meta = meta
	}
	// Server.callTool: a tool of the caller's server (HTTPHandler's
	// getServer: a principal's or the anonymous one); an unknown tool is
	// the SDK's JSON-RPC error.
	tools := o.anonymous
	if middleware.PrincipalFromContext(r.Context()) != nil {
		tools = o.full
	}
	run, ok := tools[name]
	if !ok {
		return ownedCall{}, false
	}
	return ownedCall{id: id, params: params, run: run}, true
}

// readBody reads the body up to the SDK's limit and puts it back for
// whoever reads next; false when it is over the limit or did not read.
func (o *ownedPath) readBody(r *http.Request) ([]byte, bool) {
	if r.Body == nil {
		return nil, false
	}
	limit := o.opts.MaxRequestBodyBytes
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	rest := r.Body
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), rest), rest}
	return body, err == nil && int64(len(body)) <= limit
}

// loopback mirrors the SDK's internal util.IsLoopback: "localhost" or a
// loopback IP, with or without a port.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// acceptsBoth mirrors streamableAccepts: every Accept value, split on
// commas, parameters ignored, wildcards counted.
func acceptsBoth(values []string) bool {
	var jsonOK, streamOK bool
	for _, v := range values {
		for _, token := range strings.Split(v, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(token), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// nestingDepth is the deepest nesting of objects and arrays in data,
// strings skipped, counted as the SDK's checkMaxDepth counts it.
func nestingDepth(data []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, b := range data {
		switch {
		case inString && escaped:
			escaped = false
		case inString && b == '\\':
			escaped = true
		case inString && b == '"':
			inString = false
		case inString:
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			depth++
			deepest = max(deepest, depth)
		case (b == '}' || b == ']') && depth > 0:
			depth--
		}
	}
	return deepest
}

// members splits one JSON object into its members, exactly as spelled
// after unescaping; false for anything else, a repeated member, or data
// after the object. One json.Valid pass and a walk of the member bounds
// (strictjson.Members) replace a Decoder.Token loop that allocated per token.
func members(data []byte) (map[string]json.RawMessage, bool) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' || !json.Valid(data) {
		return nil, false
	}
	out := make(map[string]json.RawMessage, 4)
	repeated := false
	strictjson.Members(data, func(name string, value json.RawMessage) bool {
		if _, repeated = out[name]; !repeated {
			out[name] = value
		}
		return !repeated
	})
	return out, !repeated
}

// only reports whether m has no member but those named.
func only(m map[string]json.RawMessage, names ...string) bool {
	n := 0
	for _, k := range names {
		if _, ok := m[k]; ok {
			n++
		}
	}
	return n == len(m)
}

// plainID is a request id the SDK writes back byte for byte as the owned
// path does: an integer of at most 15 digits (exact in the float64 the
// SDK decodes it into; no "-0", no fraction or exponent), or a plain
// string (below).
func plainID(raw json.RawMessage) ([]byte, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	if raw[0] == '"' {
		s, ok := plainString(raw)
		if !ok {
			return nil, false
		}
		enc, err := EncodeJSON(s)
		return enc, err == nil
	}
	digits := bytes.TrimPrefix(raw, []byte("-"))
	if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && len(raw) > 1) {
		return nil, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return nil, false
		}
	}
	return raw, true
}

// plainString decodes a JSON string without escapes or control
// characters, in valid UTF-8: one that every JSON decoder reads the same.
func plainString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	s := raw[1 : len(raw)-1]
	if !utf8.Valid(s) || bytes.ContainsAny(s, "\\\"") || bytes.ContainsFunc(s, func(c rune) bool { return c < 0x20 }) {
		return "", false
	}
	return string(s), true
}
