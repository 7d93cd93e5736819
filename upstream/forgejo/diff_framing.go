package forgejo

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// CheckEvidenceFraming checks the native framing of a 200 evidence response
// (docs/architecture.md#evidence-request-and-framing) before any of its body
// is read:
//
//   - exactly one Content-Type, application/json with at most a utf-8
//     charset parameter (IsJSON);
//   - Cache-Control holding exactly the directives private and no-store;
//   - Accept-Ranges holding exactly none;
//   - exactly one Content-Length, canonical decimal (digits only, no sign,
//     no leading zero), equal to the length net/http framed the body by;
//   - no Transfer-Encoding, Content-Encoding (not even identity) or
//     Content-Range.
//
// HTTP's own rules decide what "exactly" means for the list-valued fields:
// directive names and the none token are compared without regard to case,
// whitespace around list elements is ignored, several field lines are one
// list (RFC 9110 §5.3), and empty list elements are skipped
// (RFC 9110 §5.6.1); a directive with an argument (private="x"), a repeated
// one or any other one is refused. Via and every other header are not looked
// at.
//
// A refusal is evidence_framing and names the header, never its value.
func CheckEvidenceFraming(resp *http.Response) *toolerr.Error {
	h := resp.Header
	if ct := h.Values("Content-Type"); len(ct) != 1 || !IsJSON(ct[0]) {
		return framing("Content-Type must be application/json")
	}
	if !isExactList(h.Values("Cache-Control"), "private", "no-store") {
		return framing("Cache-Control must be exactly private, no-store")
	}
	if !isExactList(h.Values("Accept-Ranges"), "none") {
		return framing("Accept-Ranges must be none")
	}
	if len(resp.TransferEncoding) > 0 || len(h.Values("Transfer-Encoding")) > 0 {
		return framing("a Transfer-Encoding is not allowed")
	}
	if len(h.Values("Content-Encoding")) > 0 || resp.Uncompressed {
		return framing("a Content-Encoding is not allowed")
	}
	if len(h.Values("Content-Range")) > 0 {
		return framing("a Content-Range is not allowed")
	}
	cl := h.Values("Content-Length")
	if len(cl) != 1 || resp.ContentLength < 0 {
		return framing("exactly one Content-Length is required")
	}
	if !isCanonicalLength(cl[0]) || cl[0] != strconv.FormatInt(resp.ContentLength, 10) {
		return framing("Content-Length must be a canonical decimal")
	}
	return nil
}

func framing(msg string) *toolerr.Error {
	return toolerr.New(toolerr.EvidenceFraming, "%s", msg)
}

// isCanonicalLength reports whether s is digits only, without a leading zero
// (except "0" itself).
func isCanonicalLength(s string) bool {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isExactList reports whether the field lines hold exactly the given
// tokens, each once, in any order and case, and nothing else.
func isExactList(lines []string, want ...string) bool {
	seen := make(map[string]bool, len(want))
	for _, line := range lines {
		for _, el := range strings.Split(line, ",") {
			el = strings.ToLower(strings.Trim(el, " \t"))
			if el == "" {
				continue
			}
			known := false
			for _, w := range want {
				known = known || el == w
			}
			if !known || seen[el] {
				return false
			}
			seen[el] = true
		}
	}
	return len(seen) == len(want)
}
