package githubemu

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
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

// issuedToken is a minted installation token and what it may do.
type issuedToken struct {
	installation int64
	expires      time.Time
	// repos are the "owner/repo" (lowercase) the token covers; nil means
	// every repository of the installation (a mint without repositories).
	repos map[string]bool
	// permissions are the token's permissions; nil means every permission
	// of the App (a mint without permissions).
	permissions map[string]string
}

// Mint is one successful token request as the emulator received it.
type Mint struct {
	Installation int64
	// Body is the request body as sent ("" for none).
	Body string
}

// Mints returns the successful token requests, oldest first.
func (e *Emulator) Mints() []Mint {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Mint(nil), e.mints...)
}

// tokenRequest is the body GitHub's token route accepts: permissions to
// narrow the token to, and repositories (names of the installation's
// account) or repository IDs to narrow it to.
type tokenRequest struct {
	Permissions   map[string]string `json:"permissions"`
	Repositories  []string          `json:"repositories"`
	RepositoryIDs []int64           `json:"repository_ids"`
}

// knownPermissions are the App permissions the emulator's App holds.
var knownPermissions = map[string]bool{"contents": true, "metadata": true}

// narrowing reads a token request body as GitHub does: none means every
// permission on every repository of the installation; otherwise the named
// repositories must all be the installation's and the permissions known
// levels of permissions the App has, or the answer is 422. repository_ids
// are not supported by the emulator (the gateway does not send them).
func narrowing(body []byte, covered map[string]bool) (repos map[string]bool, perms map[string]string, ok bool) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil, true
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var req tokenRequest
	if dec.Decode(&req) != nil || dec.More() || req.RepositoryIDs != nil {
		return nil, nil, false
	}
	if req.Repositories != nil {
		repos = map[string]bool{}
		for _, name := range req.Repositories {
			found := false
			for full := range covered {
				if _, n, _ := strings.Cut(full, "/"); n == strings.ToLower(name) {
					repos[full], found = true, true
				}
			}
			if !found || strings.Contains(name, "/") {
				return nil, nil, false
			}
		}
	}
	if req.Permissions != nil {
		for k, v := range req.Permissions {
			if !knownPermissions[k] || (v != "read" && v != "write") {
				return nil, nil, false
			}
		}
		perms = maps.Clone(req.Permissions)
		perms["metadata"] = "read" // GitHub adds it to every token
	}
	return repos, perms, true
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
	body, rerr := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	e.mu.Lock()
	covered, known := e.installations[id]
	repos, perms, narrowed := narrowing(body, covered)
	e.mu.Unlock()
	if err != nil || !known {
		writeMessage(w, http.StatusNotFound, "Not Found")
		return
	}
	if rerr != nil || !narrowed {
		writeMessage(w, http.StatusUnprocessableEntity,
			"There is at least one repository that does not exist or is not accessible to the parent installation.")
		return
	}
	if e.opts.TokenDelay > 0 {
		time.Sleep(e.opts.TokenDelay)
	}
	e.mu.Lock()
	if e.widen {
		// A misbehaving token route: the token may write every
		// repository of the installation, whatever was asked.
		repos, perms = nil, map[string]string{"contents": "write", "metadata": "read", "administration": "write"}
	}
	e.mu.Unlock()
	secret := TokenPrefix + rand.Text() + rand.Text()[:10]
	expires := e.opts.Now().Add(e.opts.TokenTTL).UTC().Truncate(time.Second)
	e.mu.Lock()
	e.tokens[secret] = issuedToken{installation: id, expires: expires, repos: repos, permissions: perms}
	e.tokenMints++
	e.mints = append(e.mints, Mint{Installation: id, Body: string(body)})
	e.mu.Unlock()
	writeJSON(w, http.StatusCreated, tokenAnswer(secret, expires, repos, perms))
}

// tokenAnswer is the token route's 201 body as GitHub shapes it: the
// permissions granted, and either "selected" with the repositories the
// token covers or "all" (a token minted without repositories).
func tokenAnswer(secret string, expires time.Time, repos map[string]bool, perms map[string]string) map[string]any {
	granted := perms
	if granted == nil {
		granted = map[string]string{"contents": "write", "metadata": "read"} // everything the App has
	}
	answer := map[string]any{
		"token":                secret,
		"expires_at":           expires.Format(time.RFC3339),
		"permissions":          granted,
		"repository_selection": "all",
	}
	if repos != nil {
		list := []map[string]any{}
		for _, full := range slices.Sorted(maps.Keys(repos)) {
			_, name, _ := strings.Cut(full, "/")
			list = append(list, map[string]any{"name": name, "full_name": full})
		}
		answer["repository_selection"], answer["repositories"] = "selected", list
	}
	return answer
}

// WidenTokens makes the token route grant more than asked (on) or answer
// as GitHub does (off): every later token may write (contents,
// administration) on every repository of the installation, whatever the
// request narrowed it to, and its answer says so.
func (e *Emulator) WidenTokens(on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.widen = on
}

// authorize checks the installation token of a repository route: 401 for
// a missing, unknown or expired token, 404 (as GitHub answers for
// repositories a token cannot see) when its installation or the
// repositories it was minted for do not cover owner/repo, 403 ("Resource
// not accessible by integration") when it was minted without contents
// permission. It writes the refusal and returns false.
func (e *Emulator) authorize(w http.ResponseWriter, r *http.Request, owner, repo string) bool {
	scheme, secret, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") && !strings.EqualFold(scheme, "token") {
		writeMessage(w, http.StatusUnauthorized, "Requires authentication")
		return false
	}
	e.mu.Lock()
	t, ok := e.tokens[secret]
	full := strings.ToLower(owner + "/" + repo)
	covered := ok && e.installations[t.installation][full] && (t.repos == nil || t.repos[full])
	e.mu.Unlock()
	canRead := t.permissions == nil || t.permissions["contents"] == "read" || t.permissions["contents"] == "write"
	switch {
	case !ok || !e.opts.Now().Before(t.expires):
		writeMessage(w, http.StatusUnauthorized, "Bad credentials")
		return false
	case !covered:
		writeMessage(w, http.StatusNotFound, "Not Found")
		return false
	case !canRead:
		writeMessage(w, http.StatusForbidden, "Resource not accessible by integration")
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
