package toolerr

import (
	"fmt"
	"net/http"
)

// Code is a stable, machine-readable error code.
type Code string

// outcome is how one code reaches a caller. status and rpc are the HTTP
// status and JSON-RPC error code of a refusal with the code answered
// before any tool runs (middleware); both are zero for a code that only
// ever arrives inside a tool result (HTTP 200, isError). meaning is the
// code's line in docs/tools.md#error-codes.
type outcome struct {
	code    Code
	status  int
	rpc     int
	meaning string
}

// The stable codes. Adding one is a contract change: give it its row in
// outcomes below and the same row in docs/tools.md's "Error codes" table;
// the package's tests fail until both exist and agree.
const (
	// Caller and transport refusals.
	InvalidArguments Code = "invalid_arguments"
	// InvalidRequest: a JSON-RPC message the gateway will not pass to the
	// SDK as it is (an id it could not echo exactly; over stdio, a line
	// that is JSON but not one object).
	InvalidRequest Code = "invalid_request"
	// ParseError: a stdio line that is not one complete JSON text (JSON-RPC
	// -32700); the line never reaches the SDK.
	ParseError        Code = "parse_error"
	Unauthenticated   Code = "unauthenticated"
	InsufficientScope Code = "insufficient_scope"
	OriginForbidden   Code = "origin_forbidden"
	// UnknownEndpoint: a path under /mcp that is neither MCP endpoint (a
	// client given the gateway's root, or an /mcp it guessed); the answer
	// names both real endpoints.
	UnknownEndpoint Code = "unknown_endpoint"
	BodyTooLarge    Code = "body_too_large"
	RateLimited     Code = "rate_limited"
	// Overloaded: a gateway-wide bound (requests in flight, request-body
	// bytes buffered, open connections) is reached; retry after Retry-After.
	Overloaded Code = "overloaded"
	// Unavailable: one of the gateway's own dependencies (the token store,
	// the budget store) failed; the gateway's fault, never the caller's.
	Unavailable Code = "unavailable"
	Internal    Code = "internal_error"
	// AuditUnavailable: audit.mode is required and the call's audit record
	// could not be queued (docs/audit.md); nothing of the result was
	// answered.
	AuditUnavailable     Code = "audit_unavailable"
	UpstreamUnconfigured Code = "upstream_unconfigured"

	// Native (Forgejo) upstream outcomes shared by every Forgejo tool.
	BadRequest           Code = "bad_request"
	UpstreamUnauthorized Code = "upstream_unauthorized"
	Forbidden            Code = "forbidden"
	NotFound             Code = "not_found"
	Conflict             Code = "conflict"
	RedirectRefused      Code = "redirect_refused"
	UpstreamTimeout      Code = "upstream_timeout"
	UpstreamUnavailable  Code = "upstream_unavailable"
	UpstreamMalformed    Code = "upstream_malformed"
	// ForgeUnsupported: the forge answered a Core extension's route the way
	// a stock forge does (not JSON where Core answers JSON): it lacks the
	// extension, which the error's "extension" detail names.
	ForgeUnsupported Code = "forge_unsupported"

	// PR diff evidence (docs/architecture.md#diff-errors).
	EvidenceUnavailable      Code = "evidence_unavailable"
	EvidenceFraming          Code = "evidence_framing"
	EvidenceMalformed        Code = "evidence_malformed"
	EvidenceMetadataTooLarge Code = "evidence_metadata_too_large"
	CursorInvalid            Code = "cursor_invalid"
	CursorStale              Code = "cursor_stale"
	EnvelopeTooSmall         Code = "envelope_too_small"

	// Agent work grants (docs/architecture.md#agent-work-grant-contract).
	DeliveryUncertain Code = "delivery_uncertain"

	// Documents (docs/architecture.md#documents-contract).
	RuntimeUnconfigured    Code = "runtime_unconfigured"
	SourceRequiresDispatch Code = "source_requires_dispatch"
	SourceRevoked          Code = "source_revoked"
	NotRegularFile         Code = "not_regular_file"
	NotUTF8                Code = "not_utf8"
	FileTooLarge           Code = "file_too_large"
	RangeNotUTF8Boundary   Code = "range_not_utf8_boundary"
	ProviderNotFound       Code = "provider_not_found"
	ProviderForbidden      Code = "provider_forbidden"
	ProviderUnavailable    Code = "provider_unavailable"
	ProviderUnconfigured   Code = "provider_unconfigured"
	ProviderMalformed      Code = "provider_malformed"
	ProviderRateLimited    Code = "provider_rate_limited"
	ResponseTooLarge       Code = "response_too_large"

	// Instruction catalog and dispatch
	// (docs/architecture.md#instruction-catalog-contract).
	ProfileIncomplete     Code = "profile_incomplete"
	CatalogBudgetExceeded Code = "catalog_budget_exceeded"
	CatalogChanged        Code = "catalog_changed"
	ReplayMismatch        Code = "replay_mismatch"
)

// outcomes is the one table of codes: it decides each code's presentation
// (HTTPStatus, RPCCode) and its reference line in docs/tools.md, in the
// order the document lists them.
var outcomes = []outcome{
	{InvalidArguments, http.StatusBadRequest, -32602, "arguments refused (`argument` names the member), or a request body that is not one plain JSON-RPC message; before any upstream or store request"},
	{InvalidRequest, http.StatusBadRequest, -32600, "a JSON-RPC request id the gateway could not echo exactly, or a stdio line that is JSON but not one object, refused before the MCP server sees the message"},
	{ParseError, http.StatusBadRequest, -32700, "a stdio line that is not one complete JSON text; the line never reaches the MCP server"},
	{Unauthenticated, http.StatusUnauthorized, -32001, "no valid credential for a call that needs one (none, malformed, unknown, expired or revoked); over HTTP, `WWW-Authenticate` names the endpoint's `resource_metadata`"},
	{InsufficientScope, http.StatusForbidden, -32003, "the caller's consent lacks a scope the tool needs; `WWW-Authenticate` names it"},
	{OriginForbidden, http.StatusForbidden, -32003, "a browser `Origin` that is not allowed"},
	{UnknownEndpoint, http.StatusNotFound, -32004, "a request to `/mcp` or another path under it that is no MCP endpoint; `endpoints` lists the two this gateway serves (`/mcp/forgejo`, `/mcp/documents`)"},
	{BodyTooLarge, http.StatusRequestEntityTooLarge, -32013, "a request body over 1 MiB, or over the client IP's body budget"},
	{RateLimited, http.StatusTooManyRequests, -32029, "a caller's or client IP's budget is spent (`budget` or `bound` names it); `Retry-After` says when to retry, and the error repeats it as `retry_after_seconds`"},
	{Overloaded, http.StatusServiceUnavailable, -32053, "a gateway-wide bound is reached (`bound` names it); `Retry-After: 1`, repeated as `retry_after_seconds`"},
	{Unavailable, http.StatusServiceUnavailable, -32054, "a dependency of the gateway failed (`dependency` names it: `token store`, `budget store`, or `store` when a document or catalog tool's own read or write failed — a lost database, a full disk — which is a tool result with `isError`); the message says which, the cause is only logged; `Retry-After: 1`, repeated as `retry_after_seconds`; no allowance of the caller is spent"},
	{Internal, http.StatusInternalServerError, -32603, "an unexpected failure inside the gateway (a store error, a result it could not encode, a recovered panic); the message is generic and the cause only logged"},
	{AuditUnavailable, 0, 0, "`audit.mode` is `required` and the call's audit record could not be queued (docs/audit.md); nothing of the result was answered; retry later"},
	{UpstreamUnconfigured, 0, 0, "the gateway has no `forgejo.origin`"},

	{BadRequest, 0, 0, "Forgejo answered 400 or 422"},
	{UpstreamUnauthorized, 0, 0, "Forgejo answered 401 (unknown or revoked token)"},
	{Forbidden, 0, 0, "Forgejo answered 403"},
	{NotFound, 0, 0, "no such object: Forgejo answered 404 (also for a private repository the caller cannot see), or no such source, profile or workflow in the caller's project"},
	{Conflict, 0, 0, "Forgejo answered 409"},
	{RedirectRefused, 0, 0, "the upstream answered 3xx; its `Location` is never read or followed"},
	{UpstreamTimeout, 0, 0, "Forgejo made no progress within `forgejo.io_timeout`"},
	{UpstreamUnavailable, 0, 0, "the connection to Forgejo failed or broke, or Forgejo answered an unexpected status"},
	{UpstreamMalformed, 0, 0, "Forgejo's answer failed the checks: media type, compression, JSON or size"},
	{ForgeUnsupported, 0, 0, "the forge lacks a Core extension the tool needs (`extension` names it)"},

	{EvidenceUnavailable, 0, 0, "Forgejo answered the diff evidence route with a status no other code covers (`native_status`)"},
	{EvidenceFraming, 0, 0, "the diff evidence response's headers or length framing were refused"},
	{EvidenceMalformed, 0, 0, "the diff evidence entity is not valid evidence"},
	{EvidenceMetadataTooLarge, 0, 0, "the diff evidence entity's metadata is over 64 KiB"},
	{CursorInvalid, 0, 0, "a cursor that is malformed, altered, expired, too long, or issued for another caller or object"},
	{CursorStale, 0, 0, "what the cursor points into changed since it was issued; restart without it"},
	{EnvelopeTooSmall, 0, 0, "a diff page's metadata leaves no room for diff bytes within 49,000 bytes"},

	{DeliveryUncertain, 0, 0, "a grant write whose outcome is unknown; read back with the same arguments (`readback`)"},

	{RuntimeUnconfigured, 0, 0, "the project has no active runtime source"},
	{SourceRequiresDispatch, 0, 0, "the source tracks a branch; it is read only through workflow dispatch"},
	{SourceRevoked, 0, 0, "the source, or its repository link, has been revoked"},
	{NotRegularFile, 0, 0, "the path is a directory, symlink or submodule (`type` says which)"},
	{NotUTF8, 0, 0, "the file is not valid UTF-8"},
	{FileTooLarge, 0, 0, "the file is over 1 MiB"},
	{RangeNotUTF8Boundary, 0, 0, "`start_byte` is inside a UTF-8 character, or `max_bytes` is smaller than the character there"},
	{ProviderNotFound, 0, 0, "GitHub answered 404: no such path at the commit, or the installation cannot see the repository"},
	{ProviderForbidden, 0, 0, "GitHub answered 401 or 403, or refused the App's credentials"},
	{ProviderUnavailable, 0, 0, "the connection to GitHub failed, timed out or broke, or GitHub answered 5xx or another status"},
	{ProviderUnconfigured, 0, 0, "no GitHub App is configured, or GitHub does not know the repository's installation"},
	{ProviderMalformed, 0, 0, "GitHub's answer failed the checks: not JSON, compressed, truncated, malformed, or a size or blob ID that does not match"},
	{ProviderRateLimited, 0, 0, "GitHub's rate limit is spent (`retry_after_seconds`)"},
	{ResponseTooLarge, 0, 0, "GitHub's answer is over 1,500,000 bytes"},

	{ProfileIncomplete, 0, 0, "the profile names no role responsibilities"},
	{CatalogBudgetExceeded, 0, 0, "the raw text of a profile's layers is over 61,440 bytes"},
	{CatalogChanged, 0, 0, "the profile or the account's layers changed during the dispatch; nothing was stored"},
	{ReplayMismatch, 0, 0, "a layer read at its frozen commit does not match its SHA-256 or length"},
}

// outcomeOf is outcomes by code.
var outcomeOf = indexOutcomes(outcomes)

// indexOutcomes indexes a table by code. A code listed twice, or with only
// one of status and rpc, is a programming error and stops the program at
// start.
func indexOutcomes(table []outcome) map[Code]outcome {
	m := make(map[Code]outcome, len(table))
	for _, o := range table {
		if _, dup := m[o.code]; dup {
			panic(fmt.Sprintf("toolerr: code %s is listed twice", o.code))
		}
		if (o.status == 0) != (o.rpc == 0) {
			panic(fmt.Sprintf("toolerr: code %s has an HTTP status without a JSON-RPC code or the reverse", o.code))
		}
		m[o.code] = o
	}
	return m
}

// HTTPStatus is the status a refusal with this code carries when it is
// answered at the HTTP level (by middleware, before any tool runs). Tool
// failures are always HTTP 200 tool results; a code the table gives no
// status (tool results only) falls back to 500, like internal_error.
func (c Code) HTTPStatus() int {
	if o := outcomeOf[c]; o.status != 0 {
		return o.status
	}
	return http.StatusInternalServerError
}

// RPCCode is the JSON-RPC error code of a refusal answered as a JSON-RPC
// error (middleware refusals of a peeked call). Tool failures are results,
// not JSON-RPC errors, and do not use it; a code the table gives none
// falls back to -32603 (internal error).
func (c Code) RPCCode() int {
	if o := outcomeOf[c]; o.rpc != 0 {
		return o.rpc
	}
	return -32603
}

// Codes are every code of the table, in its order: what a test that must
// cover every code ranges over.
func Codes() []Code {
	out := make([]Code, len(outcomes))
	for i, o := range outcomes {
		out[i] = o.code
	}
	return out
}
