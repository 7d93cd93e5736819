package github

import (
	"context"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/test/githubemu"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// TestCheckGrant: a token answer may grant contents read (and the
// metadata read GitHub adds) on exactly the repository asked for; any
// wider grant is refused.
func TestCheckGrant(t *testing.T) {
	const sel = `"repository_selection":"selected","repositories":[{"name":"docs","full_name":"octo/docs"}]`
	cases := []struct {
		name, body string
		ok         bool
	}{
		{"as asked", `{"permissions":{"contents":"read","metadata":"read"},` + sel + `}`, true},
		{"without metadata", `{"permissions":{"contents":"read"},` + sel + `}`, true},
		{"repository name in another case", `{"permissions":{"contents":"read"},"repository_selection":"selected","repositories":[{"name":"Docs"}]}`, true},
		{"contents write", `{"permissions":{"contents":"write","metadata":"read"},` + sel + `}`, false},
		{"another permission", `{"permissions":{"contents":"read","issues":"read"},` + sel + `}`, false},
		{"administration write", `{"permissions":{"contents":"read","administration":"write"},` + sel + `}`, false},
		{"a case-folded permission", `{"permissions":{"contents":"read","Contents":"write"},` + sel + `}`, false},
		{"no contents", `{"permissions":{"metadata":"read"},` + sel + `}`, false},
		{"no permissions", `{` + sel + `}`, false},
		{"all repositories", `{"permissions":{"contents":"read"},"repository_selection":"all"}`, false},
		{"all, with a list", `{"permissions":{"contents":"read"},"repository_selection":"all","repositories":[{"name":"docs"}]}`, false},
		{"selected without a list", `{"permissions":{"contents":"read"},"repository_selection":"selected"}`, false},
		{"an empty list", `{"permissions":{"contents":"read"},"repository_selection":"selected","repositories":[]}`, false},
		{"another repository too", `{"permissions":{"contents":"read"},"repository_selection":"selected","repositories":[{"name":"docs"},{"name":"secrets"}]}`, false},
		{"another repository", `{"permissions":{"contents":"read"},"repository_selection":"selected","repositories":[{"name":"secrets"}]}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkGrant([]byte(c.body), "docs")
			if c.ok != (err == nil) {
				t.Fatalf("checkGrant = %v, want ok %v", err, c.ok)
			}
			if err != nil && toolerr.As(err).Code != toolerr.ProviderMalformed {
				t.Fatalf("code %s", toolerr.As(err).Code)
			}
		})
	}
}

// TestTokenWiderThanAsked: the emulator's token route grants write on
// every repository however the mint narrowed it; the gateway neither uses
// nor caches that token.
func TestTokenWiderThanAsked(t *testing.T) {
	s := newStack(t, githubemu.Options{}, true)
	s.emu.WidenTokens(true)
	for i := range 2 {
		_, err := s.client.GetFile(context.Background(), s.req(s.docs.Readme))
		if err == nil || codeOf(t, err) != toolerr.ProviderMalformed || !strings.Contains(err.Error(), "wider than asked") {
			t.Fatalf("read %d: %v, want provider_malformed naming the wide grant", i, err)
		}
		if n := s.emu.TokenMints(); n != i+1 {
			t.Fatalf("%d mints after %d reads: the wide token was cached", n, i+1)
		}
		if s.emu.ContentsRequests() != 0 {
			t.Fatal("the wide token was used for a Contents read")
		}
	}
	s.emu.WidenTokens(false)
	if _, err := s.client.GetFile(context.Background(), s.req(s.docs.Readme)); err != nil {
		t.Fatalf("a token as asked: %v", err)
	}
}
