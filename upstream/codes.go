package upstream

import (
	"errors"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// TransportCodes is one upstream's table from transport kinds to stable
// codes: Forgejo's tools and GitHub's document tools name the same failure
// differently (a timeout is upstream_timeout for one, provider_unavailable
// for the other). A redirect is always redirect_refused and a request that
// could not be formed always invalid_arguments. The messages are the
// gateway's own and name the upstream; no upstream text enters them.
type TransportCodes struct {
	// Name is the upstream as messages name it ("Forgejo", "GitHub").
	Name string
	// Unavailable: no connection, or a failure of no known kind.
	Unavailable toolerr.Code
	// Timeout: no progress within the I/O timeout.
	Timeout toolerr.Code
	// Framing: the response framing was refused.
	Framing toolerr.Code
	// TooLarge: the body exceeded its bound.
	TooLarge toolerr.Code
}

// Error maps a transport failure to its code. An error that already is a
// *toolerr.Error is returned as it is.
func (t TransportCodes) Error(err error) *toolerr.Error {
	var te *toolerr.Error
	if errors.As(err, &te) {
		return te
	}
	var ue *Error
	if !errors.As(err, &ue) {
		return toolerr.Wrap(err, t.Unavailable, "%s could not be reached", t.Name)
	}
	switch ue.Kind {
	case KindTimeout:
		return toolerr.Wrap(err, t.Timeout, "%s made no progress within the I/O timeout", t.Name)
	case KindRedirect:
		return toolerr.Wrap(err, toolerr.RedirectRefused, "%s answered with a redirect, which is never followed", t.Name).With("native_status", ue.Status)
	case KindFraming:
		return toolerr.Wrap(err, t.Framing, "%s's response framing was refused: %s", t.Name, ue.Reason)
	case KindTooLarge:
		return toolerr.Wrap(err, t.TooLarge, "%s's response exceeded its size bound", t.Name)
	case KindRequest:
		return toolerr.Wrap(err, toolerr.InvalidArguments, "the request could not be formed: %s", ue.Reason)
	default:
		return toolerr.Wrap(err, t.Unavailable, "%s could not be reached", t.Name)
	}
}
