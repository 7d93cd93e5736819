// Package toolerr is the one error type every refusal of the gateway becomes.
//
// A tool failure reaches the caller as a tool result with isError set and the
// JSON {"error":{"code":…,"message":…,…}}; a refusal made by middleware before
// any tool runs (401, 403, 413, 429) reaches it as an HTTP status with the same
// JSON body. Codes are stable strings that clients may switch on; messages are
// for humans and never contain upstream bodies, header values or credentials.
//
// The package is a leaf below every layer (under upstream/, the lowest one;
// it imports only the standard library), so errors flow downward: the upstream clients, the
// middleware and the handlers all return *Error without any of them
// importing a layer above it; one table (see Code.HTTPStatus) decides how
// a code is presented. The store returns its own sentinel errors, which the
// handlers map.
package toolerr

import (
	"errors"
	"fmt"
	"net/http"
)

// Code is a stable, machine-readable error code.
type Code string

// The stable codes. Adding one is a contract change: document it in docs/tools.md.
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
	BodyTooLarge      Code = "body_too_large"
	RateLimited       Code = "rate_limited"
	// Overloaded: a gateway-wide bound (requests in flight, request-body
	// bytes buffered, open connections) is reached; retry after Retry-After.
	Overloaded           Code = "overloaded"
	Internal             Code = "internal_error"
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

	// PR diff evidence (seed 000).
	EvidenceUnavailable      Code = "evidence_unavailable"
	EvidenceFraming          Code = "evidence_framing"
	EvidenceMalformed        Code = "evidence_malformed"
	EvidenceMetadataTooLarge Code = "evidence_metadata_too_large"
	CursorInvalid            Code = "cursor_invalid"
	CursorStale              Code = "cursor_stale"
	EnvelopeTooSmall         Code = "envelope_too_small"

	// Agent work grants (seed 004).
	DeliveryUncertain Code = "delivery_uncertain"

	// Documents (seed 002).
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

	// Instruction catalog and dispatch (seed 002, DESIGN §7).
	ProfileIncomplete     Code = "profile_incomplete"
	CatalogBudgetExceeded Code = "catalog_budget_exceeded"
	CatalogChanged        Code = "catalog_changed"
	ReplayMismatch        Code = "replay_mismatch"
)

// HTTPStatus is the status a refusal with this code carries when it is
// answered at the HTTP level (by middleware, before any tool runs). Tool
// failures are always HTTP 200 tool results; this table is for the rest.
func (c Code) HTTPStatus() int {
	switch c {
	case InvalidArguments, InvalidRequest, ParseError:
		return http.StatusBadRequest
	case Unauthenticated:
		return http.StatusUnauthorized
	case InsufficientScope, OriginForbidden:
		return http.StatusForbidden
	case BodyTooLarge:
		return http.StatusRequestEntityTooLarge
	case RateLimited:
		return http.StatusTooManyRequests
	case Overloaded:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// RPCCode is the JSON-RPC error code of a refusal answered as a JSON-RPC
// error (middleware refusals of a peeked call). Tool failures are results,
// not JSON-RPC errors, and do not use it.
func (c Code) RPCCode() int {
	switch c {
	case InvalidArguments:
		return -32602 // invalid params
	case InvalidRequest:
		return -32600 // invalid request
	case ParseError:
		return -32700 // parse error
	case Unauthenticated:
		return -32001
	case InsufficientScope, OriginForbidden:
		return -32003
	case BodyTooLarge:
		return -32013
	case RateLimited:
		return -32029
	case Overloaded:
		return -32053
	default:
		return -32603 // internal error
	}
}

// Error is a refusal with a stable code. Details are extra members of the
// error object (for example native_status or retry_after_seconds); they must
// never hold upstream bodies, header values or credentials.
type Error struct {
	Code    Code
	Message string
	Details map[string]any
	// Err is the cause, kept for logs and errors.Is/As; it is never shown to
	// callers.
	Err error
}

// New returns an Error with a code and a message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an Error with a code and a message that keeps cause for logs.
func Wrap(cause error, code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: cause}
}

// With returns a copy of e with one more detail member.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Details = make(map[string]any, len(e.Details)+1)
	for k, v := range e.Details {
		c.Details[k] = v
	}
	c.Details[key] = value
	return &c
}

// Error implements error. It shows the code and message, never the cause.
func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// As returns err as an *Error; any other error becomes internal_error with a
// generic message, so that no unvetted text ever reaches a caller.
func As(err error) *Error {
	var te *Error
	if errors.As(err, &te) {
		return te
	}
	return &Error{Code: Internal, Message: "internal error", Err: err}
}

// Body is the JSON object {"error":{…}} that carries e to a caller.
func (e *Error) Body() map[string]any {
	obj := make(map[string]any, len(e.Details)+2)
	for k, v := range e.Details {
		obj[k] = v
	}
	obj["code"] = e.Code
	obj["message"] = e.Message
	return map[string]any{"error": obj}
}
