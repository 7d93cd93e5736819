package github

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agent-gateway/agent-gateway/upstream"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// RefreshBefore is how long before its expiry a cached installation token
// is replaced: from then on it is still handed out, until its own expiry,
// while one mint in the background replaces it, so no call waits on a
// mint while the cache holds a live token. A token issued with less than
// twice this to live is replaced from half its life instead
// (refreshMargin). A read that starts with a token in its last moments and
// is refused with 401 runs once more with the fresh one (withToken).
const RefreshBefore = 5 * time.Minute

// refreshRetry is how long after a failed background refresh the next one
// may start while the cached token is still live: a token route that is
// down is then asked once per interval, not once per call.
const refreshRetry = 15 * time.Second

// maxTokenResponse bounds the token route's answer (a few hundred bytes).
const maxTokenResponse = 64 << 10

// mintTimeout bounds one mint, which runs detached from any one caller's
// context so that a caller giving up does not fail the others waiting on
// it; when every caller has given up, the mint is cancelled.
const mintTimeout = 2 * time.Minute

// Installations mints and caches installation tokens. Each token is
// narrowed to what the gateway does with it (a read-only injected credential,
// docs/architecture.md#github-app-and-installation-tokens): contents read on
// the one repository it is minted for, so one entry is cached per
// installation and repository. Concurrent callers for the same pair share one
// mint (one flight per pair), so a burst of calls on a cold cache mints once.
type Installations struct {
	up  *upstream.Client
	app *App // nil: no App configured, every call is provider_unconfigured
	now func() time.Time

	mu      sync.Mutex
	cache   map[tokenKey]installationToken
	flights map[tokenKey]*mintFlight
	retryAt map[tokenKey]time.Time // no background refresh before this, after one failed

	// observe, if set, is told "cache_hit", "minted" or "mint_failed" for
	// every cache answer and every mint (metrics).
	observe func(event string)
}

// Observe sets f to be told "cache_hit" for every token served from the
// cache and "minted" or "mint_failed" for every mint. Call it before use.
func (s *Installations) Observe(f func(event string)) { s.observe = f }

func (s *Installations) event(e string) {
	if s.observe != nil {
		s.observe(e)
	}
}

// mintFlight is one mint in progress and the callers waiting on it.
type mintFlight struct {
	done    chan struct{} // closed when tok and err are set
	tok     installationToken
	err     error
	waiters int                // guarded by Installations.mu
	cancel  context.CancelFunc // stops the mint
}

// tokenKey names what a token is minted for: an installation and one
// repository of it (GitHub compares repository names without regard to
// case, so the key holds the lower-case name).
type tokenKey struct {
	installation int64
	repo         string
}

func keyFor(installationID int64, repo string) tokenKey {
	return tokenKey{installation: installationID, repo: strings.ToLower(repo)}
}

// installationToken is one cached token. The secret is never logged: the
// struct has no String method and lives only in this package.
type installationToken struct {
	secret  string
	expires time.Time
	minted  time.Time // when the answer arrived
}

// refreshMargin is how long before its expiry t is replaced: RefreshBefore,
// or half its lifetime for a token GitHub issued with less than twice
// that. A token issued with under RefreshBefore to live (a short TTL, or a
// clock ahead of GitHub's) was otherwise never cached, and every call
// minted one.
func (t installationToken) refreshMargin() time.Duration {
	return min(RefreshBefore, t.expires.Sub(t.minted)/2)
}

// NewInstallations returns a token source over the strict client bound to
// the GitHub API origin. app may be nil when no App is configured.
func NewInstallations(up *upstream.Client, app *App) *Installations {
	return &Installations{up: up, app: app, now: time.Now,
		cache: map[tokenKey]installationToken{}, flights: map[tokenKey]*mintFlight{},
		retryAt: map[tokenKey]time.Time{}}
}

// Configured reports whether an App (ID and key) is configured.
func (s *Installations) Configured() bool { return s.app != nil }

// Token returns a token for reading the contents of repo (a repository
// name of the installation's account): the cached one while it lives,
// starting one background mint to replace it once it is within its refresh
// margin, or else a fresh one narrowed to that repository and contents
// read, for which the caller waits. A caller whose context ends stops
// waiting at once; the mint goes on for the callers still waiting and is
// cancelled when the last of them leaves, so a stalled or slow-dripping
// token route holds no goroutine past its callers. A background refresh
// has no waiters and ends with its answer or mintTimeout.
func (s *Installations) Token(ctx context.Context, installationID int64, repo string) (string, error) {
	if s.app == nil {
		return "", toolerr.New(toolerr.ProviderUnconfigured, "no GitHub App is configured on this gateway (github.app_id and github.private_key_file)")
	}
	if installationID <= 0 {
		return "", toolerr.New(toolerr.ProviderUnconfigured, "the repository has no GitHub App installation binding")
	}
	if repo == "" {
		return "", toolerr.New(toolerr.Internal, "an installation token needs the repository it is for")
	}
	key := keyFor(installationID, repo)
	s.mu.Lock()
	if t, ok := s.cachedLocked(ctx, key, repo); ok {
		s.mu.Unlock()
		s.event("cache_hit")
		return t, nil
	}
	f := s.flights[key]
	if f == nil {
		f = s.startLocked(ctx, key, repo)
	}
	f.waiters++
	s.mu.Unlock()
	select {
	case <-ctx.Done():
		s.mu.Lock()
		if f.waiters--; f.waiters == 0 {
			f.cancel()
			if s.flights[key] == f {
				delete(s.flights, key) // a later caller starts afresh
			}
		}
		s.mu.Unlock()
		return "", toolerr.Wrap(ctx.Err(), toolerr.ProviderUnavailable, "the call ended while an installation token was being minted")
	case <-f.done:
		if f.err != nil {
			return "", f.err
		}
		return f.tok.secret, nil
	}
}

// startLocked starts the pair's one mint, detached from ctx's end but
// bounded by mintTimeout; s.mu is held and no flight is in progress.
func (s *Installations) startLocked(ctx context.Context, key tokenKey, repo string) *mintFlight {
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), mintTimeout)
	f := &mintFlight{done: make(chan struct{}), cancel: cancel}
	s.flights[key] = f
	go s.fly(mctx, key, repo, f)
	return f
}

// fly runs one mint and publishes its outcome to the flight's callers and,
// on success, to the cache. A failure leaves a live cached token in place
// (a background refresh failed; it is tried again after refreshRetry).
func (s *Installations) fly(ctx context.Context, key tokenKey, repo string, f *mintFlight) {
	defer f.cancel()
	t, err := s.mint(ctx, key.installation, repo)
	if err != nil {
		s.event("mint_failed")
	} else {
		s.event("minted")
	}
	s.mu.Lock()
	if err == nil {
		s.cache[key] = t
		delete(s.retryAt, key)
	} else {
		s.retryAt[key] = s.now().Add(refreshRetry)
	}
	if s.flights[key] == f {
		delete(s.flights, key)
	}
	f.tok, f.err = t, err
	s.mu.Unlock()
	close(f.done)
}

// cachedLocked returns the pair's token if it has not expired. One within
// its refresh margin (RefreshBefore, or half a short-lived token's life) is
// still returned, and a background mint to replace it is started unless
// one is in progress or the last failed under refreshRetry ago; s.mu is
// held.
func (s *Installations) cachedLocked(ctx context.Context, key tokenKey, repo string) (string, bool) {
	t, ok := s.cache[key]
	now := s.now()
	if !ok || !now.Before(t.expires) {
		return "", false
	}
	if t.expires.Sub(now) < t.refreshMargin() && s.flights[key] == nil && !now.Before(s.retryAt[key]) {
		s.startLocked(ctx, key, repo)
	}
	return t.secret, true
}

// Invalidate drops the cached token of an installation and repository if
// it is still secret, after GitHub refused it (revoked or rotated early).
func (s *Installations) Invalidate(installationID int64, repo, secret string) {
	key := keyFor(installationID, repo)
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.cache[key]; ok && t.secret == secret {
		delete(s.cache, key)
	}
}

// mintRequest is the body of every mint: the token may read contents (GitHub
// adds metadata read itself) of the one repository, nothing else. Without a
// body GitHub grants every permission of the App on every repository of the
// installation.
type mintRequest struct {
	Permissions  map[string]string `json:"permissions"`
	Repositories []string          `json:"repositories"`
}

// mint exchanges a fresh app JWT for an installation token narrowed to
// contents read on repo: POST /app/installations/{id}/access_tokens with
// {"permissions":{"contents":"read"},"repositories":[repo]}, 201 {token,
// expires_at, …}.
func (s *Installations) mint(ctx context.Context, installationID int64, repo string) (installationToken, error) {
	appJWT, err := s.app.JWT()
	if err != nil {
		return installationToken{}, toolerr.Wrap(err, toolerr.ProviderUnconfigured, "the GitHub App JWT could not be signed")
	}
	payload, err := json.Marshal(mintRequest{Permissions: map[string]string{"contents": "read"}, Repositories: []string{repo}})
	if err != nil {
		return installationToken{}, toolerr.Wrap(err, toolerr.Internal, "the token request could not be encoded")
	}
	x := apiExchange(appJWT, "application/vnd.github+json", nil, maxTokenResponse, routeMint, strconv.FormatInt(installationID, 10))
	x.Payload, x.Success = payload, []int{http.StatusCreated}
	// A mint is rare (one an hour per installation and repository) and the
	// Contents call it serves follows at once: on its own connection.
	x.Close = true
	a, err := s.up.Exchange(ctx, x)
	if err != nil {
		return installationToken{}, answerError(err, "installation token", mintStatus, s.now())
	}
	t, err := parseTokenAnswer(a.Body, s.now())
	if err != nil {
		return installationToken{}, err
	}
	if err := checkGrant(a.Body, repo); err != nil {
		return installationToken{}, err
	}
	return t, nil
}

// grantedAccess is what a token answer says the token may do.
var grantedAccess = map[string]string{"contents": "read", "metadata": "read"}

// checkGrant refuses a token that may do more than the mint asked for
// (docs/security.md, "a token wider than asked"): a permission other than
// contents or metadata read, or a repository selection other than exactly
// repo. Such a token is neither used nor cached: a misbehaving or
// compromised token route must not hand the gateway write access to every
// repository of the installation. parseTokenAnswer has already held the
// answer to one reading.
func checkGrant(body []byte, repo string) error {
	var g struct {
		Permissions  map[string]string `json:"permissions"`
		Selection    string            `json:"repository_selection"`
		Repositories *[]struct {
			Name string `json:"name"`
		} `json:"repositories"`
	}
	if err := json.Unmarshal(body, &g); err != nil {
		return toolerr.New(toolerr.ProviderMalformed, "GitHub's installation token answer does not say what the token may do")
	}
	for name, level := range g.Permissions {
		if grantedAccess[name] != level {
			return toolerr.New(toolerr.ProviderMalformed, "GitHub granted an installation token wider than asked (a permission beyond contents read); it is not used")
		}
	}
	if g.Permissions["contents"] != "read" {
		return toolerr.New(toolerr.ProviderMalformed, "GitHub's installation token answer does not grant contents read")
	}
	if g.Selection != "selected" || g.Repositories == nil || len(*g.Repositories) == 0 {
		return toolerr.New(toolerr.ProviderMalformed, "GitHub granted an installation token wider than asked (not only the one repository); it is not used")
	}
	for _, r := range *g.Repositories {
		if !strings.EqualFold(r.Name, repo) {
			return toolerr.New(toolerr.ProviderMalformed, "GitHub granted an installation token wider than asked (another repository besides the one asked for); it is not used")
		}
	}
	return nil
}

// tokenMembers are the members of a token answer the gateway reads.
var tokenMembers = []string{"token", "expires_at", "permissions", "repository_selection", "repositories"}

// parseTokenAnswer reads the token route's 201 answer: a usable token
// (no length assumed; printable ASCII without spaces, so it can only ever
// be one header value) and an expiry in the future.
func parseTokenAnswer(body []byte, now time.Time) (installationToken, error) {
	var out struct {
		Token     string `json:"token"`
		ExpiresAt string `json:"expires_at"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return installationToken{}, toolerr.New(toolerr.ProviderMalformed, "GitHub's installation token answer is malformed JSON")
	}
	if jsonDepth(body) > maxContentsDepth || !unambiguousMembers(bytes.TrimSpace(body), tokenMembers) {
		return installationToken{}, toolerr.New(toolerr.ProviderMalformed, "GitHub's installation token answer nests too deep or repeats a member")
	}
	expires, err := time.Parse(time.RFC3339, out.ExpiresAt)
	switch {
	// No length is assumed; the token only has to be a usable header value.
	case out.Token == "" || len(out.Token) > 4096 || strings.IndexFunc(out.Token, func(r rune) bool { return r <= ' ' || r >= 0x7f }) >= 0:
		return installationToken{}, toolerr.New(toolerr.ProviderMalformed, "GitHub's installation token answer has no usable token")
	case err != nil || !expires.After(now):
		return installationToken{}, toolerr.New(toolerr.ProviderMalformed, "GitHub's installation token answer has no usable expires_at")
	}
	return installationToken{secret: out.Token, expires: expires, minted: now}, nil
}

// mintStatus is the token route's table. A refused app JWT or an unknown
// installation is a configuration problem of this gateway, not of the
// caller.
var mintStatus = statusTable{
	http.StatusUnauthorized: {toolerr.ProviderForbidden, "GitHub refused the App's credentials (check github.app_id and github.private_key_file)"},
	http.StatusForbidden:    {toolerr.ProviderForbidden, "GitHub refused an installation token for this repository's installation"},
	http.StatusNotFound:     {toolerr.ProviderUnconfigured, "GitHub does not know this repository's App installation"},
	// The mint names the repository: GitHub refuses one the installation
	// does not cover (or a permission the App lacks).
	http.StatusUnprocessableEntity: {toolerr.ProviderNotFound, "the App installation does not cover this repository with contents read"},
}
