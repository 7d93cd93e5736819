package githubemu

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// maxJWTAhead is how far in the future GitHub accepts an app JWT's exp; a
// few seconds of leeway absorb the time between signing and checking.
const (
	maxJWTAhead = 10 * time.Minute
	jwtLeeway   = 5 * time.Second
)

// issuedToken is a minted installation token.
type issuedToken struct {
	installation int64
	expires      time.Time
}

// AddInstallation registers an App installation that can read the given
// repositories ("owner/name"). Adding an installation again adds to its
// repositories.
func (e *Emulator) AddInstallation(id int64, repos ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	set := e.installations[id]
	if set == nil {
		set = map[string]bool{}
		e.installations[id] = set
	}
	for _, r := range repos {
		set[strings.ToLower(r)] = true
	}
}

// RevokeTokens makes every minted token invalid, as an App key rotation or
// an installation suspension would.
func (e *Emulator) RevokeTokens() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.tokens = map[string]issuedToken{}
}

// checkJWT verifies an app JWT as GitHub does and returns why it is refused.
func (e *Emulator) checkJWT(raw string) error {
	if e.opts.AppKey == nil {
		return errors.New("the emulator has no App key")
	}
	now := e.opts.Now()
	var claims jwt.RegisteredClaims
	_, err := jwt.ParseWithClaims(raw, &claims, func(*jwt.Token) (any, error) { return e.opts.AppKey, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuedAt(), jwt.WithExpirationRequired(),
		jwt.WithLeeway(jwtLeeway), jwt.WithTimeFunc(func() time.Time { return now }))
	if err != nil {
		return err
	}
	switch {
	case claims.Issuer != strconv.FormatInt(e.opts.AppID, 10):
		return errors.New("iss is not the App ID")
	case claims.IssuedAt == nil:
		return errors.New("no iat")
	case claims.ExpiresAt.Time.After(now.Add(maxJWTAhead + jwtLeeway)):
		return errors.New("exp is more than 10 minutes in the future")
	}
	return nil
}

// TokenPrefix starts every installation token the emulator mints: GitHub's
// shape (ghs_…), marked as a canary, so that a scan of the gateway's
// outputs finds any minted token without knowing it (MintedTokenPattern).
const TokenPrefix = "ghs_CANARY"

// MintedTokenPattern matches any installation token the emulator mints.
var MintedTokenPattern = regexp.MustCompile(`ghs_CANARY[A-Z2-7]{20,}`)

// serveToken is POST /app/installations/{id}/access_tokens.
func (e *Emulator) serveToken(w http.ResponseWriter, r *http.Request) {
	scheme, raw, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") || e.checkJWT(raw) != nil {
		e.mu.Lock()
		e.tokenRefusals++
		e.mu.Unlock()
		writeMessage(w, http.StatusUnauthorized, "A JSON web token could not be decoded")
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	e.mu.Lock()
	_, known := e.installations[id]
	e.mu.Unlock()
	if err != nil || !known {
		writeMessage(w, http.StatusNotFound, "Not Found")
		return
	}
	if e.opts.TokenDelay > 0 {
		time.Sleep(e.opts.TokenDelay)
	}
	secret := TokenPrefix + rand.Text() + rand.Text()[:10]
	expires := e.opts.Now().Add(e.opts.TokenTTL).UTC().Truncate(time.Second)
	e.mu.Lock()
	e.tokens[secret] = issuedToken{installation: id, expires: expires}
	e.tokenMints++
	e.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{
		"token":                secret,
		"expires_at":           expires.Format(time.RFC3339),
		"permissions":          map[string]string{"contents": "read", "metadata": "read"},
		"repository_selection": "selected",
	})
}

// authorize checks the installation token of a repository route: 401 for
// a missing, unknown or expired token, 404 (as GitHub answers for
// repositories a token cannot see) when its installation does not cover
// owner/repo. It writes the refusal and returns false.
func (e *Emulator) authorize(w http.ResponseWriter, r *http.Request, owner, repo string) bool {
	scheme, secret, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") && !strings.EqualFold(scheme, "token") {
		writeMessage(w, http.StatusUnauthorized, "Requires authentication")
		return false
	}
	e.mu.Lock()
	t, ok := e.tokens[secret]
	covered := ok && e.installations[t.installation][strings.ToLower(owner+"/"+repo)]
	e.mu.Unlock()
	switch {
	case !ok || !e.opts.Now().Before(t.expires):
		writeMessage(w, http.StatusUnauthorized, "Bad credentials")
		return false
	case !covered:
		writeMessage(w, http.StatusNotFound, "Not Found")
		return false
	}
	return true
}

// writeJSON answers like GitHub: JSON with a Content-Length and the rate
// limit headers of a healthy budget.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Remaining", "4999")
	h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeMessage answers GitHub's error shape {"message","documentation_url","status"}.
func writeMessage(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, map[string]string{
		"message":           message,
		"documentation_url": "https://docs.github.com/rest",
		"status":            strconv.Itoa(status),
	})
}
