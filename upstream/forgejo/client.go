// Package forgejo is the gateway's client of a Forgejo forge ("Core"): the
// four anonymous public reads, and (in sibling files and packages) the PR
// diff evidence route and the agent work-grant routes.
package forgejo

import (
	"context"
	"errors"
	"mime"
	"net/http"
	"net/url"

	"github.com/agent-gateway/agent-gateway/upstream"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// MaxJSONBody bounds every native JSON response other than diff evidence
// (50 repositories or pull requests are far below it).
const MaxJSONBody = 8 << 20

// Client talks to one Forgejo origin.
type Client struct {
	up       *upstream.Client
	evidence func(verifiedBytes int64, err error)
}

// ObserveEvidence sets f to be told about every evidence entity read: the
// decoded diff bytes verified, or the refusal (metrics). Call it before use.
func (c *Client) ObserveEvidence(f func(verifiedBytes int64, err error)) { c.evidence = f }

// New returns a Client over a strict upstream client bound to the Forgejo origin.
func New(up *upstream.Client) *Client { return &Client{up: up} }

// getJSON performs one anonymous GET and decodes a JSON body into dst. It is
// the single path of every anonymous read: status mapping, media type check
// and body bound happen in the exchange, and the strict JSON checks of
// checkNativeJSON as the body is decoded (decodeNativeJSON). No credential
// is ever attached.
func (c *Client) getJSON(ctx context.Context, query url.Values, dst any, route upstream.Route, values ...string) (http.Header, error) {
	x := c.exchange(upstream.Credential{}, query, route, values)
	x.Check = nil // decodeNativeJSON's
	a, err := c.up.Exchange(ctx, x)
	if err != nil {
		return nil, answerError(err, false)
	}
	if stage, err := decodeNativeJSON(a.Body, dst); err != nil {
		return nil, answerError(&upstream.AnswerError{Stage: stage, Status: a.Status, Err: err}, false)
	}
	return a.Header, nil
}

// exchange is a request of route for a native JSON answer: application/json, at most
// MaxJSONBody bytes, and the same strictness for every answer, since
// encoding/json alone would take the last of repeated members, match names
// without regard to case, accept nesting up to 10,000 levels and replace
// lone surrogates.
func (c *Client) exchange(cred upstream.Credential, query url.Values, route upstream.Route, values []string) upstream.Exchange {
	return upstream.Exchange{Method: route.Method, Segments: route.Segments(values...), Query: query, Credential: cred,
		MaxBody: MaxJSONBody, IsJSON: IsJSON, Check: checkNativeJSON}
}

// answerError is Forgejo's table from the exchange's neutral errors to
// stable codes. stock says the route is a Core extension's, which a stock
// forge answers with a non-JSON 404.
func answerError(err error, stock bool) error {
	var se *upstream.StatusError
	if errors.As(err, &se) {
		if stock && se.Status == http.StatusNotFound && notJSON(se.Header) {
			return forgeUnsupported(ExtensionWorkGrants, se.Status)
		}
		return StatusError(se.Status)
	}
	var ae *upstream.AnswerError
	if !errors.As(err, &ae) {
		return TransportError(err)
	}
	switch ae.Stage {
	case upstream.StageMediaType:
		return malformed("a non-JSON media type")
	case upstream.StageCheck:
		return toolerr.Wrap(err, toolerr.UpstreamMalformed, "Forgejo's answer was refused: %s", ae.Err.Error())
	case upstream.StageDecode:
		return toolerr.Wrap(err, toolerr.UpstreamMalformed, "Forgejo answered with malformed JSON")
	default:
		return TransportError(ae.Err)
	}
}

// IsJSON reports whether a Content-Type is application/json with at most a
// utf-8 charset parameter.
func IsJSON(contentType string) bool {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "application/json" {
		return false
	}
	for k, v := range params {
		if k != "charset" || (v != "utf-8" && v != "UTF-8") {
			return false
		}
	}
	return true
}

// StatusError maps a native non-success status to its stable code; the
// native body is never read into the message.
func StatusError(status int) *toolerr.Error {
	var e *toolerr.Error
	switch status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		e = toolerr.New(toolerr.BadRequest, "Forgejo refused the request as invalid")
	case http.StatusUnauthorized:
		e = toolerr.New(toolerr.UpstreamUnauthorized, "Forgejo did not accept the credential")
	case http.StatusForbidden:
		e = toolerr.New(toolerr.Forbidden, "Forgejo refused access")
	case http.StatusNotFound:
		e = toolerr.New(toolerr.NotFound, "not found, or not visible to this caller")
	case http.StatusConflict:
		e = toolerr.New(toolerr.Conflict, "Forgejo reported a conflict")
	default:
		e = toolerr.New(toolerr.UpstreamUnavailable, "Forgejo answered with an unexpected status")
	}
	return e.With("native_status", status)
}

// transportCodes is Forgejo's table of transport failures.
var transportCodes = upstream.TransportCodes{Name: "Forgejo", Unavailable: toolerr.UpstreamUnavailable,
	Timeout: toolerr.UpstreamTimeout, Framing: toolerr.UpstreamMalformed, TooLarge: toolerr.UpstreamMalformed}

// TransportError maps a strict-transport failure to a Forgejo tool code.
func TransportError(err error) *toolerr.Error { return transportCodes.Error(err) }
