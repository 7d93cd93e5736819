package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Traced wraps st so that each store call made within a traced MCP call is
// a child span (tracing.otlp_endpoint), named after the method, with the
// backend and the error class, never an argument: arguments are token
// hashes, project and source IDs, subjects. A call with no recording span
// in its context (the purge loop, readiness probes, admin commands) starts
// none, so it costs one context lookup. Every method is listed, not
// embedded, so a method added to Store fails to compile here until it is
// traced too; each is one call of the helper call below, and
// TestTracedCoversEveryMethod checks that each traces under its own name.
func Traced(st Store, tracer trace.Tracer, system string) Store {
	return tracedStore{next: st, tracer: tracer, system: system}
}

type tracedStore struct {
	next   Store
	tracer trace.Tracer
	system string // "sqlite" or "postgresql"
}

// storeSpan ends a store call's span; the zero value (no span) does nothing.
type storeSpan struct{ span trace.Span }

func (t tracedStore) start(ctx context.Context, method string) (context.Context, storeSpan) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, storeSpan{}
	}
	ctx, span := t.tracer.Start(ctx, "store."+method, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("db.system", t.system), attribute.String("db.operation.name", method)))
	return ctx, storeSpan{span: span}
}

func (s storeSpan) end(err error) {
	if s.span == nil {
		return
	}
	if err != nil {
		// The class, not the message: messages may quote a name.
		class := "error"
		switch {
		case errors.Is(err, ErrNotFound):
			class = "not_found"
		case errors.Is(err, ErrConflict):
			class = "conflict"
		case errors.Is(err, ErrInvalid):
			class = "invalid"
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			class = "canceled"
		}
		s.span.SetAttributes(attribute.String("error.type", class))
		if class == "error" || class == "canceled" {
			s.span.SetStatus(codes.Error, class)
		}
	}
	s.span.End()
}

// call runs one store call inside its span: f gets the span's context, so
// that whatever the call starts is the span's child, and its error ends
// the span with a class. Every traced method is this one line, under its
// own name (TestTracedCoversEveryMethod checks each).
func call[T any](t tracedStore, ctx context.Context, method string, f func(context.Context) (T, error)) (T, error) {
	ctx, span := t.start(ctx, method)
	v, err := f(ctx)
	span.end(err)
	return v, err
}

// callErr is call for a method that returns only an error.
func callErr(t tracedStore, ctx context.Context, method string, f func(context.Context) error) error {
	_, err := call(t, ctx, method, func(ctx context.Context) (struct{}, error) { return struct{}{}, f(ctx) })
	return err
}

// Ping implements Store; readiness probes are not traced.
func (t tracedStore) Ping(ctx context.Context) error { return t.next.Ping(ctx) }

// ProbeWrite implements Store; readiness probes are not traced.
func (t tracedStore) ProbeWrite(ctx context.Context) error { return t.next.ProbeWrite(ctx) }

// PoolStats implements Store.
func (t tracedStore) PoolStats() sql.DBStats { return t.next.PoolStats() }

// Close implements Store.
func (t tracedStore) Close() error { return t.next.Close() }

// AddDocumentSource implements Store.
func (t tracedStore) AddDocumentSource(ctx context.Context, src NewDocumentSource) (DocumentSource, error) {
	return call(t, ctx, "AddDocumentSource", func(ctx context.Context) (DocumentSource, error) { return t.next.AddDocumentSource(ctx, src) })
}

// AddInstructionSource implements Store.
func (t tracedStore) AddInstructionSource(ctx context.Context, src NewInstructionSource) (InstructionSource, error) {
	return call(t, ctx, "AddInstructionSource", func(ctx context.Context) (InstructionSource, error) { return t.next.AddInstructionSource(ctx, src) })
}

// AddMember implements Store.
func (t tracedStore) AddMember(ctx context.Context, projectID string, subject string) error {
	return callErr(t, ctx, "AddMember", func(ctx context.Context) error { return t.next.AddMember(ctx, projectID, subject) })
}

// AnswerConsent implements Store.
func (t tracedStore) AnswerConsent(ctx context.Context, a ConsentAnswer) (Consent, error) {
	return call(t, ctx, "AnswerConsent", func(ctx context.Context) (Consent, error) { return t.next.AnswerConsent(ctx, a) })
}

// CatalogPlan implements Store.
func (t tracedStore) CatalogPlan(ctx context.Context, projectID string, profileID string) (CatalogPlan, error) {
	return call(t, ctx, "CatalogPlan", func(ctx context.Context) (CatalogPlan, error) { return t.next.CatalogPlan(ctx, projectID, profileID) })
}

// ClearCodeChallenge implements Store.
func (t tracedStore) ClearCodeChallenge(ctx context.Context, codeHash string) error {
	return callErr(t, ctx, "ClearCodeChallenge", func(ctx context.Context) error { return t.next.ClearCodeChallenge(ctx, codeHash) })
}

// ConsentChoices implements Store.
func (t tracedStore) ConsentChoices(ctx context.Context, subject string, clientID string) ([]ConsentChoice, error) {
	return call(t, ctx, "ConsentChoices", func(ctx context.Context) ([]ConsentChoice, error) {
		return t.next.ConsentChoices(ctx, subject, clientID)
	})
}

// CountOAuthRows implements Store.
func (t tracedStore) CountOAuthRows(ctx context.Context) (OAuthRowCounts, error) {
	return call(t, ctx, "CountOAuthRows", func(ctx context.Context) (OAuthRowCounts, error) { return t.next.CountOAuthRows(ctx) })
}

// CreateAccount implements Store.
func (t tracedStore) CreateAccount(ctx context.Context, name string) (Account, error) {
	return call(t, ctx, "CreateAccount", func(ctx context.Context) (Account, error) { return t.next.CreateAccount(ctx, name) })
}

// CreateAuthorizationCode implements Store.
func (t tracedStore) CreateAuthorizationCode(ctx context.Context, c AuthorizationCode) error {
	return callErr(t, ctx, "CreateAuthorizationCode", func(ctx context.Context) error { return t.next.CreateAuthorizationCode(ctx, c) })
}

// CreateConsent implements Store.
func (t tracedStore) CreateConsent(ctx context.Context, projectID string, subject string, clientID string, scopes []string) (Consent, error) {
	return call(t, ctx, "CreateConsent", func(ctx context.Context) (Consent, error) {
		return t.next.CreateConsent(ctx, projectID, subject, clientID, scopes)
	})
}

// CreateLoginSession implements Store.
func (t tracedStore) CreateLoginSession(ctx context.Context, s LoginSession) error {
	return callErr(t, ctx, "CreateLoginSession", func(ctx context.Context) error { return t.next.CreateLoginSession(ctx, s) })
}

// CreateProfile implements Store.
func (t tracedStore) CreateProfile(ctx context.Context, p NewCatalogProfile) (CatalogProfile, error) {
	return call(t, ctx, "CreateProfile", func(ctx context.Context) (CatalogProfile, error) { return t.next.CreateProfile(ctx, p) })
}

// CreateProject implements Store.
func (t tracedStore) CreateProject(ctx context.Context, accountID string, name string) (Project, error) {
	return call(t, ctx, "CreateProject", func(ctx context.Context) (Project, error) { return t.next.CreateProject(ctx, accountID, name) })
}

// CreateWorkflow implements Store.
func (t tracedStore) CreateWorkflow(ctx context.Context, w NewWorkflow) (Workflow, error) {
	return call(t, ctx, "CreateWorkflow", func(ctx context.Context) (Workflow, error) { return t.next.CreateWorkflow(ctx, w) })
}

// DeleteClient implements Store.
func (t tracedStore) DeleteClient(ctx context.Context, clientID string) error {
	return callErr(t, ctx, "DeleteClient", func(ctx context.Context) error { return t.next.DeleteClient(ctx, clientID) })
}

// DeleteLoginSession implements Store.
func (t tracedStore) DeleteLoginSession(ctx context.Context, sessionHash string) error {
	return callErr(t, ctx, "DeleteLoginSession", func(ctx context.Context) error { return t.next.DeleteLoginSession(ctx, sessionHash) })
}

// FindAccountRepository implements Store.
func (t tracedStore) FindAccountRepository(ctx context.Context, accountID string, owner string, name string) (AccountRepository, error) {
	return call(t, ctx, "FindAccountRepository", func(ctx context.Context) (AccountRepository, error) {
		return t.next.FindAccountRepository(ctx, accountID, owner, name)
	})
}

// FindRepository implements Store.
func (t tracedStore) FindRepository(ctx context.Context, projectID string, owner string, name string) (Repository, error) {
	return call(t, ctx, "FindRepository", func(ctx context.Context) (Repository, error) {
		return t.next.FindRepository(ctx, projectID, owner, name)
	})
}

// GetAccount implements Store.
func (t tracedStore) GetAccount(ctx context.Context, accountID string) (Account, error) {
	return call(t, ctx, "GetAccount", func(ctx context.Context) (Account, error) { return t.next.GetAccount(ctx, accountID) })
}

// GetAuthorizationCode implements Store.
func (t tracedStore) GetAuthorizationCode(ctx context.Context, codeHash string) (AuthorizationCode, error) {
	return call(t, ctx, "GetAuthorizationCode", func(ctx context.Context) (AuthorizationCode, error) {
		return t.next.GetAuthorizationCode(ctx, codeHash)
	})
}

// GetClient implements Store.
func (t tracedStore) GetClient(ctx context.Context, clientID string) (Client, error) {
	return call(t, ctx, "GetClient", func(ctx context.Context) (Client, error) { return t.next.GetClient(ctx, clientID) })
}

// GetDocumentSource implements Store.
func (t tracedStore) GetDocumentSource(ctx context.Context, projectID string, sourceID string) (DocumentSource, error) {
	return call(t, ctx, "GetDocumentSource", func(ctx context.Context) (DocumentSource, error) {
		return t.next.GetDocumentSource(ctx, projectID, sourceID)
	})
}

// GetConsent implements Store.
func (t tracedStore) GetConsent(ctx context.Context, consentID string) (Consent, error) {
	return call(t, ctx, "GetConsent", func(ctx context.Context) (Consent, error) { return t.next.GetConsent(ctx, consentID) })
}

// GetLoginSession implements Store.
func (t tracedStore) GetLoginSession(ctx context.Context, sessionHash string) (LoginSession, error) {
	return call(t, ctx, "GetLoginSession", func(ctx context.Context) (LoginSession, error) { return t.next.GetLoginSession(ctx, sessionHash) })
}

// GetProfile implements Store.
func (t tracedStore) GetProfile(ctx context.Context, profileID string) (CatalogProfile, error) {
	return call(t, ctx, "GetProfile", func(ctx context.Context) (CatalogProfile, error) { return t.next.GetProfile(ctx, profileID) })
}

// GetProject implements Store.
func (t tracedStore) GetProject(ctx context.Context, projectID string) (Project, error) {
	return call(t, ctx, "GetProject", func(ctx context.Context) (Project, error) { return t.next.GetProject(ctx, projectID) })
}

// GetRepository implements Store.
func (t tracedStore) GetRepository(ctx context.Context, projectID string, repositoryID string) (Repository, error) {
	return call(t, ctx, "GetRepository", func(ctx context.Context) (Repository, error) {
		return t.next.GetRepository(ctx, projectID, repositoryID)
	})
}

// GetToken implements Store.
func (t tracedStore) GetToken(ctx context.Context, tokenHash string) (TokenRecord, error) {
	return call(t, ctx, "GetToken", func(ctx context.Context) (TokenRecord, error) { return t.next.GetToken(ctx, tokenHash) })
}

// GetWorkflow implements Store.
func (t tracedStore) GetWorkflow(ctx context.Context, projectID string, workflowID string) (Workflow, error) {
	return call(t, ctx, "GetWorkflow", func(ctx context.Context) (Workflow, error) { return t.next.GetWorkflow(ctx, projectID, workflowID) })
}

// IsMember implements Store.
func (t tracedStore) IsMember(ctx context.Context, projectID string, subject string) (bool, error) {
	return call(t, ctx, "IsMember", func(ctx context.Context) (bool, error) { return t.next.IsMember(ctx, projectID, subject) })
}

// IssueAccessToken implements Store.
func (t tracedStore) IssueAccessToken(ctx context.Context, consentID string, ttl time.Duration) (IssuedToken, error) {
	return call(t, ctx, "IssueAccessToken", func(ctx context.Context) (IssuedToken, error) { return t.next.IssueAccessToken(ctx, consentID, ttl) })
}

// IssueLegacyToken implements Store.
func (t tracedStore) IssueLegacyToken(ctx context.Context, projectID string, permissions []string) (IssuedLegacyToken, error) {
	return call(t, ctx, "IssueLegacyToken", func(ctx context.Context) (IssuedLegacyToken, error) {
		return t.next.IssueLegacyToken(ctx, projectID, permissions)
	})
}

// LinkAccountRepository implements Store.
func (t tracedStore) LinkAccountRepository(ctx context.Context, accountID string, owner string, name string, installationID int64) (AccountRepository, error) {
	return call(t, ctx, "LinkAccountRepository", func(ctx context.Context) (AccountRepository, error) {
		return t.next.LinkAccountRepository(ctx, accountID, owner, name, installationID)
	})
}

// LinkRepository implements Store.
func (t tracedStore) LinkRepository(ctx context.Context, projectID string, owner string, name string, installationID int64) (Repository, error) {
	return call(t, ctx, "LinkRepository", func(ctx context.Context) (Repository, error) {
		return t.next.LinkRepository(ctx, projectID, owner, name, installationID)
	})
}

// ListAccountLayers implements Store.
func (t tracedStore) ListAccountLayers(ctx context.Context, accountID string) ([]AccountLayer, error) {
	return call(t, ctx, "ListAccountLayers", func(ctx context.Context) ([]AccountLayer, error) { return t.next.ListAccountLayers(ctx, accountID) })
}

// ListActiveSourcesByRole implements Store.
func (t tracedStore) ListActiveSourcesByRole(ctx context.Context, projectID string, role string) ([]DocumentSource, error) {
	return call(t, ctx, "ListActiveSourcesByRole", func(ctx context.Context) ([]DocumentSource, error) {
		return t.next.ListActiveSourcesByRole(ctx, projectID, role)
	})
}

// ListClients implements Store.
func (t tracedStore) ListClients(ctx context.Context, unusedOnly bool) ([]Client, error) {
	return call(t, ctx, "ListClients", func(ctx context.Context) ([]Client, error) { return t.next.ListClients(ctx, unusedOnly) })
}

// ListDocumentSources implements Store.
func (t tracedStore) ListDocumentSources(ctx context.Context, projectID string, includeRevoked bool) ([]DocumentSource, error) {
	return call(t, ctx, "ListDocumentSources", func(ctx context.Context) ([]DocumentSource, error) {
		return t.next.ListDocumentSources(ctx, projectID, includeRevoked)
	})
}

// ListConsents implements Store.
func (t tracedStore) ListConsents(ctx context.Context, projectID string, includeRevoked bool) ([]Consent, error) {
	return call(t, ctx, "ListConsents", func(ctx context.Context) ([]Consent, error) {
		return t.next.ListConsents(ctx, projectID, includeRevoked)
	})
}

// ListInstructionSources implements Store.
func (t tracedStore) ListInstructionSources(ctx context.Context, accountID string, includeRevoked bool) ([]InstructionSource, error) {
	return call(t, ctx, "ListInstructionSources", func(ctx context.Context) ([]InstructionSource, error) {
		return t.next.ListInstructionSources(ctx, accountID, includeRevoked)
	})
}

// ListProfiles implements Store.
func (t tracedStore) ListProfiles(ctx context.Context, accountID string, projectID string) ([]CatalogProfile, error) {
	return call(t, ctx, "ListProfiles", func(ctx context.Context) ([]CatalogProfile, error) {
		return t.next.ListProfiles(ctx, accountID, projectID)
	})
}

// ListProjects implements Store.
func (t tracedStore) ListProjects(ctx context.Context, accountID string) ([]Project, error) {
	return call(t, ctx, "ListProjects", func(ctx context.Context) ([]Project, error) { return t.next.ListProjects(ctx, accountID) })
}

// ListProjectsForSubject implements Store.
func (t tracedStore) ListProjectsForSubject(ctx context.Context, subject string) ([]Project, error) {
	return call(t, ctx, "ListProjectsForSubject", func(ctx context.Context) ([]Project, error) { return t.next.ListProjectsForSubject(ctx, subject) })
}

// ListRepositories implements Store.
func (t tracedStore) ListRepositories(ctx context.Context, projectID string, includeRevoked bool) ([]Repository, error) {
	return call(t, ctx, "ListRepositories", func(ctx context.Context) ([]Repository, error) {
		return t.next.ListRepositories(ctx, projectID, includeRevoked)
	})
}

// ListWorkflows implements Store.
func (t tracedStore) ListWorkflows(ctx context.Context, projectID string, limit int) ([]Workflow, error) {
	return call(t, ctx, "ListWorkflows", func(ctx context.Context) ([]Workflow, error) { return t.next.ListWorkflows(ctx, projectID, limit) })
}

// LookupAccessToken implements Store.
func (t tracedStore) LookupAccessToken(ctx context.Context, secret string) (TokenConsent, error) {
	return call(t, ctx, "LookupAccessToken", func(ctx context.Context) (TokenConsent, error) { return t.next.LookupAccessToken(ctx, secret) })
}

// LookupLegacyToken implements Store.
func (t tracedStore) LookupLegacyToken(ctx context.Context, secret string) (LegacyToken, error) {
	return call(t, ctx, "LookupLegacyToken", func(ctx context.Context) (LegacyToken, error) { return t.next.LookupLegacyToken(ctx, secret) })
}

// PurgeWorkflows implements Store.
func (t tracedStore) PurgeWorkflows(ctx context.Context, p WorkflowPurgePolicy) (PurgeResult, error) {
	ctx, span := t.start(ctx, "PurgeWorkflows")
	v, err := t.next.PurgeWorkflows(ctx, p)
	span.end(err)
	return v, err
}

// PurgeOAuth implements Store.
func (t tracedStore) PurgeOAuth(ctx context.Context, p PurgePolicy) (PurgeResult, error) {
	return call(t, ctx, "PurgeOAuth", func(ctx context.Context) (PurgeResult, error) { return t.next.PurgeOAuth(ctx, p) })
}

// RedeemAuthorizationCode implements Store.
func (t tracedStore) RedeemAuthorizationCode(ctx context.Context, codeHash string, tokens ...HashedToken) error {
	return callErr(t, ctx, "RedeemAuthorizationCode", func(ctx context.Context) error { return t.next.RedeemAuthorizationCode(ctx, codeHash, tokens...) })
}

// RegisterClient implements Store.
func (t tracedStore) RegisterClient(ctx context.Context, name string, redirectURIs []string) (Client, error) {
	return call(t, ctx, "RegisterClient", func(ctx context.Context) (Client, error) { return t.next.RegisterClient(ctx, name, redirectURIs) })
}

// RemoveMember implements Store.
func (t tracedStore) RemoveMember(ctx context.Context, projectID string, subject string) error {
	return callErr(t, ctx, "RemoveMember", func(ctx context.Context) error { return t.next.RemoveMember(ctx, projectID, subject) })
}

// RevokeAccountRepository implements Store.
func (t tracedStore) RevokeAccountRepository(ctx context.Context, accountID string, repositoryID string) (AccountRepository, error) {
	return call(t, ctx, "RevokeAccountRepository", func(ctx context.Context) (AccountRepository, error) {
		return t.next.RevokeAccountRepository(ctx, accountID, repositoryID)
	})
}

// RevokeDocumentSource implements Store.
func (t tracedStore) RevokeDocumentSource(ctx context.Context, projectID string, sourceID string) (DocumentSource, error) {
	return call(t, ctx, "RevokeDocumentSource", func(ctx context.Context) (DocumentSource, error) {
		return t.next.RevokeDocumentSource(ctx, projectID, sourceID)
	})
}

// RevokeConsent implements Store.
func (t tracedStore) RevokeConsent(ctx context.Context, consentID string) (Consent, error) {
	return call(t, ctx, "RevokeConsent", func(ctx context.Context) (Consent, error) { return t.next.RevokeConsent(ctx, consentID) })
}

// RevokeInstructionSource implements Store.
func (t tracedStore) RevokeInstructionSource(ctx context.Context, accountID string, sourceID string) (InstructionSource, error) {
	return call(t, ctx, "RevokeInstructionSource", func(ctx context.Context) (InstructionSource, error) {
		return t.next.RevokeInstructionSource(ctx, accountID, sourceID)
	})
}

// RevokeLegacyToken implements Store.
func (t tracedStore) RevokeLegacyToken(ctx context.Context, projectID string, tokenID string) (LegacyToken, error) {
	return call(t, ctx, "RevokeLegacyToken", func(ctx context.Context) (LegacyToken, error) {
		return t.next.RevokeLegacyToken(ctx, projectID, tokenID)
	})
}

// RevokeRepository implements Store.
func (t tracedStore) RevokeRepository(ctx context.Context, projectID string, repositoryID string) (Repository, error) {
	return call(t, ctx, "RevokeRepository", func(ctx context.Context) (Repository, error) {
		return t.next.RevokeRepository(ctx, projectID, repositoryID)
	})
}

// RevokeTokenFamily implements Store.
func (t tracedStore) RevokeTokenFamily(ctx context.Context, familyID string) error {
	return callErr(t, ctx, "RevokeTokenFamily", func(ctx context.Context) error { return t.next.RevokeTokenFamily(ctx, familyID) })
}

// RevokeTokenHash implements Store.
func (t tracedStore) RevokeTokenHash(ctx context.Context, tokenHash string) error {
	return callErr(t, ctx, "RevokeTokenHash", func(ctx context.Context) error { return t.next.RevokeTokenHash(ctx, tokenHash) })
}

// RotateRefreshTokenHash implements Store.
func (t tracedStore) RotateRefreshTokenHash(ctx context.Context, refreshHash string, tokens ...HashedToken) error {
	return callErr(t, ctx, "RotateRefreshTokenHash", func(ctx context.Context) error { return t.next.RotateRefreshTokenHash(ctx, refreshHash, tokens...) })
}

// SetAccountLayer implements Store.
func (t tracedStore) SetAccountLayer(ctx context.Context, accountID string, layer string, mode string, sourceID string) ([]AccountLayer, error) {
	return call(t, ctx, "SetAccountLayer", func(ctx context.Context) ([]AccountLayer, error) {
		return t.next.SetAccountLayer(ctx, accountID, layer, mode, sourceID)
	})
}

// SetCodeChallenge implements Store.
func (t tracedStore) SetCodeChallenge(ctx context.Context, codeHash string, challenge string, method string) error {
	return callErr(t, ctx, "SetCodeChallenge", func(ctx context.Context) error { return t.next.SetCodeChallenge(ctx, codeHash, challenge, method) })
}

// SetLoginSubject implements Store.
func (t tracedStore) SetLoginSubject(ctx context.Context, sessionHash string, subject string) error {
	return callErr(t, ctx, "SetLoginSubject", func(ctx context.Context) error { return t.next.SetLoginSubject(ctx, sessionHash, subject) })
}

// SetProfileLayer implements Store.
func (t tracedStore) SetProfileLayer(ctx context.Context, profileID string, layer string, sourceIDs []string) (CatalogProfile, error) {
	return call(t, ctx, "SetProfileLayer", func(ctx context.Context) (CatalogProfile, error) {
		return t.next.SetProfileLayer(ctx, profileID, layer, sourceIDs)
	})
}
