package store_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/store"
)

// signedIn stores a login session signed in as subject and returns its
// hash.
func signedIn(t *testing.T, s store.Store, subject string) string {
	t.Helper()
	ctx := context.Background()
	h := store.HashToken(unique("session"))
	wantErr(t, s.CreateLoginSession(ctx, store.LoginSession{
		SessionHash: h, AuthorizeQuery: "client_id=cli_flow", IdPState: "st", IdPNonce: "n", IdPVerifier: "v",
		ExpiresAt: time.Now().Add(time.Minute),
	}), nil)
	wantErr(t, s.SetLoginSubject(ctx, h, subject), nil)
	return h
}

// answer is an Allow of subject on project for client cli_flow, whose
// scopes are those asked and those the active consents hold; seen gets
// the consents the rule was shown.
func answer(sessionHash, subject, projectID string, seen *[]store.Consent, asked ...string) store.ConsentAnswer {
	return store.ConsentAnswer{
		SessionHash: sessionHash, Subject: subject, ProjectID: projectID,
		Scopes: func(active []store.Consent) []string {
			if seen != nil {
				*seen = active
			}
			out := slices.Clone(asked)
			for _, g := range active {
				out = append(out, g.Scopes...)
			}
			return out
		},
		Code: store.AuthorizationCode{
			CodeHash: store.HashToken(unique("code")), RequestID: unique("req"), ClientID: "cli_flow",
			RedirectURI: "http://127.0.0.1/cb", CodeChallenge: "challenge", CodeChallengeMethod: "S256",
			RequestedAt: time.Now(), ExpiresAt: time.Now().Add(time.Minute),
		},
	}
}

// activeConsents lists the project's active consents.
func activeConsents(t *testing.T, s store.Store, projectID string) []store.Consent {
	t.Helper()
	return try(s.ListConsents(context.Background(), projectID, false)).must(t)
}

// testConsentChoices: one read gives the subject's projects, by name, each
// with the subject's active consents to this client there, and nothing of
// other clients, other subjects or revoked consents.
func testConsentChoices(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture(t, s)
	other := try(s.CreateProject(ctx, "", "aaa-"+unique("project"))).must(t) // sorts first
	wantErr(t, s.AddMember(ctx, other.ID, f.subject), nil)
	stranger := newFixture(t, s) // a project f.subject is not a member of
	older := f.consent(t, s, "cli_flow", "documents:read")
	newer := f.consent(t, s, "cli_flow", "catalog:read", "documents:read")
	revoked := f.consent(t, s, "cli_flow", "workflow:dispatch")
	try(s.RevokeConsent(ctx, revoked.ID)).must(t)
	f.consent(t, s, "cli_other", "documents:read")
	wantErr(t, s.AddMember(ctx, f.project.ID, stranger.subject), nil)
	try(s.CreateConsent(ctx, f.project.ID, stranger.subject, "cli_flow", []string{"documents:read"})).must(t)

	got := try(s.ConsentChoices(ctx, f.subject, "cli_flow")).must(t)
	if len(got) != 2 || got[0].Project.ID != other.ID || got[1].Project.ID != f.project.ID {
		t.Fatalf("choices %+v, want %s then %s", got, other.ID, f.project.ID)
	}
	if got[0].Project != other || len(got[0].Consents) != 0 {
		t.Errorf("first choice %+v, want %+v without consents", got[0], other)
	}
	gs := got[1].Consents
	if len(gs) != 2 || gs[0].ID != older.ID || gs[1].ID != newer.ID {
		t.Fatalf("consents %+v, want %s then %s", gs, older.ID, newer.ID)
	}
	if g := gs[1]; g.ProjectID != f.project.ID || g.Subject != f.subject || g.ClientID != "cli_flow" ||
		!slices.Equal(g.Scopes, newer.Scopes) || !g.CreatedAt.Equal(newer.CreatedAt) || g.RevokedAt != nil {
		t.Errorf("consent %+v, want %+v", g, newer)
	}
	if got := try(s.ConsentChoices(ctx, unique("nobody"), "cli_flow")).must(t); len(got) != 0 {
		t.Errorf("a subject of no project is offered %+v", got)
	}
}

// testAnswerConsent: an Allow ends the session, records a consent (or
// reuses one with exactly its scopes, never widening one) and stores the
// code under it; a session answers once.
func testAnswerConsent(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture(t, s)
	f.consent(t, s, "cli_other", "workflow:dispatch") // another client's: not shown to the rule

	h := signedIn(t, s, f.subject)
	var seen []store.Consent
	a := answer(h, f.subject, f.project.ID, &seen, "documents:read")
	g := try(s.AnswerConsent(ctx, a)).must(t)
	if len(seen) != 0 {
		t.Errorf("the rule was shown %+v, want no consents", seen)
	}
	if g.ProjectID != f.project.ID || g.Subject != f.subject || g.ClientID != "cli_flow" || !slices.Equal(g.Scopes, []string{"documents:read"}) {
		t.Fatalf("consent %+v", g)
	}
	c := try(s.GetAuthorizationCode(ctx, a.Code.CodeHash)).must(t)
	if c.ConsentID != g.ID || !slices.Equal(c.Scopes, g.Scopes) || c.CodeChallenge != "challenge" || c.ClientID != "cli_flow" || c.UsedAt != nil {
		t.Fatalf("code %+v under consent %s", c, g.ID)
	}
	_, err := s.GetLoginSession(ctx, h)
	wantErr(t, err, store.ErrNotFound)

	// The session answered: a second answer stores nothing.
	again := answer(h, f.subject, f.project.ID, nil, "catalog:read")
	_, err = s.AnswerConsent(ctx, again)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.GetAuthorizationCode(ctx, again.Code.CodeHash)
	wantErr(t, err, store.ErrNotFound)

	// The same scopes again reuse the consent; more make a new one, and
	// the one held is left as it was.
	reuse := answer(signedIn(t, s, f.subject), f.subject, f.project.ID, &seen)
	if got := try(s.AnswerConsent(ctx, reuse)).must(t); got.ID != g.ID {
		t.Errorf("the same scopes recorded consent %s, want %s reused", got.ID, g.ID)
	}
	if len(seen) != 1 || seen[0].ID != g.ID {
		t.Errorf("the rule was shown %+v, want %s", seen, g.ID)
	}
	wider := try(s.AnswerConsent(ctx, answer(signedIn(t, s, f.subject), f.subject, f.project.ID, nil, "catalog:read"))).must(t)
	if wider.ID == g.ID || !slices.Equal(wider.Scopes, []string{"catalog:read", "documents:read"}) {
		t.Errorf("wider consent %+v", wider)
	}
	if got := try(s.GetConsent(ctx, g.ID)).must(t); !slices.Equal(got.Scopes, []string{"documents:read"}) {
		t.Errorf("the held consent changed: %+v", got)
	}
	if n := len(activeConsents(t, s, f.project.ID)); n != 3 { // cli_other's, g, wider
		t.Errorf("%d active consents, want 3", n)
	}
}

// testAnswerConsentRefusals: an answer of another subject, of a session
// not signed in or expired, or for a project the subject is not a member
// of stores nothing, and leaves the session as it was.
func testAnswerConsentRefusals(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture(t, s)
	stranger := newFixture(t, s)
	h := signedIn(t, s, f.subject)

	for _, c := range []struct {
		name string
		a    store.ConsentAnswer
		want error
	}{
		{"another subject", answer(h, stranger.subject, stranger.project.ID, nil, "documents:read"), store.ErrNotFound},
		{"a project of others", answer(h, f.subject, stranger.project.ID, nil, "documents:read"), store.ErrNotMember},
		{"a project that does not exist", answer(h, f.subject, "prj_doesnotexist", nil, "documents:read"), store.ErrNotMember},
		{"no scopes", answer(h, f.subject, f.project.ID, nil), store.ErrInvalid},
	} {
		_, err := s.AnswerConsent(ctx, c.a)
		if !errors.Is(err, c.want) {
			t.Fatalf("%s: %v, want %v", c.name, err, c.want)
		}
		try(s.GetLoginSession(ctx, h)).must(t)
	}
	if errors.Is(store.ErrNotMember, store.ErrNotFound) || !errors.Is(store.ErrNotMember, store.ErrInvalid) {
		t.Error("ErrNotMember must be ErrInvalid, and not ErrNotFound")
	}

	notSignedIn := store.HashToken(unique("session"))
	expired := store.HashToken(unique("session"))
	for _, ls := range []store.LoginSession{
		{SessionHash: notSignedIn, ExpiresAt: time.Now().Add(time.Minute)},
		{SessionHash: expired, ExpiresAt: time.Now().Add(-time.Second)},
	} {
		ls.AuthorizeQuery, ls.IdPState, ls.IdPNonce, ls.IdPVerifier = "client_id=cli_flow", "st", "n", "v"
		wantErr(t, s.CreateLoginSession(ctx, ls), nil)
		_, err := s.AnswerConsent(ctx, answer(ls.SessionHash, f.subject, f.project.ID, nil, "documents:read"))
		wantErr(t, err, store.ErrNotFound)
	}
	if gs := activeConsents(t, s, f.project.ID); len(gs) != 0 {
		t.Fatalf("refused answers recorded %+v", gs)
	}
}

// testAnswerConsentAtomic: when the code cannot be stored — here its hash
// is already taken, which only the database finds — the consent recorded
// before it in the transaction is gone too, and the session is still
// there to answer again.
func testAnswerConsentAtomic(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture(t, s)
	first := answer(signedIn(t, s, f.subject), f.subject, f.project.ID, nil, "documents:read")
	try(s.AnswerConsent(ctx, first)).must(t)

	h := signedIn(t, s, f.subject)
	clash := answer(h, f.subject, f.project.ID, nil, "catalog:read")
	clash.Code.CodeHash = first.Code.CodeHash
	_, err := s.AnswerConsent(ctx, clash)
	wantErr(t, err, store.ErrConflict)
	if gs := activeConsents(t, s, f.project.ID); len(gs) != 1 {
		t.Fatalf("a failed answer left consents %+v, want the first one alone", gs)
	}
	try(s.GetLoginSession(ctx, h)).must(t)
	retry := answer(h, f.subject, f.project.ID, nil, "catalog:read")
	try(s.AnswerConsent(ctx, retry)).must(t)
}

// testConcurrentAnswers: of concurrent answers to one session exactly one
// records a consent and a code; the others find the session gone and
// store nothing.
func testConcurrentAnswers(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture(t, s)
	h := signedIn(t, s, f.subject)
	const n = 6
	answers := make([]store.ConsentAnswer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		// Each asks for its own scope, so each would record a consent.
		answers[i] = answer(h, f.subject, f.project.ID, nil, unique("scope"))
		wg.Go(func() { _, errs[i] = s.AnswerConsent(ctx, answers[i]) })
	}
	wg.Wait()
	ok := 0
	for i, err := range errs {
		_, cerr := s.GetAuthorizationCode(ctx, answers[i].Code.CodeHash)
		switch {
		case err == nil:
			ok++
			wantErr(t, cerr, nil)
		case errors.Is(err, store.ErrNotFound):
			wantErr(t, cerr, store.ErrNotFound)
		default:
			t.Errorf("answer %d: %v", i, err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d concurrent answers succeeded, want exactly 1", ok, n)
	}
	if gs := activeConsents(t, s, f.project.ID); len(gs) != 1 {
		t.Fatalf("%d consents recorded, want 1: %+v", len(gs), gs)
	}
}
