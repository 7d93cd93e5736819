package oauth

import (
	"fmt"
	"net/url"
	"slices"
)

// An authorization request is stored in the login session (and replayed at
// every later step), and /oauth/authorize is open to anyone: what it keeps
// must be bounded. Only the parameters this server reads are kept, each at
// most once and within a size; everything else is dropped, as RFC 6749 §3.1
// tells an authorization server to ignore unrecognized parameters.

// authorizeParamBytes are the parameters kept and the longest value each
// may have. An S256 challenge is 43 characters (RFC 7636 §4.2); the others
// leave room for any real client: a redirect URI as long as registration
// allows, a state that is a small signed blob.
var authorizeParamBytes = map[string]int{
	"response_type":         32,
	"client_id":             maxMetadataURLBytes, // a registered ID, or a metadata document's URL
	"redirect_uri":          maxRedirectURIBytes,
	"scope":                 1024,
	"state":                 2048,
	"code_challenge":        128,
	"code_challenge_method": 16,
	"resource":              maxResourceBytes,
}

// maxResourceBytes bounds an RFC 8707 resource: the gateway's own URL.
const maxResourceBytes = 2048

// maxResourceValues keeps a second resource so that the RFC 8707 check
// can still tell "two resources" (invalid_target) from one; more are not
// stored.
const maxResourceValues = 2

// paramProblem is why an authorization request is refused before it is
// decided: the OAuth error code, the parameter and a hint, which the error
// page shows.
type paramProblem struct {
	code  string // invalid_request or unsupported_response_mode
	param string
	hint  string
	// reason labels the refusal in metrics.
	reason refusalReason
}

// err is the problem as the OAuth error the page shows.
func (p *paramProblem) err() *oauthError {
	return refuse(p.code, "The authorization request is not valid. "+p.hint)
}

// knownParams returns the parameters of an authorization request this
// server keeps, and the first problem found. Problems are checked in a
// fixed order (client and redirect URI first) so the answer does not
// depend on map order. With a problem, the returned values hold only the
// parameters that passed.
func knownParams(form url.Values, rule redirectRule) (url.Values, *paramProblem) {
	out := url.Values{}
	var first *paramProblem
	note := func(p *paramProblem) {
		if first == nil {
			first = p
		}
	}
	for _, name := range []string{"client_id", "redirect_uri", "response_type", "scope", "state", "code_challenge", "code_challenge_method", "resource"} {
		vals, ok := form[name]
		if !ok {
			continue
		}
		limit := authorizeParamBytes[name]
		if name != "resource" && len(vals) > 1 {
			note(&paramProblem{"invalid_request", name, fmt.Sprintf("The %q parameter was sent more than once.", name), reasonRepeatedParameter})
			continue
		}
		if len(vals) > maxResourceValues {
			vals = vals[:maxResourceValues]
		}
		if i := slices.IndexFunc(vals, func(v string) bool { return len(v) > limit }); i >= 0 {
			note(&paramProblem{"invalid_request", name, fmt.Sprintf("The %q parameter is longer than %d bytes.", name, limit), reasonOversizedParameter})
			continue
		}
		if name == "redirect_uri" && vals[0] != "" {
			if err := rule.check(vals[0]); err != nil {
				note(&paramProblem{"invalid_request", name, err.Error() + ".", reasonInvalidRedirectURI})
				continue
			}
		}
		out[name] = slices.Clone(vals)
	}
	// Only the query response mode is served (the metadata says so): a
	// form_post answer is a page with inline script, and the fragment mode
	// is for implicit flows. "query" itself is the default for code and is
	// not kept.
	if modes, ok := form["response_mode"]; ok && (len(modes) != 1 || modes[0] != "query") {
		note(&paramProblem{"unsupported_response_mode", "response_mode",
			`Only response_mode "query" is supported.`, reasonUnsupportedResponseMode})
	}
	return out, first
}
