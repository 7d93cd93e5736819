package forgejoemu

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestStock: switched to a stock forge, the evidence URL answers the plain
// diff as text/plain and the grant routes 404 text/plain, as the recorded
// Gitea 1.27.3 does; the anonymous reads are unchanged; switched back, Core
// answers again.
func TestStock(t *testing.T) {
	e, d := seeded(t)
	evidence := fmt.Sprintf("/api/v1/repos/%s/%s/pulls/%d.diff?binary=true&evidence=v1", d.Owner, d.PublicRepo, d.OpenPull)
	plain := get(t, e, fmt.Sprintf("/api/v1/repos/%s/%s/pulls/%d.diff?binary=true", d.Owner, d.PublicRepo, d.OpenPull), tokenAuth(d.ReaderToken))

	e.SetStock(true)
	a := get(t, e, evidence, tokenAuth(d.ReaderToken))
	if a.status != 200 || a.header.Get("Content-Type") != "text/plain; charset=utf-8" || !bytes.Equal(a.body, plain.body) {
		t.Fatalf("stock evidence URL: %d %q, plain diff %v", a.status, a.header.Get("Content-Type"), bytes.Equal(a.body, plain.body))
	}
	for _, path := range []string{"/api/v1/agent-work-grants", fmt.Sprintf("/api/v1/repos/%s/%s/agent-work-grants/1", d.Owner, d.PublicRepo)} {
		a := get(t, e, path, tokenAuth(d.BotToken))
		if a.status != 404 || a.header.Get("Content-Type") != "text/plain; charset=utf-8" || strings.TrimSpace(string(a.body)) != "404 page not found" {
			t.Fatalf("stock %s: %d %q %q", path, a.status, a.header.Get("Content-Type"), a.body)
		}
	}
	if a := get(t, e, fmt.Sprintf("/api/v1/repos/%s/%s", d.Owner, d.PublicRepo), ""); a.status != 200 {
		t.Fatalf("stock repository read: %d", a.status)
	}

	e.SetStock(false)
	if a := get(t, e, evidence, tokenAuth(d.ReaderToken)); a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), "application/json") {
		t.Fatalf("Core evidence after the switch: %d %q", a.status, a.header.Get("Content-Type"))
	}
	if a := get(t, e, "/api/v1/agent-work-grants", tokenAuth(d.BotToken)); a.status != 200 {
		t.Fatalf("Core grant list after the switch: %d", a.status)
	}
}
