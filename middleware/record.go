// Package middleware holds the gateway's HTTP middleware, one concern per
// file, in the order server's Gateway.Handler and mcpChain stack them. No
// business logic lives here: decisions that depend on a tool (its scopes, its
// budget) come from narrow interfaces the toolsets implement.
package middleware

import (
	"context"
	"encoding/json"
	"net/netip"
	"sync"
)

// Record is the mutable per-request record shared along the chain: the
// request ID middleware creates it, the MCP peek fills in the call, the
// authenticator the caller, the tool handler the outcome, and the access log
// and metrics read it when the response is done. Only bounded, non-secret
// values go in it.
type Record struct {
	mu        sync.Mutex
	requestID string
	clientIP  string // the full address, for logs
	clientKey string // ClientKey of it, for the per-address bounds
	call      Call
	caller    string // hashed or opaque caller key, never a credential
	outcome   string // "ok" or a stable error code
	page      int    // bytes of content served by a paging tool; -1 for none
	pageSet   bool
	owned     bool // answered by the gateway's own tools/call path
}

// Call is what the MCP peek learned from the JSON-RPC envelope.
type Call struct {
	Method string          // JSON-RPC method, e.g. "tools/call"
	Tool   string          // params.name of a tools/call
	ID     json.RawMessage // the request id exactly as sent (nil for notifications)
}

type recordKey struct{}

// WithRecord returns ctx carrying rec.
func WithRecord(ctx context.Context, rec *Record) context.Context {
	return context.WithValue(ctx, recordKey{}, rec)
}

// RecordFromContext returns the request's record, or a fresh detached one so
// callers never need a nil check (stdio and unit tests have no chain).
func RecordFromContext(ctx context.Context) *Record {
	if rec, ok := ctx.Value(recordKey{}).(*Record); ok {
		return rec
	}
	return &Record{}
}

// RequestID returns the request ID.
func (r *Record) RequestID() string { r.mu.Lock(); defer r.mu.Unlock(); return r.requestID }

// ClientIP returns the client's full address, as the access log shows it;
// the per-address bounds count by ClientKey instead.
func (r *Record) ClientIP() string { r.mu.Lock(); defer r.mu.Unlock(); return r.clientIP }

// ClientKey returns the key the per-address bounds count the client under
// (ClientKey of its address), or "" before ClientIP has run.
func (r *Record) ClientKey() string { r.mu.Lock(); defer r.mu.Unlock(); return r.clientKey }

// setClient records the client address a and its key; an invalid a
// leaves both empty.
func (r *Record) setClient(a netip.Addr, ipv6Prefix int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a.IsValid() {
		r.clientIP, r.clientKey = a.Unmap().String(), ClientKey(a, ipv6Prefix)
	}
}

// Call returns the peeked JSON-RPC call.
func (r *Record) Call() Call { r.mu.Lock(); defer r.mu.Unlock(); return r.call }

// SetCall stores the peeked call.
func (r *Record) SetCall(c Call) { r.mu.Lock(); r.call = c; r.mu.Unlock() }

// Caller returns the caller key.
func (r *Record) Caller() string { r.mu.Lock(); defer r.mu.Unlock(); return r.caller }

// SetCaller stores the caller key (a hash or an opaque ID, never a secret).
func (r *Record) SetCaller(key string) { r.mu.Lock(); r.caller = key; r.mu.Unlock() }

// Outcome returns "ok", a stable error code, or "" when nothing was recorded.
func (r *Record) Outcome() string { r.mu.Lock(); defer r.mu.Unlock(); return r.outcome }

// SetOutcome records the tool outcome.
func (r *Record) SetOutcome(o string) { r.mu.Lock(); r.outcome = o; r.mu.Unlock() }

// SetOwned marks the call as answered by the gateway's own tools/call
// path (handlers/toolset/owned.go) rather than the SDK's handler.
func (r *Record) SetOwned() { r.mu.Lock(); r.owned = true; r.mu.Unlock() }

// Owned reports whether SetOwned was called.
func (r *Record) Owned() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.owned }

// SetPage records that the call served one page (a diff window or a
// document fragment) of n content bytes, for the pages-served metrics.
func (r *Record) SetPage(n int) { r.mu.Lock(); r.page, r.pageSet = n, true; r.mu.Unlock() }

// Page returns the bytes of the page served and whether one was.
func (r *Record) Page() (int, bool) { r.mu.Lock(); defer r.mu.Unlock(); return r.page, r.pageSet }
