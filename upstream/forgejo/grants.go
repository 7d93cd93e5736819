package forgejo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/agent-gateway/agent-gateway/upstream"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// The proposal triple's fixed members
// (docs/architecture.md#agent-work-grant-contract).
const (
	ProposalSchema  = "agent_work_grant.v1"
	ProposalVersion = 1
)

// GrantStates are the native grant states. The list also accepts "all";
// no state selects Core's default, every state but revoked.
var GrantStates = []string{"awaiting_agent", "awaiting_human", "active", "revoked"}

// Proposal is the proposal triple a bot repeats exactly as it read it.
type Proposal struct {
	Schema  string
	Version int64
	Digest  string
}

// Submission is everything a submission sends to Core: the triple plus
// the caller's durable request key, title and body. Nothing else is sent.
type Submission struct {
	Proposal
	RequestKey string
	Title      string
	Body       string
}

// GrantResult is the result of reading or confirming one grant: the
// complete native grant as Core sent it, after the consistency checks.
type GrantResult struct {
	Grant        json.RawMessage `json:"grant"`
	NativeStatus int             `json:"native_status"`
}

// SubmissionResult is the result of a submission or its readback: the
// complete native grant and receipt, after the consistency checks.
type SubmissionResult struct {
	Grant        json.RawMessage `json:"grant"`
	Submission   json.RawMessage `json:"submission"`
	NativeStatus int             `json:"native_status"`
}

// GrantListing is one answer of the paginated list of the caller's work
// grants. Each answer is a current observation, not a snapshot: there is
// no cursor and no cache.
type GrantListing struct {
	Grants   []json.RawMessage `json:"grants"`
	Page     int64             `json:"page"`
	NextPage *int64            `json:"next_page"`
	HasMore  bool              `json:"has_more"`
	Total    *int64            `json:"total"`
	Snapshot bool              `json:"snapshot"`
}

// ListAgentWorkGrants is GET /api/v1/agent-work-grants?limit=30&page=N[&state=…].
// has_more and next_page come from the native Link and X-Total-Count
// headers, so they stay right when Core clamps the width; Link addresses
// are never followed.
func (c *Client) ListAgentWorkGrants(ctx context.Context, cred upstream.Credential, state string, page int64) (*GrantListing, error) {
	extra := url.Values{}
	var want []string
	switch state {
	case "":
		want = []string{"awaiting_agent", "awaiting_human", "active"} // Core's default omits revoked grants
	case "all":
		extra.Set("state", state)
	default:
		extra.Set("state", state)
		want = []string{state}
	}
	h, body, err := c.authedGet(ctx, cred, listQuery(page, extra), routeGrants)
	if err != nil {
		return nil, err
	}
	var items []json.RawMessage
	if len(body) == 0 || body[0] != '[' || json.Unmarshal(body, &items) != nil {
		return nil, malformed("the grant list is not an array")
	}
	seen := map[int64]bool{}
	for _, raw := range items {
		f, reason := checkGrant(raw, grantWant{states: want})
		if reason != "" {
			return nil, malformed(reason)
		}
		if seen[f.id] {
			return nil, malformed("a grant appears twice on one page")
		}
		seen[f.id] = true
	}
	p := newListing(items, page, h)
	return &GrantListing{Grants: p.Items, Page: p.Page, NextPage: p.NextPage, HasMore: p.HasMore, Total: p.Total}, nil
}

// GetAgentWorkGrant is GET /api/v1/repos/{owner}/{repo}/agent-work-grants/{id}.
func (c *Client) GetAgentWorkGrant(ctx context.Context, cred upstream.Credential, owner, repo string, id int64) (*GrantResult, error) {
	_, body, err := c.authedGet(ctx, cred, nil, routeGrant, owner, repo, strconv.FormatInt(id, 10))
	if err != nil {
		return nil, err
	}
	if _, reason := checkGrant(body, grantWant{id: id, owner: owner, repo: repo}); reason != "" {
		return nil, malformed(reason)
	}
	return &GrantResult{Grant: body, NativeStatus: http.StatusOK}, nil
}

// GetAgentWorkSubmission is GET …/agent-work-grants/{id}/submissions/{key}:
// the receipt of a request key, the way to reconcile an uncertain delivery.
func (c *Client) GetAgentWorkSubmission(ctx context.Context, cred upstream.Credential, owner, repo string, id int64, key string) (*SubmissionResult, error) {
	_, body, err := c.authedGet(ctx, cred, nil, routeGrantSubmission, owner, repo, strconv.FormatInt(id, 10), key)
	if err != nil {
		return nil, err
	}
	grant, sub, reason := splitGrantSubmission(body, grantWant{id: id, owner: owner, repo: repo}, submissionWant{requestKey: key})
	if reason != "" {
		return nil, malformed(reason)
	}
	return &SubmissionResult{Grant: grant, Submission: sub, NativeStatus: http.StatusOK}, nil
}

// ConfirmAgentWorkGrant is POST …/agent-work-grants/{id}/confirm with the
// proposal triple, sent once. Success is 200 with the grant, now awaiting a
// human (or already active, for an identical earlier confirmation).
func (c *Client) ConfirmAgentWorkGrant(ctx context.Context, cred upstream.Credential, owner, repo string, id int64, p Proposal) (*GrantResult, error) {
	payload := map[string]any{"proposal_schema": p.Schema, "proposal_version": p.Version, "proposal_digest": p.Digest}
	uncertain := deliveryUncertain("the confirmation may or may not have been recorded (%s); it was sent once and is not retried. "+
		"Read the grant with get_agent_work_grant (same owner, repo and grant_id) before deciding whether "+
		"the identical confirmation is still needed",
		"get_agent_work_grant", map[string]any{"owner": owner, "repo": repo, "grant_id": id})
	status, body, err := c.postOnce(ctx, cred, payload, []int{http.StatusOK}, uncertain, routeGrantConfirm, owner, repo, strconv.FormatInt(id, 10))
	if err != nil {
		return nil, err
	}
	f, reason := checkGrant(body, grantWant{id: id, owner: owner, repo: repo, states: []string{"awaiting_human", "active"}})
	if reason == "" && f.digest != p.Digest {
		reason = "the confirmed grant carries another proposal digest"
	}
	if reason != "" {
		return nil, uncertain("Forgejo's answer was inconsistent: "+reason, status, nil)
	}
	return &GrantResult{Grant: body, NativeStatus: status}, nil
}

// SubmitAgentWorkProposal is POST …/agent-work-grants/{id}/issues, sent
// exactly once: 201 is a new submission, 200 the committed replay of the
// same request key. Whenever the answer cannot prove the outcome (lost
// response, unexpected status, malformed or inconsistent body) the error
// is delivery_uncertain and tells the caller to read the same key back.
func (c *Client) SubmitAgentWorkProposal(ctx context.Context, cred upstream.Credential, owner, repo string, id int64, s Submission) (*SubmissionResult, error) {
	payload := map[string]any{
		"proposal_schema": s.Schema, "proposal_version": s.Version, "proposal_digest": s.Digest,
		"request_key": s.RequestKey, "title": s.Title, "body": s.Body,
	}
	uncertain := deliveryUncertain("the submission may or may not have been committed (%s); it was sent once and is not retried. "+
		"Do not infer failure, do not generate a new request_key and do not submit again automatically: "+
		"read back with get_agent_work_submission using the same owner, repo, grant_id and request_key",
		"get_agent_work_submission", map[string]any{"owner": owner, "repo": repo, "grant_id": id, "request_key": s.RequestKey})
	status, body, err := c.postOnce(ctx, cred, payload, []int{http.StatusCreated, http.StatusOK}, uncertain, routeGrantIssues, owner, repo, strconv.FormatInt(id, 10))
	if err != nil {
		return nil, err
	}
	grant, sub, reason := splitGrantSubmission(body, grantWant{id: id, owner: owner, repo: repo},
		submissionWant{requestKey: s.RequestKey, digest: s.Digest, created: status == http.StatusCreated})
	if reason != "" {
		return nil, uncertain("Forgejo's answer was inconsistent: "+reason, status, nil)
	}
	return &SubmissionResult{Grant: grant, Submission: sub, NativeStatus: status}, nil
}

// authedGet performs one GET with the caller's credential and returns the
// headers and the checked JSON body of a 200 answer. Any other outcome is
// a stable error: native statuses keep their meaning, the rest is
// upstream_malformed or a transport code.
func (c *Client) authedGet(ctx context.Context, cred upstream.Credential, query url.Values, route upstream.Route, values ...string) (http.Header, []byte, error) {
	a, err := c.up.Exchange(ctx, c.exchange(cred, query, route, values))
	if err != nil {
		return nil, nil, answerError(err, true)
	}
	return a.Header, a.Body, nil
}

// definiteStatuses are the native refusals that prove nothing was
// committed; they keep their meaning (bad_request, upstream_unauthorized,
// forbidden, not_found, conflict) with native_status.
var definiteStatuses = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusConflict}

// postOnce sends one POST with a JSON payload and returns the status and
// the checked JSON body of a success. It is the single path of every
// grant write, and it sends the request at most once: the body cannot be
// rewound (GetBody is nil, so neither net/http nor anything else can
// replay it), no Idempotency-Key header invites a transport retry, and no
// error leads to a second attempt. Once the request may have left, any
// failure to prove the outcome goes to uncertain.
func (c *Client) postOnce(ctx context.Context, cred upstream.Credential, payload any, success []int,
	uncertain func(reason string, status int, cause error) error, route upstream.Route, values ...string) (int, []byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(payload); err != nil {
		return 0, nil, toolerr.Wrap(err, toolerr.Internal, "the request could not be encoded")
	}
	x := c.exchange(cred, nil, route, values)
	x.Payload, x.Success = buf.Bytes(), success
	a, err := c.up.Exchange(ctx, x)
	if err == nil {
		return a.Status, a.Body, nil
	}
	var se *upstream.StatusError
	var ae *upstream.AnswerError
	switch {
	case errors.As(err, &se):
		switch {
		case se.Status == http.StatusNotFound && notJSON(se.Header):
			// A stock forge has no such route: nothing was committed.
			return 0, nil, forgeUnsupported(ExtensionWorkGrants, se.Status)
		case slices.Contains(definiteStatuses, se.Status):
			return 0, nil, StatusError(se.Status)
		}
		return 0, nil, uncertain(fmt.Sprintf("Forgejo answered with the unexpected status %d", se.Status), se.Status, nil)
	case errors.As(err, &ae):
		switch ae.Stage {
		case upstream.StageMediaType:
			return 0, nil, uncertain("Forgejo's answer had a non-JSON media type", ae.Status, nil)
		case upstream.StageCheck:
			return 0, nil, uncertain("Forgejo's answer was refused: "+ae.Err.Error(), ae.Status, ae.Err)
		}
		return 0, nil, uncertain("Forgejo's answer was cut off or over its size bound", ae.Status, ae.Err)
	}
	var ue *upstream.Error
	if errors.As(err, &ue) && (ue.Kind == upstream.KindRequest || ue.NotSent) {
		// Refused before sending, or failed before a connection (a dial
		// refused or timed out): known undelivered, so not uncertain.
		return 0, nil, TransportError(err)
	}
	return 0, nil, uncertain(writeFailure(err), statusOf(err), err)
}

// deliveryUncertain is the delivery_uncertain error of one write: message
// (its %s is the reason) and the read-back call that settles the outcome,
// with the native status when an answer came.
func deliveryUncertain(message, tool string, arguments map[string]any) func(reason string, status int, cause error) error {
	return func(reason string, status int, cause error) error {
		e := toolerr.Wrap(cause, toolerr.DeliveryUncertain, message, reason).
			With("readback", map[string]any{"tool": tool, "arguments": arguments})
		if status != 0 {
			e = e.With("native_status", status)
		}
		return e
	}
}

// writeFailure describes a transport failure of a write without any
// upstream text.
func writeFailure(err error) string {
	var ue *upstream.Error
	if errors.As(err, &ue) {
		switch ue.Kind {
		case upstream.KindTimeout:
			return "Forgejo made no progress within the I/O timeout"
		case upstream.KindRedirect:
			return "Forgejo answered with a redirect, which is never followed"
		case upstream.KindFraming:
			return "Forgejo's response framing was refused"
		}
	}
	return "the connection failed or the response was lost"
}

func statusOf(err error) int {
	var ue *upstream.Error
	if errors.As(err, &ue) {
		return ue.Status
	}
	return 0
}

// malformed is the error of a read whose 200 answer fails the checks.
func malformed(reason string) *toolerr.Error {
	return toolerr.New(toolerr.UpstreamMalformed, "Forgejo's answer was refused: %s", reason)
}
