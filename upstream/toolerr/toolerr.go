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
// importing a layer above it; one table (codes.go) owns every code and
// decides how it is presented. The store returns its own sentinel errors, which the
// handlers map.
package toolerr

import (
	"errors"
	"fmt"
)

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

// RPCError is the JSON-RPC error response that carries e to a caller:
// id is the request's own (nil for null, when there is none to echo),
// the error's code is RPCCode, and its data is Body's error object.
func (e *Error) RPCError(id any) map[string]any {
	return map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error": map[string]any{
			"code":    e.Code.RPCCode(),
			"message": e.Message,
			"data":    e.Body()["error"],
		},
	}
}
