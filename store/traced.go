package store

import (
	"context"
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
// traced too.
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

// Ping implements Store; readiness probes are not traced.
func (t tracedStore) Ping(ctx context.Context) error { return t.next.Ping(ctx) }

// Close implements Store.
func (t tracedStore) Close() error { return t.next.Close() }

// AddDocumentSource implements Store.
func (t tracedStore) AddDocumentSource(ctx context.Context, src NewDocumentSource) (DocumentSource, error) {
	ctx, span := t.start(ctx, "AddDocumentSource")
	v, err := t.next.AddDocumentSource(ctx, src)
	span.end(err)
	return v, err
}

// AddInstructionSource implements Store.
func (t tracedStore) AddInstructionSource(ctx context.Context, src NewInstructionSource) (InstructionSource, error) {
	ctx, span := t.start(ctx, "AddInstructionSource")
	v, err := t.next.AddInstructionSource(ctx, src)
	span.end(err)
	return v, err
}

// AddMember implements Store.
func (t tracedStore) AddMember(ctx context.Context, projectID string, subject string) error {
	ctx, span := t.start(ctx, "AddMember")
	err := t.next.AddMember(ctx, projectID, subject)
	span.end(err)
	return err
}

// CatalogPlan implements Store.
func (t tracedStore) CatalogPlan(ctx context.Context, projectID string, profileID string) (CatalogPlan, error) {
	ctx, span := t.start(ctx, "CatalogPlan")
	v, err := t.next.CatalogPlan(ctx, projectID, profileID)
	span.end(err)
	return v, err
}

// ClearCodeChallenge implements Store.
func (t tracedStore) ClearCodeChallenge(ctx context.Context, codeHash string) error {
	ctx, span := t.start(ctx, "ClearCodeChallenge")
	err := t.next.ClearCodeChallenge(ctx, codeHash)
	span.end(err)
	return err
}

// CountOAuthRows implements Store.
func (t tracedStore) CountOAuthRows(ctx context.Context) (OAuthRowCounts, error) {
	ctx, span := t.start(ctx, "CountOAuthRows")
	v, err := t.next.CountOAuthRows(ctx)
	span.end(err)
	return v, err
}

// CreateAccount implements Store.
func (t tracedStore) CreateAccount(ctx context.Context, name string) (Account, error) {
	ctx, span := t.start(ctx, "CreateAccount")
	v, err := t.next.CreateAccount(ctx, name)
	span.end(err)
	return v, err
}

// CreateAuthorizationCode implements Store.
func (t tracedStore) CreateAuthorizationCode(ctx context.Context, c AuthorizationCode) error {
	ctx, span := t.start(ctx, "CreateAuthorizationCode")
	err := t.next.CreateAuthorizationCode(ctx, c)
	span.end(err)
	return err
}

// CreateGrant implements Store.
func (t tracedStore) CreateGrant(ctx context.Context, projectID string, subject string, clientID string, scopes []string) (Grant, error) {
	ctx, span := t.start(ctx, "CreateGrant")
	v, err := t.next.CreateGrant(ctx, projectID, subject, clientID, scopes)
	span.end(err)
	return v, err
}

// CreateLoginSession implements Store.
func (t tracedStore) CreateLoginSession(ctx context.Context, s LoginSession) error {
	ctx, span := t.start(ctx, "CreateLoginSession")
	err := t.next.CreateLoginSession(ctx, s)
	span.end(err)
	return err
}

// CreateProfile implements Store.
func (t tracedStore) CreateProfile(ctx context.Context, p NewCatalogProfile) (CatalogProfile, error) {
	ctx, span := t.start(ctx, "CreateProfile")
	v, err := t.next.CreateProfile(ctx, p)
	span.end(err)
	return v, err
}

// CreateProject implements Store.
func (t tracedStore) CreateProject(ctx context.Context, accountID string, name string) (Project, error) {
	ctx, span := t.start(ctx, "CreateProject")
	v, err := t.next.CreateProject(ctx, accountID, name)
	span.end(err)
	return v, err
}

// CreateWorkflow implements Store.
func (t tracedStore) CreateWorkflow(ctx context.Context, w NewWorkflow) (Workflow, error) {
	ctx, span := t.start(ctx, "CreateWorkflow")
	v, err := t.next.CreateWorkflow(ctx, w)
	span.end(err)
	return v, err
}

// DeleteClient implements Store.
func (t tracedStore) DeleteClient(ctx context.Context, clientID string) error {
	ctx, span := t.start(ctx, "DeleteClient")
	err := t.next.DeleteClient(ctx, clientID)
	span.end(err)
	return err
}

// DeleteLoginSession implements Store.
func (t tracedStore) DeleteLoginSession(ctx context.Context, sessionHash string) error {
	ctx, span := t.start(ctx, "DeleteLoginSession")
	err := t.next.DeleteLoginSession(ctx, sessionHash)
	span.end(err)
	return err
}

// FindAccountRepository implements Store.
func (t tracedStore) FindAccountRepository(ctx context.Context, accountID string, owner string, name string) (AccountRepository, error) {
	ctx, span := t.start(ctx, "FindAccountRepository")
	v, err := t.next.FindAccountRepository(ctx, accountID, owner, name)
	span.end(err)
	return v, err
}

// FindRepository implements Store.
func (t tracedStore) FindRepository(ctx context.Context, projectID string, owner string, name string) (Repository, error) {
	ctx, span := t.start(ctx, "FindRepository")
	v, err := t.next.FindRepository(ctx, projectID, owner, name)
	span.end(err)
	return v, err
}

// GetAccount implements Store.
func (t tracedStore) GetAccount(ctx context.Context, accountID string) (Account, error) {
	ctx, span := t.start(ctx, "GetAccount")
	v, err := t.next.GetAccount(ctx, accountID)
	span.end(err)
	return v, err
}

// GetAuthorizationCode implements Store.
func (t tracedStore) GetAuthorizationCode(ctx context.Context, codeHash string) (AuthorizationCode, error) {
	ctx, span := t.start(ctx, "GetAuthorizationCode")
	v, err := t.next.GetAuthorizationCode(ctx, codeHash)
	span.end(err)
	return v, err
}

// GetClient implements Store.
func (t tracedStore) GetClient(ctx context.Context, clientID string) (Client, error) {
	ctx, span := t.start(ctx, "GetClient")
	v, err := t.next.GetClient(ctx, clientID)
	span.end(err)
	return v, err
}

// GetDocumentSource implements Store.
func (t tracedStore) GetDocumentSource(ctx context.Context, projectID string, sourceID string) (DocumentSource, error) {
	ctx, span := t.start(ctx, "GetDocumentSource")
	v, err := t.next.GetDocumentSource(ctx, projectID, sourceID)
	span.end(err)
	return v, err
}

// GetGrant implements Store.
func (t tracedStore) GetGrant(ctx context.Context, grantID string) (Grant, error) {
	ctx, span := t.start(ctx, "GetGrant")
	v, err := t.next.GetGrant(ctx, grantID)
	span.end(err)
	return v, err
}

// GetLoginSession implements Store.
func (t tracedStore) GetLoginSession(ctx context.Context, sessionHash string) (LoginSession, error) {
	ctx, span := t.start(ctx, "GetLoginSession")
	v, err := t.next.GetLoginSession(ctx, sessionHash)
	span.end(err)
	return v, err
}

// GetProfile implements Store.
func (t tracedStore) GetProfile(ctx context.Context, profileID string) (CatalogProfile, error) {
	ctx, span := t.start(ctx, "GetProfile")
	v, err := t.next.GetProfile(ctx, profileID)
	span.end(err)
	return v, err
}

// GetProject implements Store.
func (t tracedStore) GetProject(ctx context.Context, projectID string) (Project, error) {
	ctx, span := t.start(ctx, "GetProject")
	v, err := t.next.GetProject(ctx, projectID)
	span.end(err)
	return v, err
}

// GetRepository implements Store.
func (t tracedStore) GetRepository(ctx context.Context, projectID string, repositoryID string) (Repository, error) {
	ctx, span := t.start(ctx, "GetRepository")
	v, err := t.next.GetRepository(ctx, projectID, repositoryID)
	span.end(err)
	return v, err
}

// GetToken implements Store.
func (t tracedStore) GetToken(ctx context.Context, tokenHash string) (TokenRecord, error) {
	ctx, span := t.start(ctx, "GetToken")
	v, err := t.next.GetToken(ctx, tokenHash)
	span.end(err)
	return v, err
}

// GetWorkflow implements Store.
func (t tracedStore) GetWorkflow(ctx context.Context, projectID string, workflowID string) (Workflow, error) {
	ctx, span := t.start(ctx, "GetWorkflow")
	v, err := t.next.GetWorkflow(ctx, projectID, workflowID)
	span.end(err)
	return v, err
}

// IsMember implements Store.
func (t tracedStore) IsMember(ctx context.Context, projectID string, subject string) (bool, error) {
	ctx, span := t.start(ctx, "IsMember")
	v, err := t.next.IsMember(ctx, projectID, subject)
	span.end(err)
	return v, err
}

// IssueAccessToken implements Store.
func (t tracedStore) IssueAccessToken(ctx context.Context, grantID string, ttl time.Duration) (IssuedToken, error) {
	ctx, span := t.start(ctx, "IssueAccessToken")
	v, err := t.next.IssueAccessToken(ctx, grantID, ttl)
	span.end(err)
	return v, err
}

// IssueLegacyToken implements Store.
func (t tracedStore) IssueLegacyToken(ctx context.Context, projectID string, permissions []string) (IssuedLegacyToken, error) {
	ctx, span := t.start(ctx, "IssueLegacyToken")
	v, err := t.next.IssueLegacyToken(ctx, projectID, permissions)
	span.end(err)
	return v, err
}

// LinkAccountRepository implements Store.
func (t tracedStore) LinkAccountRepository(ctx context.Context, accountID string, owner string, name string, installationID int64) (AccountRepository, error) {
	ctx, span := t.start(ctx, "LinkAccountRepository")
	v, err := t.next.LinkAccountRepository(ctx, accountID, owner, name, installationID)
	span.end(err)
	return v, err
}

// LinkRepository implements Store.
func (t tracedStore) LinkRepository(ctx context.Context, projectID string, owner string, name string, installationID int64) (Repository, error) {
	ctx, span := t.start(ctx, "LinkRepository")
	v, err := t.next.LinkRepository(ctx, projectID, owner, name, installationID)
	span.end(err)
	return v, err
}

// ListAccountLayers implements Store.
func (t tracedStore) ListAccountLayers(ctx context.Context, accountID string) ([]AccountLayer, error) {
	ctx, span := t.start(ctx, "ListAccountLayers")
	v, err := t.next.ListAccountLayers(ctx, accountID)
	span.end(err)
	return v, err
}

// ListActiveSourcesByRole implements Store.
func (t tracedStore) ListActiveSourcesByRole(ctx context.Context, projectID string, role string) ([]DocumentSource, error) {
	ctx, span := t.start(ctx, "ListActiveSourcesByRole")
	v, err := t.next.ListActiveSourcesByRole(ctx, projectID, role)
	span.end(err)
	return v, err
}

// ListClients implements Store.
func (t tracedStore) ListClients(ctx context.Context, unusedOnly bool) ([]Client, error) {
	ctx, span := t.start(ctx, "ListClients")
	v, err := t.next.ListClients(ctx, unusedOnly)
	span.end(err)
	return v, err
}

// ListDocumentSources implements Store.
func (t tracedStore) ListDocumentSources(ctx context.Context, projectID string, includeRevoked bool) ([]DocumentSource, error) {
	ctx, span := t.start(ctx, "ListDocumentSources")
	v, err := t.next.ListDocumentSources(ctx, projectID, includeRevoked)
	span.end(err)
	return v, err
}

// ListGrants implements Store.
func (t tracedStore) ListGrants(ctx context.Context, projectID string, includeRevoked bool) ([]Grant, error) {
	ctx, span := t.start(ctx, "ListGrants")
	v, err := t.next.ListGrants(ctx, projectID, includeRevoked)
	span.end(err)
	return v, err
}

// ListInstructionSources implements Store.
func (t tracedStore) ListInstructionSources(ctx context.Context, accountID string, includeRevoked bool) ([]InstructionSource, error) {
	ctx, span := t.start(ctx, "ListInstructionSources")
	v, err := t.next.ListInstructionSources(ctx, accountID, includeRevoked)
	span.end(err)
	return v, err
}

// ListProfiles implements Store.
func (t tracedStore) ListProfiles(ctx context.Context, accountID string, projectID string) ([]CatalogProfile, error) {
	ctx, span := t.start(ctx, "ListProfiles")
	v, err := t.next.ListProfiles(ctx, accountID, projectID)
	span.end(err)
	return v, err
}

// ListProjects implements Store.
func (t tracedStore) ListProjects(ctx context.Context, accountID string) ([]Project, error) {
	ctx, span := t.start(ctx, "ListProjects")
	v, err := t.next.ListProjects(ctx, accountID)
	span.end(err)
	return v, err
}

// ListProjectsForSubject implements Store.
func (t tracedStore) ListProjectsForSubject(ctx context.Context, subject string) ([]Project, error) {
	ctx, span := t.start(ctx, "ListProjectsForSubject")
	v, err := t.next.ListProjectsForSubject(ctx, subject)
	span.end(err)
	return v, err
}

// ListRepositories implements Store.
func (t tracedStore) ListRepositories(ctx context.Context, projectID string, includeRevoked bool) ([]Repository, error) {
	ctx, span := t.start(ctx, "ListRepositories")
	v, err := t.next.ListRepositories(ctx, projectID, includeRevoked)
	span.end(err)
	return v, err
}

// ListWorkflows implements Store.
func (t tracedStore) ListWorkflows(ctx context.Context, projectID string, limit int) ([]Workflow, error) {
	ctx, span := t.start(ctx, "ListWorkflows")
	v, err := t.next.ListWorkflows(ctx, projectID, limit)
	span.end(err)
	return v, err
}

// LookupAccessToken implements Store.
func (t tracedStore) LookupAccessToken(ctx context.Context, secret string) (AccessGrant, error) {
	ctx, span := t.start(ctx, "LookupAccessToken")
	v, err := t.next.LookupAccessToken(ctx, secret)
	span.end(err)
	return v, err
}

// LookupLegacyToken implements Store.
func (t tracedStore) LookupLegacyToken(ctx context.Context, secret string) (LegacyToken, error) {
	ctx, span := t.start(ctx, "LookupLegacyToken")
	v, err := t.next.LookupLegacyToken(ctx, secret)
	span.end(err)
	return v, err
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
	ctx, span := t.start(ctx, "PurgeOAuth")
	v, err := t.next.PurgeOAuth(ctx, p)
	span.end(err)
	return v, err
}

// RedeemAuthorizationCode implements Store.
func (t tracedStore) RedeemAuthorizationCode(ctx context.Context, codeHash string, tokens ...HashedToken) error {
	ctx, span := t.start(ctx, "RedeemAuthorizationCode")
	err := t.next.RedeemAuthorizationCode(ctx, codeHash, tokens...)
	span.end(err)
	return err
}

// RegisterClient implements Store.
func (t tracedStore) RegisterClient(ctx context.Context, name string, redirectURIs []string) (Client, error) {
	ctx, span := t.start(ctx, "RegisterClient")
	v, err := t.next.RegisterClient(ctx, name, redirectURIs)
	span.end(err)
	return v, err
}

// RemoveMember implements Store.
func (t tracedStore) RemoveMember(ctx context.Context, projectID string, subject string) error {
	ctx, span := t.start(ctx, "RemoveMember")
	err := t.next.RemoveMember(ctx, projectID, subject)
	span.end(err)
	return err
}

// RevokeAccountRepository implements Store.
func (t tracedStore) RevokeAccountRepository(ctx context.Context, accountID string, repositoryID string) (AccountRepository, error) {
	ctx, span := t.start(ctx, "RevokeAccountRepository")
	v, err := t.next.RevokeAccountRepository(ctx, accountID, repositoryID)
	span.end(err)
	return v, err
}

// RevokeDocumentSource implements Store.
func (t tracedStore) RevokeDocumentSource(ctx context.Context, projectID string, sourceID string) (DocumentSource, error) {
	ctx, span := t.start(ctx, "RevokeDocumentSource")
	v, err := t.next.RevokeDocumentSource(ctx, projectID, sourceID)
	span.end(err)
	return v, err
}

// RevokeGrant implements Store.
func (t tracedStore) RevokeGrant(ctx context.Context, grantID string) (Grant, error) {
	ctx, span := t.start(ctx, "RevokeGrant")
	v, err := t.next.RevokeGrant(ctx, grantID)
	span.end(err)
	return v, err
}

// RevokeInstructionSource implements Store.
func (t tracedStore) RevokeInstructionSource(ctx context.Context, accountID string, sourceID string) (InstructionSource, error) {
	ctx, span := t.start(ctx, "RevokeInstructionSource")
	v, err := t.next.RevokeInstructionSource(ctx, accountID, sourceID)
	span.end(err)
	return v, err
}

// RevokeLegacyToken implements Store.
func (t tracedStore) RevokeLegacyToken(ctx context.Context, projectID string, tokenID string) (LegacyToken, error) {
	ctx, span := t.start(ctx, "RevokeLegacyToken")
	v, err := t.next.RevokeLegacyToken(ctx, projectID, tokenID)
	span.end(err)
	return v, err
}

// RevokeRepository implements Store.
func (t tracedStore) RevokeRepository(ctx context.Context, projectID string, repositoryID string) (Repository, error) {
	ctx, span := t.start(ctx, "RevokeRepository")
	v, err := t.next.RevokeRepository(ctx, projectID, repositoryID)
	span.end(err)
	return v, err
}

// RevokeTokenFamily implements Store.
func (t tracedStore) RevokeTokenFamily(ctx context.Context, familyID string) error {
	ctx, span := t.start(ctx, "RevokeTokenFamily")
	err := t.next.RevokeTokenFamily(ctx, familyID)
	span.end(err)
	return err
}

// RevokeTokenHash implements Store.
func (t tracedStore) RevokeTokenHash(ctx context.Context, tokenHash string) error {
	ctx, span := t.start(ctx, "RevokeTokenHash")
	err := t.next.RevokeTokenHash(ctx, tokenHash)
	span.end(err)
	return err
}

// RotateRefreshTokenHash implements Store.
func (t tracedStore) RotateRefreshTokenHash(ctx context.Context, refreshHash string, tokens ...HashedToken) error {
	ctx, span := t.start(ctx, "RotateRefreshTokenHash")
	err := t.next.RotateRefreshTokenHash(ctx, refreshHash, tokens...)
	span.end(err)
	return err
}

// SetAccountLayer implements Store.
func (t tracedStore) SetAccountLayer(ctx context.Context, accountID string, layer string, mode string, sourceID string) ([]AccountLayer, error) {
	ctx, span := t.start(ctx, "SetAccountLayer")
	v, err := t.next.SetAccountLayer(ctx, accountID, layer, mode, sourceID)
	span.end(err)
	return v, err
}

// SetCodeChallenge implements Store.
func (t tracedStore) SetCodeChallenge(ctx context.Context, codeHash string, challenge string, method string) error {
	ctx, span := t.start(ctx, "SetCodeChallenge")
	err := t.next.SetCodeChallenge(ctx, codeHash, challenge, method)
	span.end(err)
	return err
}

// SetLoginSubject implements Store.
func (t tracedStore) SetLoginSubject(ctx context.Context, sessionHash string, subject string) error {
	ctx, span := t.start(ctx, "SetLoginSubject")
	err := t.next.SetLoginSubject(ctx, sessionHash, subject)
	span.end(err)
	return err
}

// SetProfileLayer implements Store.
func (t tracedStore) SetProfileLayer(ctx context.Context, profileID string, layer string, sourceIDs []string) (CatalogProfile, error) {
	ctx, span := t.start(ctx, "SetProfileLayer")
	v, err := t.next.SetProfileLayer(ctx, profileID, layer, sourceIDs)
	span.end(err)
	return v, err
}
