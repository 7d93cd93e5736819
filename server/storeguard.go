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
// the authorization server behind the store's circuit breaker, as bearer
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

// guardWriteErr is guardWrite for a write that returns only an error.
func guardWriteErr(g storeGuard, ctx context.Context, write func() error) error {
	_, err := guardWrite(g, ctx, func() (struct{}, error) { return struct{}{}, write() })
	return err
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

// guardedOAuthStore is the authorization server's store behind the
// guard: every call an OAuth request makes (registration, authorize,
// callback, consent, token, revocation) fails at once while the store is
// known to be down, instead of each waiting on a failing dial of its own;
// the handlers answer that 503 temporarily_unavailable. Reads count
// towards the breaker; writes only heed it (storeGuard).
type guardedOAuthStore struct {
	oauth.Store
	guard storeGuard
}

// Reads.

func (s guardedOAuthStore) GetClient(ctx context.Context, clientID string) (store.Client, error) {
	return guardRead(s.guard, ctx, func() (store.Client, error) { return s.Store.GetClient(ctx, clientID) })
}

func (s guardedOAuthStore) GetAuthorizationCode(ctx context.Context, codeHash string) (store.AuthorizationCode, error) {
	return guardRead(s.guard, ctx, func() (store.AuthorizationCode, error) { return s.Store.GetAuthorizationCode(ctx, codeHash) })
}

func (s guardedOAuthStore) GetToken(ctx context.Context, tokenHash string) (store.TokenRecord, error) {
	return guardRead(s.guard, ctx, func() (store.TokenRecord, error) { return s.Store.GetToken(ctx, tokenHash) })
}

func (s guardedOAuthStore) GetLoginSession(ctx context.Context, sessionHash string) (store.LoginSession, error) {
	return guardRead(s.guard, ctx, func() (store.LoginSession, error) { return s.Store.GetLoginSession(ctx, sessionHash) })
}

func (s guardedOAuthStore) GetConsent(ctx context.Context, consentID string) (store.Consent, error) {
	return guardRead(s.guard, ctx, func() (store.Consent, error) { return s.Store.GetConsent(ctx, consentID) })
}

func (s guardedOAuthStore) ConsentChoices(ctx context.Context, subject, clientID string) ([]store.ConsentChoice, error) {
	return guardRead(s.guard, ctx, func() ([]store.ConsentChoice, error) { return s.Store.ConsentChoices(ctx, subject, clientID) })
}

// Writes.

func (s guardedOAuthStore) RegisterClient(ctx context.Context, name string, redirectURIs []string) (store.Client, error) {
	return guardWrite(s.guard, ctx, func() (store.Client, error) { return s.Store.RegisterClient(ctx, name, redirectURIs) })
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

func (s guardedOAuthStore) CreateLoginSessionCapped(ctx context.Context, ls store.LoginSession, maxLive int) (int64, error) {
	return guardWrite(s.guard, ctx, func() (int64, error) { return s.Store.CreateLoginSessionCapped(ctx, ls, maxLive) })
}

func (s guardedOAuthStore) CreateConsent(ctx context.Context, projectID, subject, clientID string, scopes []string) (store.Consent, error) {
	return guardWrite(s.guard, ctx, func() (store.Consent, error) {
		return s.Store.CreateConsent(ctx, projectID, subject, clientID, scopes)
	})
}

func (s guardedOAuthStore) AnswerConsent(ctx context.Context, a store.ConsentAnswer) (store.Consent, error) {
	return guardWrite(s.guard, ctx, func() (store.Consent, error) { return s.Store.AnswerConsent(ctx, a) })
}

func (s guardedOAuthStore) CreateAuthorizationCode(ctx context.Context, c store.AuthorizationCode) error {
	return guardWriteErr(s.guard, ctx, func() error { return s.Store.CreateAuthorizationCode(ctx, c) })
}

func (s guardedOAuthStore) SetCodeChallenge(ctx context.Context, codeHash, challenge, method string) error {
	return guardWriteErr(s.guard, ctx, func() error { return s.Store.SetCodeChallenge(ctx, codeHash, challenge, method) })
}

func (s guardedOAuthStore) ClearCodeChallenge(ctx context.Context, codeHash string) error {
	return guardWriteErr(s.guard, ctx, func() error { return s.Store.ClearCodeChallenge(ctx, codeHash) })
}

func (s guardedOAuthStore) RedeemAuthorizationCode(ctx context.Context, codeHash string, tokens ...store.HashedToken) error {
	return guardWriteErr(s.guard, ctx, func() error { return s.Store.RedeemAuthorizationCode(ctx, codeHash, tokens...) })
}

func (s guardedOAuthStore) RotateRefreshTokenHash(ctx context.Context, refreshHash string, tokens ...store.HashedToken) error {
	return guardWriteErr(s.guard, ctx, func() error { return s.Store.RotateRefreshTokenHash(ctx, refreshHash, tokens...) })
}

func (s guardedOAuthStore) RevokeTokenFamily(ctx context.Context, familyID string) error {
	return guardWriteErr(s.guard, ctx, func() error { return s.Store.RevokeTokenFamily(ctx, familyID) })
}

func (s guardedOAuthStore) RevokeTokenHash(ctx context.Context, tokenHash string) error {
	return guardWriteErr(s.guard, ctx, func() error { return s.Store.RevokeTokenHash(ctx, tokenHash) })
}

func (s guardedOAuthStore) CreateLoginSession(ctx context.Context, ls store.LoginSession) error {
	return guardWriteErr(s.guard, ctx, func() error { return s.Store.CreateLoginSession(ctx, ls) })
}

func (s guardedOAuthStore) SetLoginSubject(ctx context.Context, sessionHash, subject string) error {
	return guardWriteErr(s.guard, ctx, func() error { return s.Store.SetLoginSubject(ctx, sessionHash, subject) })
}

func (s guardedOAuthStore) DeleteLoginSession(ctx context.Context, sessionHash string) error {
	return guardWriteErr(s.guard, ctx, func() error { return s.Store.DeleteLoginSession(ctx, sessionHash) })
}
