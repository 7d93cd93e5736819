package server

import "testing"

// TestAuditModeSetting: audit.mode is off unless set, and only the three
// documented modes are accepted.
func TestAuditModeSetting(t *testing.T) {
	if got := Default().AuditMode; got != "off" {
		t.Fatalf("default %q, want off", got)
	}
	checkSetting(t, "audit.mode", func(c Config) string { return string(c.AuditMode) }, []settingCase{
		{"best_effort", "best_effort", true},
		{"required", "required", true},
		{"off", "off", true},
		{"on", "want off, best_effort or required", false},
		{"Required", "want off, best_effort or required", false},
	})
}
