package upstream

import (
	"log/slog"
	"net/http"
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

// Apply sets the Authorization header of req (a request this package's
// Client is about to send, so only ever to the fixed origin). A zero
// credential removes the header.
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
