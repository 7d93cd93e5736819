package middleware

import "testing"

func TestFoldName(t *testing.T) {
	cases := []struct {
		a, b string
		same bool
	}{
		{"params", "PARAMS", true},
		{"params", "paramſ", true},  // long s folds to s in encoding/json
		{"kind", "\u212aind", true}, // Kelvin sign folds to k
		{"id", "\u0130d", true},     // dotted capital I lowers to i
		{"name", "nàme", false},
		{"a", "b", false},
		{"ß", "ss", false},         // simple folding only, as encoding/json
		{"\u03a3", "\u03c2", true}, // Σ and final ς share an orbit
	}
	for _, tc := range cases {
		t.Run(tc.a+"/"+tc.b, func(t *testing.T) {
			if got := foldName(tc.a) == foldName(tc.b); got != tc.same {
				t.Fatalf("foldName(%q) == foldName(%q) is %v, want %v", tc.a, tc.b, got, tc.same)
			}
		})
	}
}
