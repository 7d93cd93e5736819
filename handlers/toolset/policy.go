package toolset

import (
	"context"
	"slices"
	"strings"

	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// Need is what a tool needs of its caller beyond its policy's scopes. The
// scope gate in front of an HTTP endpoint knows only "authenticated" and
// scopes; a tool that acts within a project, or forwards the caller's own
// Forgejo credential, declares it here so the toolset can refuse a caller
// that lacks it before the tool runs.
type Need int

// The needs a tool may declare.
const (
	// AnyCaller: the policy (Anonymous, Scopes) says all.
	AnyCaller Need = iota
	// ProjectConsent: the tool acts within the caller's project, so only an
	// OAuth consent bound to a project may call it.
	ProjectConsent
	// ForgejoCredential: the tool forwards the caller's own Forgejo
	// credential (the request bearer, or the stdio process's configured
	// one), so a caller without one is refused.
	ForgejoCredential
)

// admit decides whether the caller in ctx may run a tool with policy pol
// and need. It is the one place a tool's declared policy is enforced when
// the tool runs: over HTTP the scope gate has already refused anonymous and
// under-scoped callers with 401/403, so this is what keeps stdio, direct
// calls and a wiring mistake closed. A tool sees only callers admit let
// through and never checks its caller again.
func admit(ctx context.Context, pol middleware.ToolPolicy, need Need) error {
	if pol.Anonymous {
		return nil
	}
	who := middleware.PrincipalFromContext(ctx)
	consentOK := need != ProjectConsent || (who != nil && who.Kind == middleware.OAuthConsent && who.ProjectID != "")
	needed := pol.ScopeNames()
	if !consentOK || slices.ContainsFunc(needed, func(s string) bool { return !who.HasScope(s) }) {
		if len(needed) == 0 {
			return toolerr.New(toolerr.InsufficientScope, "this tool needs an OAuth consent of a project")
		}
		return toolerr.New(toolerr.InsufficientScope, "this tool needs an OAuth consent with scope %s", strings.Join(needed, " ")).
			With("required_scopes", needed)
	}
	if need == ForgejoCredential && who.ForgejoCredential().IsZero() {
		return toolerr.New(toolerr.Unauthenticated, "this tool needs the caller's Forgejo credential (a bearer token)")
	}
	return nil
}

// enforced reports whether a tool's contract asks admit for more than the
// scope gate's "someone authenticated": such a tool must be built by Typed.
func enforced(t Tool) bool {
	return len(t.Policy.Scopes) > 0 || t.Needs != AnyCaller
}
