package github

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agent-gateway/agent-gateway/upstream"
	"github.com/agent-gateway/agent-gateway/upstream/strictjson"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// apiExchange is a request of route of GitHub's REST API with a bearer
// token: the API version header, GitHub's JSON media types, and the
// route's bound.
func apiExchange(token, accept string, query url.Values, maxBody int64, route upstream.Route, values ...string) upstream.Exchange {
	return upstream.Exchange{
		Method: route.Method, Segments: route.Segments(values...), Query: query, Accept: accept,
		Header:     http.Header{"X-GitHub-Api-Version": {APIVersion}},
		Credential: upstream.Credential{Token: token},
		MaxBody:    maxBody, IsJSON: isJSON,
	}
}

// refusal is a code and message a route gives one native status.
type refusal struct {
	code toolerr.Code
	msg  string
}

// statusTable is one route's table from native status to code. A rate
// limit (403 or 429 with GitHub's headers) comes first, whatever the
// table says; a status the table lacks is provider_unavailable.
type statusTable map[int]refusal

func (t statusTable) refuse(se *upstream.StatusError, now time.Time) *toolerr.Error {
	if secs, ok := rateLimited(se.Status, se.Header, now); ok {
		return rateLimitError(se.Status, secs)
	}
	r, ok := t[se.Status]
	if !ok {
		r = refusal{toolerr.ProviderUnavailable, "GitHub answered with an unexpected status"}
	}
	return toolerr.Wrap(se, r.code, "%s", r.msg).With("native_status", se.Status)
}

// answerError maps the exchange's neutral errors of one route (what names
// its answer in messages) to codes; transport failures go to transportError.
func answerError(err error, what string, table statusTable, now time.Time) error {
	var se *upstream.StatusError
	if errors.As(err, &se) {
		return table.refuse(se, now)
	}
	var ae *upstream.AnswerError
	if !errors.As(err, &ae) {
		return transportError(err)
	}
	switch ae.Stage {
	case upstream.StageMediaType:
		return toolerr.Wrap(err, toolerr.ProviderMalformed, "GitHub's %s answer is not JSON", what)
	case upstream.StageCheck:
		return toolerr.Wrap(err, toolerr.ProviderMalformed, "GitHub's %s answer was refused: %s", what, ae.Err.Error())
	case upstream.StageDecode:
		return toolerr.Wrap(err, toolerr.ProviderMalformed, "GitHub's %s answer is malformed JSON", what)
	}
	// StageBody: the head arrived and was accepted, so GitHub was reached;
	// a body whose connection then closed or was reset broke off.
	var ue *upstream.Error
	if errors.As(ae.Err, &ue) && ue.Kind == upstream.KindUnavailable {
		return toolerr.Wrap(err, toolerr.ProviderUnavailable, "GitHub's %s answer broke off before its end (the connection closed or was reset mid-body)", what).With("native_status", ae.Status)
	}
	return transportError(ae.Err)
}

// withToken runs read with the installation's token for repo, under the
// client's call deadline (CallTimeout): the mint, the read and a second
// attempt all end by it. A token GitHub refuses with 401 is dropped and
// read runs once more with a fresh one; any other outcome is the answer.
func withToken[T any](ctx context.Context, c *Client, installationID int64, repo string, read func(ctx context.Context, token string) (T, error)) (T, error) {
	timeout := c.callTimeout
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errCallDeadline)
	defer cancel()
	for attempt := 0; ; attempt++ {
		token, err := c.tokens.Token(ctx, installationID, repo)
		if err != nil {
			var zero T
			return zero, deadlineError(ctx, err, timeout)
		}
		v, err := read(ctx, token)
		var se *upstream.StatusError
		if attempt == 0 && errors.As(err, &se) && se.Status == http.StatusUnauthorized {
			c.tokens.Invalidate(installationID, repo, token)
			continue
		}
		return v, deadlineError(ctx, err, timeout)
	}
}

// errCallDeadline is the cause of a GitHub call's context that reached its
// total deadline.
var errCallDeadline = errors.New("the GitHub call deadline passed")

// deadlineError names the call deadline as the cause of err when that is
// what ended the call: the transport sees only a cancelled request and
// would call it an I/O timeout or a failed connection.
func deadlineError(ctx context.Context, err error, timeout time.Duration) error {
	if err == nil || !errors.Is(context.Cause(ctx), errCallDeadline) {
		return err
	}
	return toolerr.Wrap(err, toolerr.ProviderUnavailable, "GitHub's answer did not arrive whole within the %s a GitHub call may take (github.call_timeout)", timeout)
}

// answerStrictness is what checkStrict refuses in an answer the gateway
// decodes with encoding/json: a member repeated in one object, also after
// case folding (encoding/json matches names without regard to case and
// keeps the last), at any depth, and nesting over maxContentsDepth.
var answerStrictness = strictjson.Options{
	MaxDepth:  maxContentsDepth,
	Fold:      strings.ToLower,
	FoldASCII: strictjson.ASCIITable(strictjson.ASCIILower),
}

// checkStrict is the strict check of an answer read whole (branch):
// valid JSON, then answerStrictness.
func checkStrict(body []byte) error {
	if !json.Valid(body) {
		return errors.New("not valid JSON")
	}
	switch p, _ := strictjson.Check(body, &answerStrictness); p {
	case strictjson.OK:
		return nil
	case strictjson.TooDeep:
		return errors.New("it nests too deep")
	default:
		return errors.New("it repeats a member or spells one in another case")
	}
}

// nativeStatus is the status of the answer a failed exchange got, 0 when
// none came.
func nativeStatus(err error) int {
	var se *upstream.StatusError
	var ae *upstream.AnswerError
	var ue *upstream.Error
	switch {
	case errors.As(err, &se):
		return se.Status
	case errors.As(err, &ae):
		return ae.Status
	case errors.As(err, &ue):
		return ue.Status
	}
	return 0
}
