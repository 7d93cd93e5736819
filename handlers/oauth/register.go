package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/web"
)

// RFC 7591 dynamic client registration. Every client is public (token_endpoint_auth_method
// "none": MCP clients cannot keep a secret), uses the authorization code
// grant with PKCE and refresh tokens, and may ask for the gateway's scopes.
// Registration is open (MCP clients register themselves), so it is bounded:
// a few redirect URIs, each https, http on a loopback host or a private-use
// scheme (redirectRule), short names, and a per-address rate limit (see
// Routes).

// Registration limits: a stored client is at most a few short redirect
// URIs and a short name (store/validate.go holds the same), and a
// registration document at most maxRegistrationBytes.
const (
	maxRegisteredRedirectURIs = 5
	maxRedirectURIBytes       = 512
	maxClientNameRunes        = 200
	maxRegistrationBytes      = 16 << 10
)

// registration is the subset of RFC 7591 client metadata the gateway
// reads; other members are accepted and ignored, as RFC 7591 §2 allows.
type registration struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
}

// register is POST /oauth/register.
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var req registration
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRegistrationBytes))
	if err := dec.Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "invalid_client_metadata", "the registration document is too large")
			return
		}
		writeError(w, http.StatusBadRequest, "invalid_client_metadata", "the body must be one JSON object of client metadata")
		return
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "invalid_client_metadata", "the body must be one JSON object of client metadata")
		return
	}
	if code, msg := checkRegistration(&req, s.redirects); code != "" {
		writeError(w, http.StatusBadRequest, code, msg)
		return
	}
	c, evicted, err := s.cfg.Store.RegisterClientCapped(r.Context(), req.ClientName, req.RedirectURIs, s.cfg.MaxUnusedClients)
	if evicted > 0 {
		s.cfg.Log.Warn("unused OAuth clients past oauth.max_unused_clients; the oldest were deleted",
			"evicted", evicted, "max_unused_clients", s.cfg.MaxUnusedClients)
	}
	if errors.Is(err, store.ErrInvalid) {
		writeError(w, http.StatusBadRequest, "invalid_client_metadata", err.Error())
		return
	}
	if err != nil {
		// The store failed, not the caller: 503 naming it, cause logged.
		s.unavailable(w, r, err, func(part string) { writeUnavailable(w, r, part) })
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{
		"client_id":                  c.ClientID,
		"client_id_issued_at":        c.CreatedAt.Unix(),
		"client_name":                c.Name,
		"redirect_uris":              c.RedirectURIs,
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
		"scope":                      strings.Join(s.scopeNames(), " "),
	})
}

// checkRegistration validates and completes a registration, its redirect
// URIs by rule; it returns an RFC 7591 error code and message, or "" when
// the request is acceptable.
func checkRegistration(req *registration, rule redirectRule) (string, string) {
	if len(req.RedirectURIs) == 0 || len(req.RedirectURIs) > maxRegisteredRedirectURIs {
		return "invalid_redirect_uri", fmt.Sprintf("give 1 to %d redirect_uris", maxRegisteredRedirectURIs)
	}
	for _, u := range req.RedirectURIs {
		if err := rule.check(u); err != nil {
			return "invalid_redirect_uri", err.Error()
		}
	}
	if m := req.TokenEndpointAuthMethod; m != "" && m != "none" {
		return "invalid_client_metadata", "only public clients are supported: token_endpoint_auth_method must be \"none\" (use PKCE)"
	}
	for _, g := range req.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return "invalid_client_metadata", fmt.Sprintf("grant type %q is not supported (authorization_code, refresh_token)", g)
		}
	}
	if len(req.GrantTypes) > 0 && !slices.Contains(req.GrantTypes, "authorization_code") {
		return "invalid_client_metadata", "grant_types must include authorization_code"
	}
	for _, t := range req.ResponseTypes {
		if t != "code" {
			return "invalid_client_metadata", fmt.Sprintf("response type %q is not supported (code)", t)
		}
	}
	req.ClientName = strings.TrimSpace(req.ClientName)
	if req.ClientName == "" {
		req.ClientName = "unnamed MCP client"
	}
	// The name is shown to people (consent page, admin list-clients):
	// no control, bidirectional or invisible character may make it read
	// as another (the pages escape them too, for rows stored before).
	if utf8.RuneCountInString(req.ClientName) > maxClientNameRunes || web.Visible(req.ClientName) != req.ClientName {
		return "invalid_client_metadata", fmt.Sprintf(
			"client_name must be printable text of at most %d characters, without control, bidirectional or invisible characters", maxClientNameRunes)
	}
	return "", ""
}
