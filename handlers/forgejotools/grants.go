package forgejotools

import (
	"context"
	"encoding/json"

	"github.com/agent-gateway/agent-gateway/handlers/toolset"
	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/store/audit"
	"github.com/agent-gateway/agent-gateway/upstream"
	"github.com/agent-gateway/agent-gateway/upstream/forgejo"
)

// The input rules of docs/architecture.md#agent-work-grant-contract, as
// argument tags. IDs are positive JSON integers within int64; the triple is
// exactly agent_work_grant.v1, the integer 1 and 64 lowercase hex; a request
// key is a canonical lowercase UUIDv4, which the client supplies and the
// gateway never makes or replaces. Unknown members (a claimed human approval,
// issuer or agent IDs, sponsorship, scope changes, a state_revision) are
// refused by args.

type listGrantsArgs struct {
	Page  *int64  `json:"page" min:"1" desc:"Page number, 1-based; 30 grants per page. Continue with next_page until has_more is false."`
	State *string `json:"state" enum:"awaiting_agent,awaiting_human,active,revoked,all" desc:"Filter by state; omit for every state but revoked."`
}

// grantRef is one agent work grant of a repository: the arguments of
// get_agent_work_grant, and the start of every other grant tool's.
type grantRef struct {
	RepoRef
	GrantID int64 `json:"grant_id" arg:"required" min:"1" desc:"The grant's native ID (a JSON integer)."`
}

// proposalRef is the proposal a confirmation or submission repeats
// exactly as it was read from the grant.
type proposalRef struct {
	ProposalSchema  string `json:"proposal_schema" arg:"required" enum:"agent_work_grant.v1" desc:"Exactly the proposal.schema read from the grant."`
	ProposalVersion int64  `json:"proposal_version" arg:"required" min:"1" max:"1" desc:"Exactly the proposal.version read from the grant (the integer 1)."`
	ProposalDigest  string `json:"proposal_digest" arg:"required" pattern:"^[0-9a-f]{64}$" desc:"Exactly the proposal.digest read from the grant (64 lowercase hex)."`
}

// proposal is the proposal as the Forgejo client sends it.
func (p proposalRef) proposal() forgejo.Proposal {
	return forgejo.Proposal{Schema: p.ProposalSchema, Version: p.ProposalVersion, Digest: p.ProposalDigest}
}

type confirmGrantArgs struct {
	grantRef
	proposalRef
}

type submitProposalArgs struct {
	grantRef
	proposalRef
	RequestKey string `json:"request_key" arg:"required" pattern:"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$" desc:"Your durable idempotency key: a canonical lowercase UUIDv4 you generated and stored before calling. Reuse it, never replace it, to read back or repeat this submission."`
	Title      string `json:"title" arg:"required" desc:"Issue title (whole text; Core validates it)."`
	Body       string `json:"body" arg:"required" desc:"Issue body (whole text; no gateway cap beyond the 1 MiB request)."`
}

type submissionArgs struct {
	grantRef
	RequestKey string `json:"request_key" arg:"required" pattern:"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$" desc:"The same request_key the submission used."`
}

// Grant tools need a caller whose bearer Forgejo judges
// (toolset.ForgejoCredential: the request bearer over HTTP, the process's
// configured token or Basic credentials over stdio,
// docs/architecture.md#flow-stdio-session); Forgejo enforces its own token
// scopes (read:repository, write:issue), so the gateway declares none.
// Confirmation and submission spend the write budget.
var (
	grantReadPolicy  = middleware.ToolPolicy{}
	grantWritePolicy = middleware.ToolPolicy{Write: true}
)

// GrantTools returns the five authenticated agent work-grant tools of
// docs/architecture.md#agent-work-grant-contract. Each forwards the
// caller's own credential (the HTTP bearer, or the stdio process's
// configured one) and nothing else; the human steps (preparation,
// approval, withdrawal) are not tools: they stay native browser-session
// operations of Core.
func GrantTools(c *forgejo.Client) []toolset.Tool {
	return []toolset.Tool{
		toolset.Typed(grantTool(c, false, toolset.Tool{
			Name: "list_agent_work_grants", Title: "List agent work grants",
			Description: "List the agent work grants that name you (the authenticated bot), 30 per page, optionally by state " +
				"(awaiting_agent, awaiting_human, active, revoked, all; default: all but revoked). Continue with next_page until " +
				"has_more is false. Pages are current observations (snapshot: false), not an atomic list.",
		}), func(ctx context.Context, in listGrantsArgs) (any, error) {
			cred := callerCredential(ctx)
			state := ""
			if in.State != nil {
				state = *in.State
			}
			return c.ListAgentWorkGrants(ctx, cred, state, pageOf(in.Page))
		}),
		toolset.Typed(grantTool(c, false, toolset.Tool{
			Name: "get_agent_work_grant", Title: "Get agent work grant",
			Description: "Read one agent work grant: its state, the bot it names, and the proposal (schema, version, digest, " +
				"task and summary text) you must repeat exactly to confirm or submit.",
		}), func(ctx context.Context, in grantRef) (any, error) {
			cred := callerCredential(ctx)
			return c.GetAgentWorkGrant(ctx, cred, in.Owner, in.Repo, in.GrantID)
		}),
		toolset.Typed(grantTool(c, true, toolset.Tool{
			Name: "confirm_agent_work_grant", Title: "Confirm agent work grant",
			Description: "As the grant's bot, confirm the exact proposal you read (proposal_schema, proposal_version, " +
				"proposal_digest). Confirmation is not human approval: the grant then awaits a human. Sent once, never " +
				"retried: if the outcome is uncertain (delivery_uncertain), read the grant back with get_agent_work_grant " +
				"before deciding whether the identical confirmation is still needed; do not simply repeat it.",
		}), func(ctx context.Context, in confirmGrantArgs) (any, error) {
			cred := callerCredential(ctx)
			res, err := c.ConfirmAgentWorkGrant(ctx, cred, in.Owner, in.Repo, in.GrantID, in.proposal())
			if err != nil {
				return nil, err
			}
			audit.SetGrant(ctx, audit.GrantEvidence{NativeStatus: res.NativeStatus})
			return res, nil
		}),
		toolset.Typed(grantTool(c, true, toolset.Tool{
			Name: "submit_agent_work_proposal", Title: "Submit agent work proposal",
			Description: "On an active grant, create an Issue with your title and body under your durable request_key " +
				"(a lowercase UUIDv4 you generated and kept). native_status 201 is a new submission, 200 the committed " +
				"replay of the same key. Sent once, never retried: on delivery_uncertain read back with " +
				"get_agent_work_submission using the same key; never make a new key for the same work.",
		}), func(ctx context.Context, in submitProposalArgs) (any, error) {
			cred := callerCredential(ctx)
			return auditedSubmission(ctx)(c.SubmitAgentWorkProposal(ctx, cred, in.Owner, in.Repo, in.GrantID, forgejo.Submission{
				Proposal:   in.proposal(),
				RequestKey: in.RequestKey, Title: in.Title, Body: in.Body,
			}))
		}),
		toolset.Typed(grantTool(c, false, toolset.Tool{
			Name: "get_agent_work_submission", Title: "Get agent work submission",
			Description: "Read the receipt of a submission by its request_key: the Issue's ID, index and URL, the outcome " +
				"(submitted, issue_deleted, issue_binding_changed) and review_state awaiting_review. Use it to reconcile " +
				"an uncertain submission; it stays readable after the grant is withdrawn.",
		}), func(ctx context.Context, in submissionArgs) (any, error) {
			cred := callerCredential(ctx)
			return auditedSubmission(ctx)(c.GetAgentWorkSubmission(ctx, cred, in.Owner, in.Repo, in.GrantID, in.RequestKey))
		}),
	}
}

// grantTool gives a grant tool the traits all five share: it forwards the
// caller's own Forgejo credential, is unavailable without a Forgejo origin,
// and reaches the open world. A read is also read-only and idempotent on
// the read budget; a write spends the write budget and is advertised as
// neither (an uncertain write is read back, never retried:
// docs/architecture.md#agent-work-grant-contract).
func grantTool(c *forgejo.Client, write bool, t toolset.Tool) toolset.Tool {
	t.Needs, t.Unavailable, t.OpenWorld = toolset.ForgejoCredential, unavailable(c), true
	if write {
		t.Policy = grantWritePolicy
	} else {
		t.Policy, t.ReadOnly, t.Idempotent = grantReadPolicy, true, true
	}
	return t
}

// callerCredential is the caller's own Forgejo credential, the only one a
// grant tool forwards; the toolset admitted the call only with one.
func callerCredential(ctx context.Context) upstream.Credential {
	return middleware.PrincipalFromContext(ctx).ForgejoCredential()
}

// auditedSubmission notes a submission's outcome in the call's audit
// record (docs/audit.md): the native status and the Issue the receipt
// names.
func auditedSubmission(ctx context.Context) func(*forgejo.SubmissionResult, error) (any, error) {
	return func(res *forgejo.SubmissionResult, err error) (any, error) {
		if err != nil {
			return nil, err
		}
		audit.SetGrant(ctx, submissionEvidence(res))
		return res, nil
	}
}

// submissionEvidence reads the Issue's ID and index from a checked
// receipt; a receipt without them leaves both 0.
func submissionEvidence(res *forgejo.SubmissionResult) audit.GrantEvidence {
	var receipt struct {
		Issue struct {
			ID    int64 `json:"id"`
			Index int64 `json:"index"`
		} `json:"issue"`
	}
	_ = json.Unmarshal(res.Submission, &receipt)
	return audit.GrantEvidence{NativeStatus: res.NativeStatus, IssueID: receipt.Issue.ID, IssueIndex: receipt.Issue.Index}
}
