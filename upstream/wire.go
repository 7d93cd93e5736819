package upstream

import "net/http"

// wireTransport is the last RoundTripper before net/http, and the one
// place where every upstream client (Forgejo's anonymous reads, diff
// evidence and grants; GitHub's Contents, branch and token routes) has
// each request go out at most once (sendOnce).
type wireTransport struct {
	next http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *wireTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.WithContext(req.Context())
	sendOnce(out)
	return t.next.RoundTrip(out)
}
