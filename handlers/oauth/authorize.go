package oauth

import (
	"context"
	"net"
	"net/url"
	"slices"
	"strings"
)

// authorization is a validated authorization request (RFC 6749 §4.1.1):
// what the consent page shows and the code is issued for.
type authorization struct {
	client client
	// redirect is where the answer goes; redirectParam is the redirect_uri
	// as the client sent it, empty when it sent none and the one it
	// registered is used. The code remembers redirectParam: the token
	// request must repeat it when it was sent (RFC 6749 §4.1.3).
	redirect      *url.URL
	redirectParam string
	// scopes are the scopes requested, in the order asked, once each.
	scopes []string
	// state is echoed when sent (OAuth 2.1 §4.1.1 makes it optional: PKCE
	// carries the CSRF protection).
	state     string
	challenge string
}

// decideAuthorization decides an authorization request whose parameters
// passed knownParams, for the client it names (read by the caller), in
// the order that keeps the gateway from being an open redirector: the
// redirect URI is checked before anything is refused that a client could
// be told (every refusal here is shown on the gateway's page anyway,
// login.go says why). Then the scopes (each one this server serves), the
// response type (code alone), PKCE (an S256 challenge) and the RFC 8707
// resource (absent, or the one resource this server serves).
func decideAuthorization(q url.Values, cl client, served []string, resource string) (authorization, *oauthError) {
	a := authorization{client: cl, redirectParam: q.Get("redirect_uri"), state: q.Get("state"), challenge: q.Get("code_challenge")}
	redirect, ok := matchRedirect(a.redirectParam, cl.redirectURIs)
	if !ok {
		return a, refuse(codeInvalidRequest, "The 'redirect_uri' parameter does not match any of the client's registered redirect URIs.")
	}
	a.redirect = redirect
	for _, sc := range strings.Fields(q.Get("scope")) {
		if !slices.Contains(served, sc) {
			return a, refuse(codeInvalidScope, "The client may not request scope "+quoteScope(sc)+": this server does not serve it.")
		}
		if !slices.Contains(a.scopes, sc) {
			a.scopes = append(a.scopes, sc)
		}
	}
	switch types := strings.Fields(q.Get("response_type")); {
	case len(types) == 0:
		return a, refuse(codeUnsupportedResponseType, "The request is missing the 'response_type' parameter.")
	case len(types) != 1 || types[0] != "code":
		return a, refuse(codeUnsupportedResponseType, "Only response_type 'code' is supported.")
	}
	if a.challenge == "" || q.Get("code_challenge_method") != "S256" {
		return a, refuse(codeInvalidRequest, "PKCE is required: send code_challenge with code_challenge_method=S256.")
	}
	if res := q["resource"]; len(res) > 1 || len(res) == 1 && !namesResource(resource, res[0]) {
		return a, errInvalidTarget(resource)
	}
	return a, nil
}

// matchRedirect finds the redirect URI an authorization answers to among
// the client's registered ones: the one sent, compared as a string, or, for
// a loopback http URI, with any port (RFC 8252 §7.3: a native app listens
// on whatever port it gets); none sent, the one registered, if there is
// exactly one.
func matchRedirect(sent string, registered []string) (*url.URL, bool) {
	if sent == "" {
		if len(registered) != 1 {
			return nil, false
		}
		u, err := url.Parse(registered[0])
		return u, err == nil && u.Fragment == ""
	}
	u, err := url.Parse(sent)
	if err != nil || u.Fragment != "" {
		return nil, false
	}
	for _, r := range registered {
		if r == sent || loopbackMatch(u, r) {
			return u, true
		}
	}
	return nil, false
}

// loopbackMatch: an http URI on a loopback address matches a registered
// one with the same host, path and query, whatever the port.
func loopbackMatch(sent *url.URL, registered string) bool {
	reg, err := url.Parse(registered)
	if err != nil || sent.Scheme != "http" || reg.Scheme != "http" {
		return false
	}
	ip := net.ParseIP(sent.Hostname())
	return ip != nil && ip.IsLoopback() && reg.Hostname() == sent.Hostname() &&
		reg.Path == sent.Path && reg.RawQuery == sent.RawQuery
}

// parseAuthorization validates a client's authorization request (its
// parameters passed knownParams): the client it names, then the decision.
// A client_id that is a metadata document's URL is fetched first, and a
// document that cannot be used is refused with the generic words of
// checkMetadataClient.
func (s *Server) parseAuthorization(ctx context.Context, q url.Values) (authorization, error) {
	id := q.Get("client_id")
	if isMetadataURL(id) {
		if err := s.checkMetadataClient(ctx, id); err != nil {
			return authorization{}, err
		}
	}
	cl, err := s.lookupClient(ctx, id)
	if err != nil {
		return authorization{}, err
	}
	a, e := decideAuthorization(q, cl, s.scopeNames(), s.cfg.Resource)
	if e != nil {
		return a, e
	}
	return a, nil
}
