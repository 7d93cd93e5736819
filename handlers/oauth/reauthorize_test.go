package oauth_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestReauthorizationKeepsGrantedScopes pins the rule a re-authorization
// follows: the token is for the scopes asked for plus those the person's
// active consents to the same client on the same project hold, so a client
// that asks again for fewer scopes (a step-up's scope alone, or its first
// 401's) keeps what was consented to. A revoked consent, another client's
// consent, another project's consent and a stored scope this server does not
// serve are not kept; an existing consent is never changed.
func TestReauthorizationKeepsGrantedScopes(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	if err := h.st.AddMember(ctx, h.projectB, alice); err != nil {
		t.Fatal(err)
	}
	// authorize runs alice's authorization of client for scope on project
	// and returns the consent page's body and the token answer.
	authorize := func(t *testing.T, client, scope, project string) (string, tokenAnswer) {
		t.Helper()
		a := h.newAuthz()
		a.params.Set("client_id", client)
		a.params.Set("scope", scope)
		b := newBrowser(t)
		p := h.login(t, b, a, "alice", "alice-pw")
		code := codeFrom(t, h.consent(t, b, url.Values{"csrf_token": {csrfOf(t, p)}, "project": {project}, "action": {"allow"}}), a)
		tok := h.exchange(t, code, a.verifier, "client_id", client)
		if tok.status != http.StatusOK {
			t.Fatalf("token: %d %v", tok.status, tok.body)
		}
		return p.body, tok
	}
	scopesOf := func(t *testing.T, tok tokenAnswer) []string {
		t.Helper()
		p, err := h.st.LookupAccessToken(ctx, tok.str("access_token"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Fields(tok.str("scope")); !sameSet(got, p.Scopes) {
			t.Fatalf("the token answer says scope %v, the token holds %v", got, p.Scopes)
		}
		return p.Scopes
	}
	both := []string{"catalog:read", "documents:read"}

	_, first := authorize(t, h.clientID, "documents:read catalog:read", h.projectA)
	if got := scopesOf(t, first); !slices.Equal(got, both) {
		t.Fatalf("first authorization: %v", got)
	}
	consents := func(t *testing.T, project string) int {
		t.Helper()
		gs, err := h.st.ListConsents(ctx, project, true)
		if err != nil {
			t.Fatal(err)
		}
		return len(gs)
	}

	t.Run("fewer scopes asked, the granted ones kept", func(t *testing.T) {
		page, tok := authorize(t, h.clientID, "documents:read", h.projectA)
		if got := scopesOf(t, tok); !slices.Equal(got, both) {
			t.Fatalf("re-authorization for documents:read: %v, want %v", got, both)
		}
		// The page says what the token carries, and nothing that
		// contradicts it.
		if want := "Held before by this client on this project: catalog:read, documents:read. Asked now: documents:read (all held before). The token will carry both: catalog:read, documents:read."; !strings.Contains(page, want) {
			t.Fatalf("the consent page does not say %q:\n%s", want, page)
		}
		for _, wrong := range []string{"exactly these scopes", "never widened"} {
			if strings.Contains(page, wrong) {
				t.Fatalf("the consent page says %q:\n%s", wrong, page)
			}
		}
		if n := consents(t, h.projectA); n != 1 {
			t.Fatalf("%d consents: the union is the existing consent, reused", n)
		}
	})
	t.Run("another project keeps nothing", func(t *testing.T) {
		_, tok := authorize(t, h.clientID, "documents:read", h.projectB)
		if got := scopesOf(t, tok); !slices.Equal(got, []string{"documents:read"}) {
			t.Fatalf("project B: %v", got)
		}
	})
	t.Run("another client keeps nothing", func(t *testing.T) {
		other := h.register(t, map[string]any{"client_name": "Other", "redirect_uris": []string{redirectURI}})["client_id"].(string)
		_, tok := authorize(t, other, "documents:read", h.projectA)
		if got := scopesOf(t, tok); !slices.Equal(got, []string{"documents:read"}) {
			t.Fatalf("another client: %v", got)
		}
	})
	t.Run("a scope the server does not serve is not kept", func(t *testing.T) {
		if _, err := h.st.CreateConsent(ctx, h.projectB, alice, h.clientID, []string{"memory"}); err != nil {
			t.Fatal(err)
		}
		_, tok := authorize(t, h.clientID, "catalog:read", h.projectB)
		if got := scopesOf(t, tok); !slices.Equal(got, both) {
			t.Fatalf("project B again: %v, want %v without memory", got, both)
		}
	})
	t.Run("a revoked consent is not kept", func(t *testing.T) {
		gs, err := h.st.ListConsents(ctx, h.projectA, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gs {
			if g.ClientID == h.clientID {
				if _, err := h.st.RevokeConsent(ctx, g.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
		_, tok := authorize(t, h.clientID, "documents:read", h.projectA)
		if got := scopesOf(t, tok); !slices.Equal(got, []string{"documents:read"}) {
			t.Fatalf("after revocation: %v", got)
		}
		if old, err := h.st.LookupAccessToken(ctx, first.str("access_token")); err == nil {
			t.Fatalf("a token of the revoked consent still works: %+v", old)
		}
	})
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
