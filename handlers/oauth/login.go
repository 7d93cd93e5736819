package oauth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/web"
)

// The browser side of an authorization: /oauth/authorize validates the
// client's request and sends the browser to the identity provider;
// /oauth/callback verifies the provider's answer; /oauth/consent shows the
// consent page and turns the user's answer into a code for the client.
// One login session (a cookie holding a random secret; the store keeps its
// hash) carries the browser through; it is single use and expires after
// LoginTTL.

// sessionPrefix marks login session secrets.
const sessionPrefix = "agw_ls_"

// cookieName is the login session cookie: __Host- (Secure, Path=/, no
// Domain) when the gateway is served over https.
func (s *Server) cookieName() string {
	if s.secure {
		return "__Host-agw_login"
	}
	return "agw_login"
}

func (s *Server) setSessionCookie(w http.ResponseWriter, secret string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: s.cookieName(), Value: secret, Path: "/", MaxAge: maxAge,
		Secure: s.secure, HttpOnly: true, SameSite: http.SameSiteLaxMode,
	})
}

// csrfToken is the consent form's CSRF token: an HMAC of a fixed label
// under the login session's secret, so it is bound to the session, needs no
// storage, and cannot be computed without the cookie.
func csrfToken(sessionSecret string) string {
	m := hmac.New(sha256.New, []byte(sessionSecret))
	m.Write([]byte("agent-gateway consent csrf v1"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// errorPage renders an error the browser cannot be redirected with.
func (s *Server) errorPage(w http.ResponseWriter, status int, title, msg string) {
	web.Render(w, status, "oauth_error.html", web.OAuthError{Title: title, Message: msg})
}

// Every client of this server is unverified in the sense of RFC 9700 §4.11.2:
// anyone may register one (RFC 7591) or name a metadata document (cimd.go),
// with any redirect URI the registration rules accept. An error found before
// the user has signed in and seen the consent page, which names where the
// browser returns to, is therefore shown on the gateway's own page
// (refusePage) and never redirected: otherwise a link to /oauth/authorize
// without PKCE would send the browser straight to the registrant's URI, and
// the gateway's origin would be an open redirector. Only the user's answer on
// the consent page goes back to the client (answerClient).

// signInUnavailable is the page of a sign-in step whose dependency part
// failed: the gateway's outage, not the person's mistake.
func (s *Server) signInUnavailable(w http.ResponseWriter, part string) {
	s.errorPage(w, http.StatusServiceUnavailable, "Sign-in is unavailable",
		"The gateway's "+part+" is unavailable, so it cannot take a sign-in now. Try again in a moment.")
}

// storeFailed answers a sign-in step whose store call failed. A failure
// of the store — not one of its answers (store.Answered), nor a browser
// that left — is the gateway's outage: a 503 page naming the store, with
// Retry-After, its cause logged once with the request id (unavailable),
// so the person waits a moment instead of starting over. Anything else
// is logged as logMsg and shown as the step's own failure.
func (s *Server) storeFailed(w http.ResponseWriter, r *http.Request, err error, logMsg, title, msg string) {
	if !store.Answered(err) && r.Context().Err() == nil {
		s.unavailable(w, r, err, func(part string) { s.signInUnavailable(w, part) })
		return
	}
	s.cfg.Log.Warn(logMsg, "error", err.Error())
	s.errorPage(w, http.StatusInternalServerError, title, msg)
}

// refusePage shows an authorization error on the gateway's error page,
// with its OAuth error code; nothing is sent to the client.
func (s *Server) refusePage(w http.ResponseWriter, err error) {
	s.logProtocolError("authorization refused", err)
	e := asOAuthError(err)
	var mr *metadataRefusal
	if errors.As(err, &mr) {
		e = refuse(codeInvalidClient, metadataRefusedText)
	}
	title := "This authorization request is not valid"
	if e.code == codeTemporarilyUnavailable {
		// The gateway's outage, not the request's fault.
		title = "Sign-in is unavailable"
		w.Header().Set("Retry-After", e.retryAfter)
	}
	web.Render(w, e.httpStatus(), "oauth_error.html", web.OAuthError{Title: title, Message: e.description, Code: e.code})
}

// answerClient sends the outcome of a consent — a code, or an error such
// as access_denied — to the client's redirect URI, which the consent page
// showed, as a 303 (the consent page's CSP lists the redirect's origin in
// form-action, formTarget, so a browser follows it out of the form) with
// the query parameters of RFC 6749 §4.1.2: the redirect URI's own, then
// the answer's, then the client's state when it sent one.
func (s *Server) answerClient(w http.ResponseWriter, a authorization, answer url.Values) {
	to := *a.redirect
	to.Fragment = ""
	q := to.Query()
	for k, v := range answer {
		q[k] = v
	}
	if a.state != "" {
		q.Set("state", a.state)
	}
	to.RawQuery = q.Encode()
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Location", to.String())
	w.WriteHeader(http.StatusSeeOther)
}

// answerClientError sends a refusal to the client (answerClient).
func (s *Server) answerClientError(w http.ResponseWriter, a authorization, e *oauthError) {
	s.logProtocolError("authorization refused", e)
	s.answerClient(w, a, url.Values{"error": {e.code}, "error_description": {e.description}})
}

// authorize is /oauth/authorize.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if err := r.ParseForm(); err != nil {
		s.errorPage(w, http.StatusBadRequest, "This authorization request is not valid", "The request could not be parsed.")
		return
	}
	q, problem := knownParams(r.Form, s.redirects)
	if strings.TrimSpace(q.Get("scope")) == "" {
		q.Set("scope", strings.Join(s.scopeNames(), " "))
	}
	if problem != nil {
		s.refused(limitAuthorize, problem.reason)
		s.refusePage(w, problem.err())
		return
	}
	if _, err := s.parseAuthorization(ctx, q); err != nil {
		s.refusePage(w, err)
		return
	}
	secret, err := store.NewToken(sessionPrefix)
	if err != nil {
		s.errorPage(w, http.StatusInternalServerError, "Sign-in failed", "The gateway could not start a sign-in session.")
		return
	}
	state, nonce, verifier := rand.Text(), rand.Text(), oauth2.GenerateVerifier()
	loginURL, err := s.cfg.IdentityProvider.AuthCodeURL(ctx, state, nonce, verifier)
	if err != nil {
		s.cfg.Log.Warn("identity provider unavailable", "error", err.Error())
		s.errorPage(w, http.StatusBadGateway, "Sign-in is not available", "The identity provider could not be reached. Try again later.")
		return
	}
	evicted, err := s.cfg.Store.CreateLoginSessionCapped(ctx, store.LoginSession{
		SessionHash: store.HashToken(secret), AuthorizeQuery: q.Encode(),
		IdPState: state, IdPNonce: nonce, IdPVerifier: verifier, ExpiresAt: time.Now().Add(s.cfg.LoginTTL),
	}, s.cfg.MaxLoginSessions)
	if evicted > 0 {
		s.cfg.Log.Warn("login sessions past oauth.max_login_sessions; the oldest were deleted",
			"evicted", evicted, "max_login_sessions", s.cfg.MaxLoginSessions)
	}
	if err != nil {
		s.storeFailed(w, r, err, "storing a login session failed", "Sign-in failed", "The gateway could not start a sign-in session.")
		return
	}
	s.setSessionCookie(w, secret, int(s.cfg.LoginTTL/time.Second))
	http.Redirect(w, r, loginURL, http.StatusFound)
}

// errNoSession is a missing, expired or already finished login session.
var errNoSession = errors.New("no login session")

// loginSession reads the browser's login session.
func (s *Server) loginSession(r *http.Request) (store.LoginSession, string, error) {
	c, err := r.Cookie(s.cookieName())
	if err != nil || !strings.HasPrefix(c.Value, sessionPrefix) {
		return store.LoginSession{}, "", errNoSession
	}
	ls, err := s.cfg.Store.GetLoginSession(r.Context(), store.HashToken(c.Value))
	if errors.Is(err, store.ErrNotFound) {
		return store.LoginSession{}, "", errNoSession
	}
	return ls, c.Value, err
}

// sessionProblem shows why a login session cannot continue: it ended, or
// the store could not read it (storeFailed).
func (s *Server) sessionProblem(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errNoSession) {
		s.errorPage(w, http.StatusBadRequest, "Your sign-in session has ended",
			"This sign-in session is missing, expired or already finished.")
		return
	}
	s.storeFailed(w, r, err, "reading a login session failed", "Sign-in failed", "The gateway could not read the sign-in session.")
}

// endSession deletes the login session and its cookie.
func (s *Server) endSession(ctx context.Context, w http.ResponseWriter, secret string) {
	if err := s.cfg.Store.DeleteLoginSession(ctx, store.HashToken(secret)); err != nil {
		s.cfg.Log.Warn("deleting a login session failed", "error", err.Error())
	}
	s.setSessionCookie(w, "", -1)
}

// replay parses the session's authorization request again: the client,
// its redirect URI and the scopes are re-validated at every step.
func (s *Server) replay(ctx context.Context, ls store.LoginSession) (authorization, error) {
	q, err := url.ParseQuery(ls.AuthorizeQuery)
	if err != nil {
		return authorization{}, refuse(codeInvalidRequest, "The stored authorization request could not be read.")
	}
	return s.parseAuthorization(ctx, q)
}

// callback is /oauth/callback, where the identity provider sends the
// browser back.
func (s *Server) callback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ls, secret, err := s.loginSession(r)
	if err != nil {
		s.sessionProblem(w, r, err)
		return
	}
	q := r.URL.Query()
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(ls.IdPState)) != 1 {
		s.errorPage(w, http.StatusBadRequest, "Sign-in failed", "The identity provider's answer does not belong to this sign-in session.")
		return
	}
	if ls.Subject != "" {
		http.Redirect(w, r, "/oauth/consent", http.StatusSeeOther)
		return
	}
	if e := q.Get("error"); e != "" {
		// The user has not seen the consent page: shown here, not sent
		// to the client.
		s.endSession(ctx, w, secret)
		s.refusePage(w, refuse(codeAccessDenied, fmt.Sprintf("The resource owner or authorization server denied the request. The identity provider answered %q.", e)))
		return
	}
	subject, err := s.cfg.IdentityProvider.Exchange(ctx, q.Get("code"), ls.IdPVerifier, ls.IdPNonce)
	if err != nil {
		s.cfg.Log.Warn("identity provider login failed", "error", err.Error())
		s.errorPage(w, http.StatusBadGateway, "Sign-in failed", "The identity provider's answer could not be verified.")
		return
	}
	if err := s.cfg.Store.SetLoginSubject(ctx, ls.SessionHash, subject); err != nil {
		if store.Answered(err) { // gone, finished, or not acceptable
			err = errNoSession
		}
		s.sessionProblem(w, r, err)
		return
	}
	http.Redirect(w, r, "/oauth/consent", http.StatusSeeOther)
}

// consentState is what both consent handlers need.
type consentState struct {
	ls     store.LoginSession
	secret string
	a      authorization
}

// loadConsent reads the session (which must be logged in) and replays the
// authorization. It answers the browser itself when it returns false.
func (s *Server) loadConsent(w http.ResponseWriter, r *http.Request) (consentState, bool) {
	ctx := r.Context()
	ls, secret, err := s.loginSession(r)
	if err == nil && ls.Subject == "" {
		err = errNoSession
	}
	if err != nil {
		s.sessionProblem(w, r, err)
		return consentState{}, false
	}
	a, err := s.replay(ctx, ls)
	if err != nil {
		// The request no longer holds (the client was deleted, say): the
		// consent it would answer was not given, so it is shown here.
		s.endSession(ctx, w, secret)
		s.refusePage(w, err)
		return consentState{}, false
	}
	return consentState{ls: ls, secret: secret, a: a}, true
}

// heldScopes are the scopes this server serves that consents (the
// subject's active ones to the client on one project) hold, sorted, once
// each: what a re-authorization keeps (tokenScopes).
func (s *Server) heldScopes(consents []store.Consent) []string {
	served := s.scopeNames()
	var held []string
	for _, g := range consents {
		for _, sc := range g.Scopes {
			if slices.Contains(served, sc) {
				held = append(held, sc)
			}
		}
	}
	slices.Sort(held)
	return slices.Compact(held)
}

// tokenScopes are the scopes an allowed authorization is granted: those
// requested, and those the person's active consents to this client on this
// project already hold. A re-authorization that asks for fewer scopes (a
// client that asks for a step-up's scope alone, or for its first 401's
// scope again) so never loses what was consented to before. Nothing is
// granted that the person has not consented to for this client and
// project — each held scope by an earlier consent that is still active,
// each requested one by this consent — and no existing consent is changed:
// the union is a consent of its own (store.AnswerConsent).
func tokenScopes(requested, held []string) []string {
	out := slices.Concat(requested, held)
	slices.Sort(out)
	return slices.Compact(out)
}

// consentPage is GET /oauth/consent.
func (s *Server) consentPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	cs, ok := s.loadConsent(w, r)
	if !ok {
		return
	}
	clientID := cs.a.client.id
	choices, err := s.cfg.Store.ConsentChoices(ctx, cs.ls.Subject, clientID)
	if err != nil {
		s.storeFailed(w, r, err, "listing a subject's projects and consents failed", "Sign-in failed", "The gateway could not read your projects.")
		return
	}
	// granted holds, per project, the scopes this subject's active
	// consents to this client there already hold.
	granted := map[string][]string{}
	for _, c := range choices {
		granted[c.Project.ID] = s.heldScopes(c.Consents)
	}
	requested := cs.a.scopes
	redirect := cs.a.redirect
	view := web.Consent{
		ClientName: clientID, ClientID: clientID, RedirectHost: redirectLabel(redirect),
		Subject: cs.ls.Subject, CSRFToken: csrfToken(cs.secret),
	}
	if isMetadataURL(clientID) {
		// A metadata document names itself; its host is what vouches.
		u, _ := url.Parse(clientID)
		view.ClientName = cs.a.client.name + " (metadata at " + u.Hostname() + ")"
	} else if cs.a.client.name != "" {
		view.ClientName = cs.a.client.name
	}
	for i, c := range choices {
		p := c.Project
		note := consentNote(granted[p.ID], requested)
		view.Projects = append(view.Projects, web.ConsentProject{ID: p.ID, Name: p.Name, Checked: i == 0, Note: note})
	}
	for _, sc := range requested {
		v := web.ConsentScope{Name: sc, Description: s.describe(sc)}
		var newFor []string
		for _, c := range choices {
			if !slices.Contains(granted[c.Project.ID], sc) {
				newFor = append(newFor, c.Project.Name)
			}
		}
		v.NewFor = strings.Join(newFor, ", ")
		view.Scopes = append(view.Scopes, v)
	}
	web.RenderForm(w, http.StatusOK, "consent.html", view, formTarget(redirect))
}

// consentNote says, for one project, exactly what the token of an Allow
// will carry (tokenScopes): the scopes this client held there before, the
// scopes asked now, and that the token gets both. held is sorted
// (heldScopes).
func consentNote(held, requested []string) string {
	token := strings.Join(tokenScopes(requested, held), ", ")
	if len(held) == 0 {
		return "Nothing is granted to this client on this project yet. The token will carry the scopes asked now: " + token + "."
	}
	var fresh []string
	for _, sc := range requested {
		if !slices.Contains(held, sc) {
			fresh = append(fresh, sc)
		}
	}
	asked := strings.Join(requested, ", ")
	switch {
	case len(requested) == 0:
		asked = "none"
	case len(fresh) == 0:
		asked += " (all held before)"
	case len(fresh) < len(requested):
		asked += " (new: " + strings.Join(fresh, ", ") + ")"
	}
	return "Held before by this client on this project: " + strings.Join(held, ", ") + ". Asked now: " + asked +
		". The token will carry both: " + token + "."
}

// formTarget is the CSP source the consent page must allow its form to end
// at: the answer is a 303 to the client's redirect URI, and browsers hold a
// form post's redirects to form-action too. A private-use scheme is
// allowed as a scheme ("cursor:"), since its URIs may have no host.
func formTarget(redirect *url.URL) string {
	if isPrivateUse(redirect) {
		return redirect.Scheme + ":"
	}
	return redirect.Scheme + "://" + redirect.Host
}

// redirectLabel is where the consent page says the browser returns to: the
// host, or the scheme of a private-use redirect (the app that claims it).
func redirectLabel(redirect *url.URL) string {
	if isPrivateUse(redirect) {
		return redirect.Scheme + ": (an app on this device)"
	}
	return redirect.Host
}

func (s *Server) describe(scope string) string {
	for _, sc := range s.cfg.Scopes {
		if sc.Name == scope {
			return sc.Description
		}
	}
	return "(no description)"
}

// consentAnswer is POST /oauth/consent: the user's decision.
func (s *Server) consentAnswer(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	// Pages are served with Referrer-Policy: no-referrer, under which
	// browsers send "Origin: null" with the form; any other origin than
	// ours is a cross-site post. The CSRF token is the real check.
	if o := r.Header.Get("Origin"); o != "" && o != "null" && o != s.origin {
		s.errorPage(w, http.StatusForbidden, "Consent refused", "The consent form was sent from another site.")
		return
	}
	if err := r.ParseForm(); err != nil {
		s.errorPage(w, http.StatusBadRequest, "Consent refused", "The consent form could not be read.")
		return
	}
	cs, ok := s.loadConsent(w, r)
	if !ok {
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf_token")), []byte(csrfToken(cs.secret))) != 1 {
		s.cfg.Log.Warn("consent without a valid CSRF token", "subject", cs.ls.Subject)
		s.errorPage(w, http.StatusForbidden, "Consent refused",
			"The consent form could not be verified (its CSRF token is missing or wrong), so nothing was granted.")
		return
	}
	if r.PostForm.Get("action") != "allow" {
		s.endSession(ctx, w, cs.secret)
		s.answerClientError(w, cs.a, refuse(codeAccessDenied, "The resource owner or authorization server denied the request. The user denied the request."))
		return
	}
	projectID := r.PostForm.Get("project")
	code, err := store.NewToken(codePrefix)
	if err != nil {
		s.errorPage(w, http.StatusInternalServerError, "Consent failed", "The gateway could not record the consent.")
		return
	}
	// One store call ends the session, records the consent (or reuses one
	// with exactly these scopes) and stores the code, or does none of it:
	// a session answers once, and a failure leaves it to answer again.
	now := time.Now()
	g, err := s.cfg.Store.AnswerConsent(ctx, store.ConsentAnswer{
		SessionHash: cs.ls.SessionHash, Subject: cs.ls.Subject, ProjectID: projectID,
		Scopes: func(active []store.Consent) []string { return tokenScopes(cs.a.scopes, s.heldScopes(active)) },
		// Its request ID names the token family every token redeemed from
		// the code, and every rotation after, belongs to.
		Code: store.AuthorizationCode{
			CodeHash: store.HashToken(code), RequestID: rand.Text(), ClientID: cs.a.client.id,
			RedirectURI: cs.a.redirectParam, CodeChallenge: cs.a.challenge, CodeChallengeMethod: "S256",
			RequestedAt: now, ExpiresAt: now.Add(s.cfg.CodeTTL),
		},
	})
	switch {
	case errors.Is(err, store.ErrNotMember):
		s.cfg.Log.Warn("consent for a project the subject is not a member of", "subject", cs.ls.Subject, "project", projectID)
		s.errorPage(w, http.StatusForbidden, "Consent refused",
			"You are not a member of that project, so you cannot grant access to it. Nothing was granted.")
		return
	case errors.Is(err, store.ErrNotFound):
		// Another answer to this session came first, or it expired.
		s.sessionProblem(w, r, errNoSession)
		return
	case err != nil:
		s.storeFailed(w, r, err, "recording a consent failed", "Consent failed", "The gateway could not record the consent.")
		return
	}
	s.setSessionCookie(w, "", -1)
	s.answerClient(w, cs.a, url.Values{"code": {code}, "scope": {strings.Join(g.Scopes, " ")}})
}

// codePrefix marks authorization codes (agw_at_/agw_rt_ are the tokens').
const codePrefix = "agw_ac_"
