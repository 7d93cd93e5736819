package admin

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agent-gateway/agent-gateway/store/storetest"
)

// TestCreateConsentNotesUncheckedScopes: create-consent notes exactly the
// scopes the target's tools do not check, whatever they are; the known
// ones come from the target (the tools' definitions), not from a list of
// admin's own.
func TestCreateConsentNotesUncheckedScopes(t *testing.T) {
	st := storetest.SQLite(t)
	ctx := context.Background()
	p, err := st.CreateProject(ctx, "", "docs")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AddMember(ctx, p.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		scopes, note string
	}{
		{"documents:read catalog:read", ""},
		{"catalog:read", ""},
		{"documents:read memory", "scopes not checked by this gateway: memory"},
		{"workflow:dispatch,profile", "scopes not checked by this gateway: profile workflow:dispatch"},
	} {
		t.Run(tc.scopes, func(t *testing.T) {
			out, err := run(t, st, "create-consent", "--project-id", p.ID, "--subject", "alice", "--scopes", tc.scopes)
			if err != nil {
				t.Fatal(err)
			}
			var rec map[string]any
			if err := json.Unmarshal([]byte(out), &rec); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if note, _ := rec["note"].(string); note != tc.note {
				t.Errorf("note %q, want %q", note, tc.note)
			}
		})
	}
}
