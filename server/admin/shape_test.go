package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/store/storetest"
)

// run runs one admin command against st with --json and returns what it
// printed.
func run(t *testing.T, st store.Store, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	open := func(context.Context, []string, io.Writer) (store.Store, error) { return nopClose{st}, nil }
	err := Run(t.Context(), append(args, "--json"), &out, &errOut, Target{OpenStore: open, Scopes: testScopes})
	return out.String(), err
}

// testScopes stand for the scopes the gateway's tools check.
var testScopes = []string{"documents:read", "catalog:read"}

// nopClose keeps the test's store open across commands.
type nopClose struct{ store.Store }

func (nopClose) Close() error { return nil }

// TestListRevokeShape pins the one list/revoke shape every entity shares:
// the owner flag is required and must exist, revoked things are listed only
// with --include-revoked, and a revoke is confined to its owner.
func TestListRevokeShape(t *testing.T) {
	st := storetest.SQLite(t)
	ctx := context.Background()
	p, err := st.CreateProject(ctx, "", "docs")
	if err != nil {
		t.Fatal(err)
	}
	other, err := st.CreateProject(ctx, "", "other")
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.LinkRepository(ctx, p.ID, "octo", "docs", 7)
	if err != nil {
		t.Fatal(err)
	}
	count := func(t *testing.T, out string) int {
		t.Helper()
		var arr []map[string]any
		if err := json.Unmarshal([]byte(out), &arr); err != nil {
			t.Fatalf("list output %q: %v", out, err)
		}
		return len(arr)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		usage   bool
		errText string
	}{
		{"list without owner", []string{"list-repositories"}, true, "--project-id"},
		{"list of a missing owner", []string{"list-repositories", "--project-id", "prj_missing"}, false, "does not exist"},
		{"revoke without id", []string{"revoke-repository", "--project-id", p.ID}, true, "--repository-id"},
		{"revoke without owner", []string{"revoke-repository", "--repository-id", r.ID}, true, "--project-id"},
		{"revoke under another owner", []string{"revoke-repository", "--project-id", other.ID, "--repository-id", r.ID}, false, ""},
		{"consent revoke needs only its id", []string{"revoke-consent"}, true, "--consent-id"},
		{"the earlier name revoke-grant is the same command", []string{"revoke-grant"}, true, "--consent-id"},
		{"list-consents without owner", []string{"list-consents"}, true, "--project-id"},
		{"account list without owner", []string{"list-instruction-sources"}, true, "--account-id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := run(t, st, tc.args...)
			var ue *UsageError
			if err == nil || errors.As(err, &ue) != tc.usage || !strings.Contains(err.Error(), tc.errText) {
				t.Fatalf("err = %v, want usage=%v containing %q", err, tc.usage, tc.errText)
			}
		})
	}
	out, err := run(t, st, "list-repositories", "--project-id", p.ID)
	if err != nil || count(t, out) != 1 {
		t.Fatalf("list = %s, %v", out, err)
	}
	if out, err := run(t, st, "revoke-repository", "--project-id", p.ID, "--repository-id", r.ID); err != nil || !strings.Contains(out, r.ID) {
		t.Fatalf("revoke = %s, %v", out, err)
	}
	if out, err := run(t, st, "list-repositories", "--project-id", p.ID); err != nil || count(t, out) != 0 {
		t.Fatalf("list after revoke = %s, %v", out, err)
	}
	if out, err := run(t, st, "list-repositories", "--project-id", p.ID, "--include-revoked"); err != nil || count(t, out) != 1 {
		t.Fatalf("list --include-revoked = %s, %v", out, err)
	}
}

func TestCommaList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" , ,", nil},
		{"a", []string{"a"}},
		{" a , b,,c ", []string{"a", "b", "c"}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got := commaList(tc.in)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || (got == nil) != (tc.want == nil) {
				t.Fatalf("commaList(%q) = %#v, want %#v", tc.in, got, tc.want)
			}
		})
	}
}

func TestPinResolve(t *testing.T) {
	sha := strings.Repeat("ab", 20)
	for _, tc := range []struct {
		name, commit, track string
		wantSHA, wantTrack  string
		usage, bad          bool
	}{
		{"commit, lowercased", strings.ToUpper(sha), "", sha, "", false, false},
		{"branch", "", "release/1", "", "release/1", false, false},
		{"both", sha, "main", "", "", true, false},
		{"neither", "", "", "", "", true, false},
		{"short commit", sha[:7], "", "", "", false, true},
		{"bad branch", "", "a//b", "", "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			p := pinFlags(fs, "now")
			if err := fs.Parse([]string{"--commit-sha", tc.commit, "--track", tc.track}); err != nil {
				t.Fatal(err)
			}
			sha, track, err := p.resolve()
			var ue *UsageError
			switch {
			case tc.usage && !errors.As(err, &ue), tc.bad && (err == nil || errors.As(err, &ue)):
				t.Fatalf("err = %v, want usage=%v bad=%v", err, tc.usage, tc.bad)
			case !tc.usage && !tc.bad && (err != nil || sha != tc.wantSHA || track != tc.wantTrack):
				t.Fatalf("resolve = %q, %q, %v", sha, track, err)
			}
		})
	}
}

// TestLinkShape pins the one link shape both owners share: the owner flag,
// GitHub owner and repository are required, the installation ID must be
// positive, the owner must exist, and the link is printed.
func TestLinkShape(t *testing.T) {
	st := storetest.SQLite(t)
	ctx := context.Background()
	p, err := st.CreateProject(ctx, "", "docs")
	if err != nil {
		t.Fatal(err)
	}
	acc, err := st.CreateAccount(ctx, "team")
	if err != nil {
		t.Fatal(err)
	}
	for _, owner := range []struct{ cmd, flag, id, missing string }{
		{"link-repository", "--project-id", p.ID, "prj_missing"},
		{"link-account-repository", "--account-id", acc.ID, "acc_missing"},
	} {
		repo := []string{"--github-owner", "octo", "--github-repository", "docs"}
		for _, tc := range []struct {
			name    string
			args    []string
			usage   bool
			errText string
		}{
			{"without owner", append([]string{"--installation-id", "7"}, repo...), true, owner.flag},
			{"without repository", []string{owner.flag, owner.id, "--github-owner", "octo", "--installation-id", "7"}, true, "--github-repository"},
			{"without installation", append([]string{owner.flag, owner.id}, repo...), true, "--installation-id"},
			{"negative installation", append([]string{owner.flag, owner.id, "--installation-id", "-7"}, repo...), true, "--installation-id"},
			{"missing owner", append([]string{owner.flag, owner.missing, "--installation-id", "7"}, repo...), false, "does not exist"},
		} {
			t.Run(owner.cmd+" "+tc.name, func(t *testing.T) {
				_, err := run(t, st, append([]string{owner.cmd}, tc.args...)...)
				var ue *UsageError
				if err == nil || errors.As(err, &ue) != tc.usage || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("err = %v, want usage=%v containing %q", err, tc.usage, tc.errText)
				}
			})
		}
		t.Run(owner.cmd+" links", func(t *testing.T) {
			out, err := run(t, st, append([]string{owner.cmd, owner.flag, owner.id, "--installation-id", "7"}, repo...)...)
			if err != nil || !strings.Contains(out, owner.id) || !strings.Contains(out, `"installation_id": 7`) && !strings.Contains(out, `"installation_id":7`) {
				t.Fatalf("link = %s, %v", out, err)
			}
		})
	}
}
