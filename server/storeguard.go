package server

import (
	"context"

	"github.com/agent-gateway/agent-gateway/handlers/documents"
	"github.com/agent-gateway/agent-gateway/handlers/instructions"
	"github.com/agent-gateway/agent-gateway/handlers/oauth"
	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/store"
)

// storeGuard puts the store calls of the document and catalog tools and of
// client registration behind the store's circuit breaker, as bearer
// lookups are (oauth.NewStoreAuthenticator): while the store is known to
// be down a call fails at once instead of waiting on a dial of its own,
// and a failure of the store — not an answer of it (store.Answered), nor
// a caller that left — is the store's unavailability
// (middleware.ErrUnavailable), which the toolset answers `unavailable`
// naming the store, not internal_error. Reads count towards the breaker;
// a write only heeds it (Breaker.Cooling): it can fail for the disk alone,
// which reads do not share, so it must not make reads fail.
type storeGuard struct {
	breaker *middleware.Breaker
}

// failed reports whether err is the store failing for a caller still
// waiting.
func failed(ctx context.Context, err error) bool {
	return err != nil && !store.Answered(err) && ctx.Err() == nil
}

// named returns err as the store's unavailability when it is a failure.
func named(ctx context.Context, err error) error {
	if failed(ctx, err) {
		return middleware.Unavailable(middleware.PartStore, err)
	}
	return err
}

// guardRead runs one store read through the breaker.
func guardRead[T any](g storeGuard, ctx context.Context, read func() (T, error)) (T, error) {
	var v T
	err := g.breaker.Do(func() (err error) { v, err = read(); return err }, func(err error) bool { return failed(ctx, err) })
	return v, named(ctx, err)
}

// guardWrite runs one store write unless the breaker is cooling, without
// recording its outcome.
func guardWrite[T any](g storeGuard, ctx context.Context, write func() (T, error)) (T, error) {
	if g.breaker.Cooling() {
		var zero T
		return zero, middleware.Unavailable(middleware.PartStore, middleware.ErrBreakerOpen)
	}
	v, err := write()
	return v, named(ctx, err)
}

// guardedSources are documents.Sources behind the guard.
type guardedSources struct {
	storeGuard
	next documents.Sources
}

func (s guardedSources) GetDocumentSource(ctx context.Context, projectID, sourceID string) (store.DocumentSource, error) {
	return guardRead(s.storeGuard, ctx, func() (store.DocumentSource, error) { return s.next.GetDocumentSource(ctx, projectID, sourceID) })
}

func (s guardedSources) ListDocumentSources(ctx context.Context, projectID string, includeRevoked bool) ([]store.DocumentSource, error) {
	return guardRead(s.storeGuard, ctx, func() ([]store.DocumentSource, error) {
		return s.next.ListDocumentSources(ctx, projectID, includeRevoked)
	})
}

// guardedCatalog is instructions.Store behind the guard.
type guardedCatalog struct {
	storeGuard
	next instructions.Store
}

func (s guardedCatalog) ListProfiles(ctx context.Context, accountID, projectID string) ([]store.CatalogProfile, error) {
	return guardRead(s.storeGuard, ctx, func() ([]store.CatalogProfile, error) { return s.next.ListProfiles(ctx, accountID, projectID) })
}

func (s guardedCatalog) CatalogPlan(ctx context.Context, projectID, profileID string) (store.CatalogPlan, error) {
	return guardRead(s.storeGuard, ctx, func() (store.CatalogPlan, error) { return s.next.CatalogPlan(ctx, projectID, profileID) })
}

func (s guardedCatalog) GetWorkflow(ctx context.Context, projectID, workflowID string) (store.Workflow, error) {
	return guardRead(s.storeGuard, ctx, func() (store.Workflow, error) { return s.next.GetWorkflow(ctx, projectID, workflowID) })
}

func (s guardedCatalog) CreateWorkflow(ctx context.Context, w store.NewWorkflow) (store.Workflow, error) {
	return guardWrite(s.storeGuard, ctx, func() (store.Workflow, error) { return s.next.CreateWorkflow(ctx, w) })
}

// guardedOAuthStore is the authorization server's store with client
// registration — an open endpoint that writes — behind the guard; its
// other calls go straight through.
type guardedOAuthStore struct {
	oauth.Store
	guard storeGuard
}

func (s guardedOAuthStore) RegisterClientCapped(ctx context.Context, name string, redirectURIs []string, maxUnused int) (store.Client, int64, error) {
	type registered struct {
		c       store.Client
		evicted int64
	}
	r, err := guardWrite(s.guard, ctx, func() (registered, error) {
		c, evicted, err := s.Store.RegisterClientCapped(ctx, name, redirectURIs, maxUnused)
		return registered{c, evicted}, err
	})
	return r.c, r.evicted, err
}
