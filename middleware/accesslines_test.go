package middleware

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestLineBudget: per key, a burst then a steady rate; lines left out are
// reported once on the next written line; keys are bounded, and past the
// bound new keys share one bucket.
func TestLineBudget(t *testing.T) {
	now := time.Unix(1000, 0)
	b := newLineBudget(10, 5, 3, func() time.Time { return now })
	for i := range 5 {
		if _, ok := b.take("a"); !ok {
			t.Fatalf("line %d of the burst refused", i)
		}
	}
	for range 7 {
		if _, ok := b.take("a"); ok {
			t.Fatal("a line past the burst was written")
		}
	}
	if _, ok := b.take("b"); !ok {
		t.Fatal("another key was refused by a's budget")
	}
	now = now.Add(100 * time.Millisecond) // one line at 10 a second
	if n, ok := b.take("a"); !ok || n != 7 {
		t.Fatalf("after refill: ok %v suppressed %d, want the 7 left out", ok, n)
	}
	if _, ok := b.take("a"); ok {
		t.Fatal("the refill gave more than one line")
	}
	// Keys are bounded: a and b (owing a report) and c fill the map; a
	// fourth key shares the overflow bucket instead of growing it.
	b.take("c")
	b.take("d")
	if len(b.keys) > 4 {
		t.Fatalf("%d keys tracked, want at most 3 and the overflow", len(b.keys))
	}
	// Once refilled, buckets are pruned and new keys get their own.
	now = now.Add(time.Hour)
	b.take("a") // reports a's owed count and refills
	now = now.Add(2 * time.Second)
	if _, ok := b.take("e"); !ok {
		t.Fatal("a new key after the others refilled was refused")
	}
	if _, tracked := b.keys["e"]; !tracked {
		t.Fatal("refilled buckets were not pruned to make room for a new key")
	}
}

// TestAccessLogBoundPerAddress: one address past the bound stops writing
// access lines while another still writes.
func TestAccessLogBoundPerAddress(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	h := RequestID(ClientIP(nil, DefaultIPv6Prefix)(AccessLog(log)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))))
	serve := func(addr string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = addr
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	for range AccessLinesBurst + 2000 {
		serve("192.0.2.1:1000")
	}
	serve("192.0.2.2:1000")
	lines := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		lines[m["client_ip"].(string)]++
	}
	// The burst, plus what the bucket refilled while the loop ran.
	if n := lines["192.0.2.1"]; n < AccessLinesBurst || n > AccessLinesBurst+AccessLinesPerSecond*5 {
		t.Fatalf("%d lines for the flooding address, want about the burst of %d", n, AccessLinesBurst)
	}
	if lines["192.0.2.2"] != 1 {
		t.Fatalf("the other address wrote %d lines, want 1", lines["192.0.2.2"])
	}
}
