package middleware

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func TestRequestID(t *testing.T) {
	generated := regexp.MustCompile(`^[A-Z2-7]{26}$`) // crypto/rand.Text
	cases := []struct {
		name    string
		sent    []string // X-Request-Id values sent; nil for none
		adopted bool
	}{
		{"absent is generated", nil, false},
		{"plain is adopted", []string{"abc-123_x.y:z"}, true},
		{"64 characters adopted", []string{strings.Repeat("a", 64)}, true},
		{"65 characters replaced", []string{strings.Repeat("a", 65)}, false},
		{"empty replaced", []string{""}, false},
		{"space replaced", []string{"a b"}, false},
		{"CRLF injection replaced", []string{"a\r\nX-Evil: 1"}, false},
		{"JSON breaking replaced", []string{`a","level":"ERROR`}, false},
		{"non-ASCII replaced", []string{"ä"}, false},
		{"control byte replaced", []string{"a\x00b"}, false},
		{"slash replaced", []string{"a/b"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			for _, v := range tc.sent {
				r.Header.Add(RequestIDHeader, v)
			}
			var seen string
			w := httptest.NewRecorder()
			RequestID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen = RecordFromContext(r.Context()).RequestID()
			})).ServeHTTP(w, r)
			echoed := w.Header().Get(RequestIDHeader)
			if echoed != seen {
				t.Fatalf("echoed %q, recorded %q", echoed, seen)
			}
			if tc.adopted {
				if seen != tc.sent[0] {
					t.Fatalf("id = %q, want the sent %q", seen, tc.sent[0])
				}
				return
			}
			if !generated.MatchString(seen) {
				t.Fatalf("id = %q, want a generated one", seen)
			}
		})
	}
}

func TestRequestIDUnique(t *testing.T) {
	seen := map[string]bool{}
	h := RequestID(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for range 100 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		id := w.Header().Get(RequestIDHeader)
		if seen[id] {
			t.Fatalf("id %q generated twice", id)
		}
		seen[id] = true
	}
}

// Two X-Request-Id headers: only the first is considered, and it must
// still pass the check on its own.
func TestRequestIDFirstOfMany(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Add(RequestIDHeader, "first")
	r.Header.Add(RequestIDHeader, "second")
	w := httptest.NewRecorder()
	RequestID(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(w, r)
	if got := w.Header().Values(RequestIDHeader); len(got) != 1 || got[0] != "first" {
		t.Fatalf("echoed %q, want one value \"first\"", got)
	}
}
