package forgejotools

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-gateway/agent-gateway/handlers/toolset"
	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/store/audit"
	"github.com/agent-gateway/agent-gateway/upstream/forgejo"
	"github.com/agent-gateway/agent-gateway/upstream/forgejo/diffpage"
	"github.com/agent-gateway/agent-gateway/upstream/forgejo/evidence"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// The cursor is not bounded by a maxlen tag on purpose: args would refuse
// a long one as invalid_arguments, where docs/architecture.md#diff-cursor
// wants cursor_invalid.
type pullDiffArgs struct {
	pullRef
	Cursor *string `json:"cursor" desc:"next_cursor of the previous page, to read the next one; omit it for the first page. At most 4096 bytes."`
}

// pullDiffPolicy: an authenticated read. The gateway checks no scope of its
// own, only that the caller has a Forgejo credential (toolset.ForgejoCredential):
// the caller's bearer goes to Forgejo, which enforces read:repository and the
// repository's Code/PR permissions on every page.
var pullDiffPolicy = middleware.ToolPolicy{}

// Contract values of every page (what the manifest means,
// docs/architecture.md#evidence-entity).
const (
	diffContract = "observed_input_range"
	diffEncoding = "base64"
)

// PullRequestDiffTool returns get_pull_request_diff
// (docs/architecture.md#pr-diff-contract): one verified window of a pull
// request's binary diff per call. server is the implementation the toolset's
// MCP server announces: newer protocol revisions echo it in every result, so
// page fitting counts it. A nil client (no forgejo.origin) answers
// upstream_unconfigured. volume, if not nil, accounts (and with a budget
// set, limits) the diff bytes verified for each caller.
func PullRequestDiffTool(c *forgejo.Client, server mcp.Implementation, volume *VerifiedVolume) toolset.Tool {
	return toolset.Typed(toolset.Tool{
		Name: "get_pull_request_diff", Title: "Get pull request diff (verified pages)",
		Description: "Read a pull request's diff (git diff -p --binary --histogram of its merge base and head) " +
			"as verified pages. Every call fetches and verifies Forgejo's whole diff evidence, then returns one window: " +
			"data (base64, authoritative), text (the same bytes when they are UTF-8, else null), chunk_sha256 and the " +
			"verified manifest. Repeat with cursor=next_cursor until eof is true; concatenate the decoded data and check " +
			"its length and SHA-256 against manifest.content. If the pull request moved, the cursor is refused as " +
			"cursor_stale: start again without it.",
		Policy: pullDiffPolicy, Needs: toolset.ForgejoCredential, Unavailable: unavailable(c), ReadOnly: true, Idempotent: true, OpenWorld: true, Pages: true,
	}, func(ctx context.Context, in pullDiffArgs) (any, error) {
		return pullDiffPage(ctx, c, &server, callerCredential(ctx), in, volume)
	})
}

// pullDiffPage serves one page: cursor checks before any upstream request,
// one evidence GET, the continuation check, then page fitting.
func pullDiffPage(ctx context.Context, c *forgejo.Client, server *mcp.Implementation, cred middleware.Credential, in pullDiffArgs, volume *VerifiedVolume) (json.RawMessage, error) {
	var cur *DiffCursor
	var offset int64
	if in.Cursor != nil {
		dc, err := DecodeDiffCursor(*in.Cursor)
		if err != nil {
			return nil, err
		}
		if !dc.matches(in.Owner, in.Repo, in.Index) {
			return nil, cursorInvalid("the cursor belongs to another pull request")
		}
		cur, offset = &dc, dc.Offset
	}
	// Measured before the upstream request: an id the SDK cannot echo
	// fails here, not after a whole diff was read.
	env, err := NewEnvelope(middleware.RecordFromContext(ctx).Call().ID, server)
	if err != nil {
		return nil, err
	}
	caller := middleware.RecordFromContext(ctx).Caller()
	if err := volume.Admit(caller); err != nil {
		return nil, err
	}
	v, err := c.PullDiffEvidence(ctx, cred, forgejo.DiffEvidenceRequest{
		Owner: in.Owner, Repo: in.Repo, Index: in.Index, Offset: offset, Window: evidence.MaxWindow,
	})
	if err != nil {
		return nil, err
	}
	volume.Spend(caller, v.Identity.ByteCount)
	if cur != nil && !cur.sameDiff(v.Identity) {
		return nil, toolerr.New(toolerr.CursorStale,
			"the pull request's diff changed since the cursor was issued; start again without a cursor")
	}
	f := &WindowFitter{
		Envelope: env,
		Limit:    EnvelopeLimit,
		page: diffpage.Page{
			Requested:              diffpage.Requested{Owner: in.Owner, Repo: in.Repo, Index: in.Index},
			Manifest:               v.Manifest,
			Contract:               diffContract,
			AtomicLatestPRSnapshot: false,
			ByteOffset:             v.Offset,
			Encoding:               diffEncoding,
			WholeDiffVerified:      true,
		},
		window:    v.Window,
		byteCount: v.Identity.ByteCount,
		cursor: func(next int64) string {
			return newDiffCursor(in.Owner, in.Repo, v.Identity, next).Encode()
		},
	}
	text, chunk, err := f.Fit()
	if err != nil {
		return nil, err
	}
	middleware.RecordFromContext(ctx).SetPage(chunk)
	audit.SetDiff(ctx, audit.DiffEvidence{
		DiffSHA256: v.Identity.SHA256, DiffBytes: v.Identity.ByteCount,
		BaseOID: v.Identity.BaseOID, HeadOID: v.Identity.HeadOID,
		ByteOffset: v.Offset, ChunkBytes: int64(chunk), ChunkSHA256: f.ChunkSHA256(chunk),
	})
	// Returned as the exact bytes that were measured: the toolset's
	// encoder passes compact JSON through unchanged.
	return json.RawMessage(text), nil
}
