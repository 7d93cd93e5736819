package oauth

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/agent-gateway/agent-gateway/store"
)

// Every endpoint of the authorization server decides first and renders
// second: a decision (decideAuthorization, decideCodeExchange,
// decideRefresh, decideRevocation) is a pure function of the request and
// the stored rows it read, and what it refuses is an *oauthError, which
// the one table below turns into an HTTP status and the functions of this
// file into an answer: JSON for the token and revocation endpoints
// (RFC 6749 §5.2, RFC 7009 §2.2.1), a page or a redirect for authorize.

// OAuth error codes (RFC 6749 §4.1.2.1, RFC 6749 §5.2, RFC 7009 §2.2.1,
// RFC 8707 §2).
const (
	codeInvalidRequest          = "invalid_request"
	codeInvalidClient           = "invalid_client"
	codeInvalidGrant            = "invalid_grant"
	codeUnauthorizedClient      = "unauthorized_client"
	codeInvalidScope            = "invalid_scope"
	codeInvalidTarget           = "invalid_target"
	codeUnsupportedResponseType = "unsupported_response_type"
	codeUnsupportedResponseMode = "unsupported_response_mode"
	codeAccessDenied            = "access_denied"
	codeServerError             = "server_error"
	codeTemporarilyUnavailable  = "temporarily_unavailable"
)

// errorStatus maps each code to its HTTP status: 401 for a client that
// cannot be identified (RFC 6749 §5.2), 403 for a user's refusal, 503 for
// a dependency that failed, 400 for the rest.
var errorStatus = map[string]int{
	codeInvalidRequest:          http.StatusBadRequest,
	codeInvalidClient:           http.StatusUnauthorized,
	codeInvalidGrant:            http.StatusBadRequest,
	codeUnauthorizedClient:      http.StatusBadRequest,
	codeInvalidScope:            http.StatusBadRequest,
	codeInvalidTarget:           http.StatusBadRequest,
	codeUnsupportedResponseType: http.StatusBadRequest,
	codeUnsupportedResponseMode: http.StatusBadRequest,
	codeAccessDenied:            http.StatusForbidden,
	codeServerError:             http.StatusInternalServerError,
	codeTemporarilyUnavailable:  http.StatusServiceUnavailable,
}

// oauthError is a refusal: the OAuth error code and what the client (or
// the person, on a page) is told. cause, never shown, is what the log
// gets for a server-side failure.
type oauthError struct {
	code        string
	description string
	// status overrides the table (429 for a rate, with retryAfter).
	status     int
	retryAfter string
	cause      error
}

func (e *oauthError) Error() string { return e.code + ": " + e.description }
func (e *oauthError) Unwrap() error { return e.cause }

// httpStatus is the status the table gives the code, unless overridden.
func (e *oauthError) httpStatus() int {
	if e.status != 0 {
		return e.status
	}
	if s, ok := errorStatus[e.code]; ok {
		return s
	}
	return http.StatusBadRequest
}

func refuse(code, description string) *oauthError {
	return &oauthError{code: code, description: description}
}

// unavailable is the refusal for a store that failed: the client may
// retry (RFC 6749 §5.2 temporarily_unavailable; RFC 7009 §2.2.1 for
// revocation) and nothing about the failure is told.
func unavailable(cause error) *oauthError {
	return &oauthError{code: codeTemporarilyUnavailable, description: "The authorization server could not reach its store; try again.",
		retryAfter: "1", cause: cause}
}

// asOAuthError turns any error into the refusal it stands for: itself,
// or, for an error no decision made, a server error.
func asOAuthError(err error) *oauthError {
	var e *oauthError
	if errors.As(err, &e) {
		return e
	}
	return &oauthError{code: codeServerError, description: "The authorization server failed.", cause: err}
}

// writeOAuthError renders a refusal of the token or revocation endpoint
// as an RFC 6749 §5.2 JSON error.
func writeOAuthError(w http.ResponseWriter, e *oauthError) {
	if e.retryAfter != "" {
		w.Header().Set("Retry-After", e.retryAfter)
	}
	w.Header().Set("Pragma", "no-cache")
	writeError(w, e.httpStatus(), e.code, e.description)
}

// tokenAnswer is an RFC 6749 §5.1 access token response.
type tokenAnswer struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
}

// issued is a pair of tokens generated for an answer: the secrets for the
// client, their hashes and expiries for the store.
type issued struct {
	access, refresh string
	rows            []store.HashedToken
	accessTTL       time.Duration
}

// issue generates an access and a refresh token; accessScopes, when not
// nil, narrows the access token (a refresh that asked for fewer scopes).
func (s *Server) issue(now time.Time, accessScopes []string) (issued, error) {
	access, err := store.NewToken(store.AccessTokenPrefix)
	if err != nil {
		return issued{}, err
	}
	refresh, err := store.NewToken(store.RefreshTokenPrefix)
	if err != nil {
		return issued{}, err
	}
	return issued{
		access: access, refresh: refresh, accessTTL: s.cfg.AccessTokenTTL,
		rows: []store.HashedToken{
			{Hash: store.HashToken(access), Kind: store.TokenAccess, ExpiresAt: now.Add(s.cfg.AccessTokenTTL).Round(time.Second), Scopes: accessScopes},
			{Hash: store.HashToken(refresh), Kind: store.TokenRefresh, ExpiresAt: now.Add(s.cfg.RefreshTokenTTL).Round(time.Second)},
		},
	}, nil
}

// writeTokens renders issued tokens with the scopes the access token
// carries.
func writeTokens(w http.ResponseWriter, t issued, scopes []string) {
	w.Header().Set("Pragma", "no-cache")
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(tokenAnswer{
		AccessToken: t.access, TokenType: "bearer", ExpiresIn: int64(t.accessTTL / time.Second),
		RefreshToken: t.refresh, Scope: strings.Join(scopes, " "),
	})
}
