package forgejoemu

import (
	"fmt"
	"net/http"
	"testing"
)

// TestGrantApproveRoute pins the emulator's approval stand-in: only a human
// with write:repository and write access approves, only a confirmed grant,
// only through its own repository; the grant then is active.
func TestGrantApproveRoute(t *testing.T) {
	t.Parallel()
	f := newGrantFixture(t)
	e, d := f.e, f.d
	readerWrite := e.IssueToken(d.Reader, "write:repository")
	ownerRead := e.IssueToken(d.Owner, "read:repository")
	approve := func(path, auth string) int {
		return post(t, e, path, auth, map[string]any{}).status
	}
	if got := approve(f.base+"/approve", tokenAuth(d.OwnerToken)); got != http.StatusConflict {
		t.Fatalf("approve before the bot confirmed: %d, want 409", got)
	}
	if a := post(t, e, f.base+"/confirm", f.botAu, triple(f.g.Digest)); a.status != http.StatusOK {
		t.Fatalf("confirm: %d %s", a.status, a.body)
	}
	for _, c := range []struct {
		name, path, auth string
		want             int
	}{
		{"anonymous", f.base + "/approve", "", http.StatusUnauthorized},
		{"the agent itself", f.base + "/approve", tokenAuth(e.IssueToken(d.Bot, "write:repository")), http.StatusConflict},
		{"a token without write:repository", f.base + "/approve", tokenAuth(ownerRead), http.StatusForbidden},
		{"a user without write access", f.base + "/approve", tokenAuth(readerWrite), http.StatusConflict},
		{"another repository", fmt.Sprintf("/api/v1/repos/%s/%s/agent-work-grants/%d/approve", d.Owner, d.PrivateRepo, f.g.ID), tokenAuth(d.OwnerToken), http.StatusNotFound},
		{"an unknown grant", fmt.Sprintf("/api/v1/repos/%s/%s/agent-work-grants/999999/approve", d.Owner, d.PublicRepo), tokenAuth(d.OwnerToken), http.StatusNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := approve(c.path, c.auth); got != c.want {
				t.Fatalf("status %d, want %d", got, c.want)
			}
		})
	}
	if g, _ := e.Grant(f.g.ID); g.State != GrantAwaitingHuman {
		t.Fatalf("a refused approval changed the grant: %+v", g)
	}
	a := post(t, e, f.base+"/approve", tokenAuth(d.OwnerToken), map[string]any{})
	if a.status != http.StatusOK {
		t.Fatalf("approve: %d %s", a.status, a.body)
	}
	if g, _ := e.Grant(f.g.ID); g.State != GrantActive {
		t.Fatalf("approved grant = %+v", g)
	}
	if got := approve(f.base+"/approve", tokenAuth(d.OwnerToken)); got != http.StatusConflict {
		t.Fatalf("a second approval: %d, want 409", got)
	}
}
