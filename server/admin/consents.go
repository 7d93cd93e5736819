package admin

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agent-gateway/agent-gateway/store"
)

// Admin commands for credentials: OAuth consents and their access tokens, and
// legacy project tokens (memory/task only). Secrets are printed once.

func adminIssueLegacyToken(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	project := fs.String("project-id", "", "project ID")
	perms := fs.String("permissions", "", "comma-separated: memory, task")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"project-id": project, "permissions": perms}); err != nil {
			return err
		}
		if _, err := a.project(ctx, *project); err != nil {
			return err
		}
		t, err := a.st.IssueLegacyToken(ctx, *project, commaList(*perms))
		if err != nil {
			return err
		}
		return a.print(field{"token_id", t.ID}, field{"project_id", t.ProjectID}, field{"permissions", t.Permissions},
			field{"created_at", t.CreatedAt}, field{"token", t.Secret})
	}
}

var adminRevokeLegacyToken = revokeCommand(byProject, "token-id", "token ID (ltk_…)", store.Store.RevokeLegacyToken,
	func(t store.LegacyToken) []field {
		return []field{{"token_id", t.ID}, {"project_id", t.ProjectID}, {"permissions", t.Permissions}, {"revoked_at", t.RevokedAt}}
	})

// defaultAdminTokenTTL is the lifetime of an access token the CLI prints:
// short, like every gateway access token; issue-access-token makes more.
const defaultAdminTokenTTL = time.Hour

// consentFields print a consent. Its ID keeps the field name grant_id,
// the column's, which scripts written against earlier releases read.
func consentFields(g store.Consent) []field {
	return []field{
		{"grant_id", g.ID}, {"project_id", g.ProjectID}, {"subject", g.Subject}, {"client_id", g.ClientID},
		{"scopes", g.Scopes}, {"created_at", g.CreatedAt}, {"revoked_at", g.RevokedAt},
	}
}

func adminCreateConsent(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	project := fs.String("project-id", "", "project ID")
	subject := fs.String("subject", "", "OIDC subject, a member of the project (admin add-member)")
	scopes := fs.String("scopes", "", "comma- or space-separated scopes, e.g. documents:read")
	client := fs.String("client-id", "admin-cli", "client the consent is for")
	ttl := fs.Duration("token-ttl", defaultAdminTokenTTL, "lifetime of the printed access token")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"project-id": project, "subject": subject, "scopes": scopes}); err != nil {
			return err
		}
		if *ttl <= 0 {
			return &UsageError{Msg: "--token-ttl must be positive"}
		}
		list := strings.Fields(strings.ReplaceAll(*scopes, ",", " "))
		if _, err := a.project(ctx, *project); err != nil {
			return err
		}
		if ok, err := a.st.IsMember(ctx, *project, *subject); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("subject %q is not a member of project %q (add it with admin add-member)", *subject, *project)
		}
		g, err := a.st.CreateConsent(ctx, *project, *subject, *client, list)
		if err != nil {
			return err
		}
		tok, err := a.st.IssueAccessToken(ctx, g.ID, *ttl)
		if err != nil {
			return err
		}
		// A scope no tool checks is stored (the consent records it)
		// but gives no access here: say so.
		var unknown []string
		for _, s := range g.Scopes {
			if !slices.Contains(a.scopes, s) {
				unknown = append(unknown, s)
			}
		}
		fields := append(consentFields(g), field{"access_token", tok.Secret}, field{"expires_at", tok.ExpiresAt})
		if len(unknown) > 0 {
			fields = append(fields, field{"note", "scopes not checked by this gateway: " + strings.Join(unknown, " ")})
		}
		return a.print(fields...)
	}
}

func adminIssueAccessToken(fs *flag.FlagSet) func(context.Context, *adminRun) error {
	consent := fs.String("consent-id", "", "consent ID (grt_…)")
	aliasFlag(fs, "grant-id", "consent-id")
	ttl := fs.Duration("token-ttl", defaultAdminTokenTTL, "lifetime of the access token")
	return func(ctx context.Context, a *adminRun) error {
		if err := required(map[string]*string{"consent-id": consent}); err != nil {
			return err
		}
		if *ttl <= 0 {
			return &UsageError{Msg: "--token-ttl must be positive"}
		}
		tok, err := a.st.IssueAccessToken(ctx, *consent, *ttl)
		if err != nil {
			return err
		}
		return a.print(field{"grant_id", tok.ConsentID}, field{"access_token", tok.Secret}, field{"expires_at", tok.ExpiresAt})
	}
}

var adminListConsents = listCommand(byProject, "consents", store.Store.ListConsents, consentFields)

var adminRevokeConsent = withFlagAlias(revokeCommand(scope{}, "consent-id", "consent ID (grt_…)",
	func(st store.Store, ctx context.Context, _, id string) (store.Consent, error) {
		return st.RevokeConsent(ctx, id)
	}, consentFields), "grant-id", "consent-id")

// aliasFlag makes old a second name of the flag current, so that scripts
// written before current was renamed keep working.
func aliasFlag(fs *flag.FlagSet, old, current string) {
	fs.Var(fs.Lookup(current).Value, old, "the earlier name of --"+current)
}

// withFlagAlias is s with old accepted as a second name of its flag current.
func withFlagAlias(s setup, old, current string) setup {
	return func(fs *flag.FlagSet) func(context.Context, *adminRun) error {
		run := s(fs)
		aliasFlag(fs, old, current)
		return run
	}
}
