package middleware

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/httprate"
)

// TestNewLimiter: the limit counts in memory without a counter; a counter
// is asked for by the limit's name; a failing counter reports "limited"
// (fail closed) and tells counterFailed why, and a nil counterFailed is
// allowed.
func TestNewLimiter(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	mem := NewLimiter("x", 2, time.Minute, nil, nil)
	for i, want := range []bool{false, false, true} {
		if got := mem.OnLimit(httptest.NewRecorder(), r, "k"); got != want {
			t.Fatalf("in memory, request %d: limited %v, want %v", i+1, got, want)
		}
	}
	var asked string
	var told []error
	broken := func(name string) httprate.LimitCounter { asked = name; return failingCounter{} }
	lim := NewLimiter("client_metadata_address", 100, time.Minute, broken, func(err error) { told = append(told, err) })
	if asked != "client_metadata_address" {
		t.Fatalf("the counter was asked for %q", asked)
	}
	if !lim.OnLimit(httptest.NewRecorder(), r, "k") || len(told) != 1 || !strings.Contains(told[0].Error(), "connection refused") {
		t.Fatalf("a failing counter: told %v, want one refusal with its error", told)
	}
	if !NewLimiter("y", 100, time.Minute, broken, nil).OnLimit(httptest.NewRecorder(), r, "k") {
		t.Fatal("a failing counter without counterFailed was not refused")
	}
}
