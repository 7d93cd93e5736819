package audit

import (
	"context"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/store/storetest"
)

// TestFilterMatch: every filter member narrows; an empty one matches
// anything; "error" is every outcome but ok; the time range is
// [Since, Until).
func TestFilterMatch(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	r := Record{At: at, Tool: "get_pull_request_diff", Outcome: "ok",
		Principal: Principal{Kind: KindOAuth, Subject: "alice", ClientID: "cli_1"},
		Target:    Target{Owner: "Team", Repo: "project", Index: 7}}
	cases := []struct {
		name string
		f    Filter
		want bool
	}{
		{"empty", Filter{}, true},
		{"subject", Filter{Subject: "alice"}, true},
		{"other subject", Filter{Subject: "bob"}, false},
		{"client", Filter{ClientID: "cli_1"}, true},
		{"other client", Filter{ClientID: "cli_2"}, false},
		{"kind", Filter{Kind: KindForgejoBearer}, false},
		{"repository, any case", Filter{Owner: "team", Repo: "PROJECT", Index: 7}, true},
		{"other pull request", Filter{Owner: "team", Repo: "project", Index: 8}, false},
		{"tool", Filter{Tool: "get_pull_request"}, false},
		{"outcome ok", Filter{Outcome: "ok"}, true},
		{"outcome error", Filter{Outcome: "error"}, false},
		{"since, inclusive", Filter{Since: at}, true},
		{"until, exclusive", Filter{Until: at}, false},
		{"in range", Filter{Since: at.Add(-time.Hour), Until: at.Add(time.Second)}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f.Match(r); got != tc.want {
				t.Fatalf("Match = %v, want %v", got, tc.want)
			}
		})
	}
	r.Outcome = "not_found"
	if !(Filter{Outcome: "error"}).Match(r) || !(Filter{Outcome: "not_found"}).Match(r) {
		t.Fatal("a refusal does not match error or its code")
	}
}

// TestListAcrossChains lists two chains' records oldest first and stops
// at the limit, saying more may match.
func TestListAcrossChains(t *testing.T) {
	st := storetest.SQLite(t)
	key := testKey(t)
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	a := writeDatedChain(t, st, key, t0, 3, 3)                     // minutes 1, 2, 3
	b := writeDatedChain(t, st, key, t0.Add(90*time.Second), 3, 3) // minutes 2.5, 3.5, 4.5
	got, more, err := List(context.Background(), st, Filter{}, 4)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, l := range got {
		order = append(order, map[string]string{a: "a", b: "b"}[l.Record.Writer]+string(rune('0'+l.Record.Seq)))
	}
	if want := "a1 a2 b1 a3"; !more || len(order) != 4 || order[0]+" "+order[1]+" "+order[2]+" "+order[3] != want {
		t.Fatalf("listed %v (more %v), want %s and more", order, more, want)
	}
}
