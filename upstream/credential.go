package upstream

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
)

// Credential is a secret presented to an upstream on a caller's behalf: a
// bearer token or Basic user/password. Its String, GoString, LogValue and
// MarshalJSON methods never reveal it, so a stray %v, slog attribute or
// JSON encoding cannot log it; only Apply puts it on a request.
type Credential struct {
	Token    string
	Username string
	Password string
}

// IsZero reports whether no credential is set.
func (c Credential) IsZero() bool { return c.Token == "" && c.Username == "" }

// String redacts the credential.
func (c Credential) String() string { return "[redacted]" }

// GoString redacts the credential for %#v too.
func (c Credential) GoString() string { return "[redacted]" }

// LogValue redacts the credential in slog records: the JSON handler would
// otherwise encode its exported fields (TestCredentialRedacted).
func (c Credential) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// MarshalJSON redacts the credential wherever it is JSON-encoded, including
// inside a struct handed to a logger.
func (c Credential) MarshalJSON() ([]byte, error) { return []byte(`"[redacted]"`), nil }

// Apply sets the Authorization header of req. A zero credential removes
// the header. Only credentialTransport calls it on requests the gateway
// sends, so a credential is attached in one place, to a request for the
// fixed origin.
func (c Credential) Apply(req *http.Request) {
	switch {
	case c.Token != "":
		req.Header.Set("Authorization", "Bearer "+c.Token)
	case c.Username != "":
		req.SetBasicAuth(c.Username, c.Password)
	default:
		req.Header.Del("Authorization")
	}
}

type credentialKey struct{}

// WithCredential returns a context whose requests through a Client carry
// c (a zero c: none, whatever an outer context carried). The credential
// travels in the context rather than in a header set by each call site, so
// the transport is the one place it is put on the wire.
func WithCredential(ctx context.Context, c Credential) context.Context {
	return context.WithValue(ctx, credentialKey{}, c)
}

// credentialTransport attaches the request context's credential to a
// clone of each request (a RoundTripper must not change the one it is
// given), and only for the fixed origin: a request elsewhere is refused
// before any header is set, and one whose context carries no credential
// goes out with no Authorization header at all, whatever the caller set.
type credentialTransport struct {
	origin *url.URL
	base   http.RoundTripper
}

func (t *credentialTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !sameOrigin(t.origin, req.URL) || (req.Host != "" && !sameOrigin(t.origin, &url.URL{Scheme: req.URL.Scheme, Host: req.Host})) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, &Error{Kind: KindRequest, Reason: "request outside the fixed origin"}
	}
	c, _ := req.Context().Value(credentialKey{}).(Credential)
	out := req.Clone(req.Context())
	c.Apply(out)
	return t.base.RoundTrip(out)
}
