package github

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/test/githubemu"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

func TestBranchHead(t *testing.T) {
	s := newStack(t, githubemu.Options{}, true)
	ctx := context.Background()
	moved, err := s.emu.Commit("octo", "docs", "release/v2", "a branch with a slash", []githubemu.Entry{{Path: "a.md", Content: []byte("a")}})
	if err != nil {
		t.Fatal(err)
	}
	req := func(branch string) BranchRequest {
		return BranchRequest{InstallationID: s.docs.InstallationID, Owner: "octo", Repo: "docs", Branch: branch}
	}
	for _, c := range []struct {
		branch, want string
		code         toolerr.Code
	}{
		{"main", s.docs.Commit, ""},
		{"release/v2", moved, ""},
		{"absent", "", toolerr.ProviderNotFound},
		{"a//b", "", toolerr.InvalidArguments},
	} {
		t.Run(c.branch, func(t *testing.T) {
			s.emu.ResetCounters()
			got, err := s.client.BranchHead(ctx, req(c.branch))
			if c.code != "" {
				if code := codeOf(t, err); code != c.code {
					t.Fatalf("code %s, want %s", code, c.code)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("BranchHead = %q, %v; want %s", got, err, c.want)
			}
			var branchReqs []githubemu.Request
			for _, r := range s.emu.Requests() {
				if r.Route == githubemu.RouteBranch {
					branchReqs = append(branchReqs, r)
				}
			}
			if len(branchReqs) != 1 || branchReqs[0].RawPath != "/repos/octo/docs/branches/"+c.branch ||
				branchReqs[0].Header.Get("X-GitHub-Api-Version") != APIVersion || !strings.HasPrefix(branchReqs[0].Header.Get("Authorization"), "Bearer ghs_") {
				t.Fatalf("branch requests = %+v", branchReqs)
			}
		})
	}

	// A refused token is replaced once.
	s.emu.RevokeTokens()
	if got, err := s.client.BranchHead(ctx, req("main")); err != nil || got != s.docs.Commit {
		t.Fatalf("after token revocation: %q, %v", got, err)
	}
}

// branchAnswer is a fault answering 200 with s as the branch answer.
func branchAnswer(s string) githubemu.Fault {
	return githubemu.Fault{Kind: githubemu.FaultStatus, Status: 200, Body: []byte(s)}
}

func TestBranchHeadFaults(t *testing.T) {
	s := newStack(t, githubemu.Options{}, true)
	sha := s.docs.Commit
	for _, c := range []struct {
		name  string
		fault githubemu.Fault
		code  toolerr.Code
	}{
		{"redirect (renamed branch)", githubemu.Fault{Kind: githubemu.FaultRedirect}, toolerr.RedirectRefused},
		{"404", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 404}, toolerr.ProviderNotFound},
		{"403", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 403}, toolerr.ProviderForbidden},
		{"429", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 429, Header: http.Header{"Retry-After": {"5"}}}, toolerr.ProviderRateLimited},
		{"500", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 500}, toolerr.ProviderUnavailable},
		{"huge", githubemu.Fault{Kind: githubemu.FaultHugeBody, Size: maxBranchResponse + 1}, toolerr.ResponseTooLarge},
		{"malformed JSON", githubemu.Fault{Kind: githubemu.FaultMalformedJSON}, toolerr.ProviderMalformed},
		{"HTML", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte("<html>")}, toolerr.ProviderMalformed},
		{"another branch", branchAnswer(`{"name":"other","commit":{"sha":"` + sha + `"}}`), toolerr.ProviderMalformed},
		{"no commit", branchAnswer(`{"name":"main"}`), toolerr.ProviderMalformed},
		{"short sha", branchAnswer(`{"name":"main","commit":{"sha":"` + sha[:7] + `"}}`), toolerr.ProviderMalformed},
		{"uppercase sha", branchAnswer(`{"name":"main","commit":{"sha":"` + strings.ToUpper(sha) + `"}}`), toolerr.ProviderMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			s.emu.SetFault(githubemu.RouteBranch, c.fault)
			defer s.emu.ClearFaults()
			_, err := s.client.BranchHead(context.Background(), BranchRequest{InstallationID: s.docs.InstallationID, Owner: "octo", Repo: "docs", Branch: "main"})
			if got := codeOf(t, err); got != c.code {
				t.Fatalf("code %s, want %s (%v)", got, c.code, err)
			}
		})
	}
}

// TestBranchHeadStrict: the branch answer gets the strict check the other
// answers had. Before, parseBranch decoded with encoding/json alone, so a
// repeated or case-folded commit resolved to the last one while another
// reader saw the first.
func TestBranchHeadStrict(t *testing.T) {
	s := newStack(t, githubemu.Options{}, true)
	sha := s.docs.Commit
	other := strings.Repeat("a", 40)
	for _, c := range []struct {
		name  string
		fault githubemu.Fault
		code  toolerr.Code
	}{
		{"repeated commit", branchAnswer(`{"name":"main","commit":{"sha":"` + other + `"},"commit":{"sha":"` + sha + `"}}`), toolerr.ProviderMalformed},
		{"case-folded commit", branchAnswer(`{"name":"main","commit":{"sha":"` + other + `"},"Commit":{"sha":"` + sha + `"}}`), toolerr.ProviderMalformed},
		{"repeated sha inside commit", branchAnswer(`{"name":"main","commit":{"sha":"` + other + `","SHA":"` + sha + `"}}`), toolerr.ProviderMalformed},
		{"repeated name", branchAnswer(`{"name":"other","name":"main","commit":{"sha":"` + sha + `"}}`), toolerr.ProviderMalformed},
		{"too deep", branchAnswer(`{"name":"main","commit":{"sha":"` + sha + `"},"x":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`), toolerr.ProviderMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			s.emu.SetFault(githubemu.RouteBranch, c.fault)
			defer s.emu.ClearFaults()
			_, err := s.client.BranchHead(context.Background(), BranchRequest{InstallationID: s.docs.InstallationID, Owner: "octo", Repo: "docs", Branch: "main"})
			if got := codeOf(t, err); got != c.code {
				t.Fatalf("code %s, want %s (%v)", got, c.code, err)
			}
		})
	}
	// A well-formed answer with other members still resolves.
	s.emu.SetFault(githubemu.RouteBranch, branchAnswer(`{"name":"main","commit":{"sha":"`+sha+`","url":"x"},"protected":false}`))
	defer s.emu.ClearFaults()
	got, err := s.client.BranchHead(context.Background(), BranchRequest{InstallationID: s.docs.InstallationID, Owner: "octo", Repo: "docs", Branch: "main"})
	if err != nil || got != sha {
		t.Fatalf("BranchHead = %q, %v; want %s", got, err, sha)
	}
}
