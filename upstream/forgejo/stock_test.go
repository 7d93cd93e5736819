package forgejo

import (
	"net/http"
	"testing"
)

// TestNotJSON pins exactly which answers are a stock forge's shape: one
// well-formed media type that is not JSON. Everything else keeps its code.
func TestNotJSON(t *testing.T) {
	cases := []struct {
		name string
		ct   []string
		want bool
	}{
		{"stock forge plain diff and 404", []string{"text/plain; charset=utf-8"}, true},
		{"text/plain without charset", []string{"text/plain"}, true},
		{"HTML", []string{"text/html; charset=utf-8"}, true},
		{"octet stream", []string{"application/octet-stream"}, true},
		{"JSON", []string{"application/json"}, false},
		{"JSON with charset", []string{"application/json;charset=utf-8"}, false},
		{"JSON with another charset is a framing fault, not a stock forge", []string{"application/json; charset=latin1"}, false},
		{"problem+json", []string{"application/problem+json"}, false},
		{"upper-case JSON", []string{"Application/JSON"}, false},
		{"no Content-Type", nil, false},
		{"two Content-Types", []string{"text/plain", "text/plain"}, false},
		{"unparsable", []string{"text/plain; charset"}, false},
		{"empty", []string{""}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.ct {
				h.Add("Content-Type", v)
			}
			if got := notJSON(h); got != tc.want {
				t.Fatalf("notJSON(%q) = %v, want %v", tc.ct, got, tc.want)
			}
		})
	}
}

// TestForgeUnsupported: the error names the extension and the status and
// quotes nothing of the answer.
func TestForgeUnsupported(t *testing.T) {
	for _, ext := range []string{ExtensionDiffEvidence, ExtensionWorkGrants} {
		e := forgeUnsupported(ext, 404)
		if e.Code != "forge_unsupported" || e.Details["extension"] != ext || e.Details["native_status"] != 404 || extensionNames[ext] == "" {
			t.Fatalf("%s: %+v", ext, e)
		}
	}
}
