package oauth

import "testing"

// TestConsentNote: the consent page's note for a project says exactly what
// the token of an Allow carries (tokenScopes): what was held before, what
// is asked now, and both; it never says "nothing is granted" beside a
// scope the client holds.
func TestConsentNote(t *testing.T) {
	for _, tc := range []struct {
		name            string
		held, requested []string
		want            string
	}{
		{"first authorization", nil, []string{"documents:read", "catalog:read"},
			"Nothing is granted to this client on this project yet. The token will carry the scopes asked now: catalog:read, documents:read."},
		{"fewer asked than held", []string{"catalog:read", "documents:read"}, []string{"documents:read"},
			"Held before by this client on this project: catalog:read, documents:read. Asked now: documents:read (all held before). The token will carry both: catalog:read, documents:read."},
		{"a step-up: only a new scope asked", []string{"catalog:read", "documents:read"}, []string{"workflow:dispatch"},
			"Held before by this client on this project: catalog:read, documents:read. Asked now: workflow:dispatch. The token will carry both: catalog:read, documents:read, workflow:dispatch."},
		{"some held, some new", []string{"documents:read"}, []string{"documents:read", "workflow:dispatch"},
			"Held before by this client on this project: documents:read. Asked now: documents:read, workflow:dispatch (new: workflow:dispatch). The token will carry both: documents:read, workflow:dispatch."},
		{"nothing asked", []string{"documents:read"}, nil,
			"Held before by this client on this project: documents:read. Asked now: none. The token will carry both: documents:read."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := consentNote(tc.held, tc.requested); got != tc.want {
				t.Fatalf("consentNote(%v, %v) =\n  %s\nwant\n  %s", tc.held, tc.requested, got, tc.want)
			}
		})
	}
}
