package upstream

import (
	"fmt"
	"strconv"
)

// Kind classifies what went wrong talking to an upstream. Each upstream
// client package (upstream/forgejo, upstream/github) maps a Kind to its own
// stable error code (a Forgejo timeout is upstream_timeout, a GitHub one
// provider_unavailable), so the transport stays neutral.
type Kind int

// The kinds of transport failure.
const (
	// KindUnavailable: the connection could not be made or broke.
	KindUnavailable Kind = iota + 1
	// KindTimeout: no progress (headers or body bytes) within the I/O timeout.
	KindTimeout
	// KindRedirect: the upstream answered 3xx; its Location was not read.
	KindRedirect
	// KindFraming: the response framing is not what the contract allows
	// (content encoding, length, media type).
	KindFraming
	// KindTooLarge: the body exceeded its bound.
	KindTooLarge
	// KindRequest: the request itself was refused before sending (wrong
	// origin, bad path segment); a programming or input error.
	KindRequest
)

var kindNames = map[Kind]string{
	KindUnavailable: "unavailable", KindTimeout: "timeout", KindRedirect: "redirect",
	KindFraming: "framing", KindTooLarge: "too_large", KindRequest: "request",
}

// String names the kind for logs and metrics.
func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return "kind" + strconv.Itoa(int(k))
}

// Error is a transport failure. Its text names the kind and a short reason
// chosen by the gateway; it never holds upstream bodies or header values.
type Error struct {
	Kind   Kind
	Status int // HTTP status when a response arrived, else 0
	Reason string
	Err    error
	// NotSent: the failure came before the request had a connection (a
	// dial refused or timed out, a TLS handshake that failed), so not a
	// byte of it left the gateway: a write is known undelivered.
	NotSent bool
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("upstream %s (HTTP %d): %s", e.Kind, e.Status, e.Reason)
	}
	return fmt.Sprintf("upstream %s: %s", e.Kind, e.Reason)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }
