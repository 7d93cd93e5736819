package server

import (
	"bytes"
	"encoding/json"
	"log"
	"strings"
	"testing"
)

func TestStdLogMessage(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Unsolicited response received on idle HTTP channel starting with \"SECRET\"; err=<nil>\n",
			"an upstream sent bytes after a complete response; the connection was closed (the bytes are not logged)"},
		{"http2: Transport encoding header \"x-token\" = \"SECRET\"\n", "http2: Transport encoding header [quoted text withheld]"},
		{"plain line without quotes\n", "plain line without quotes"},
	}
	for _, c := range cases {
		if got := stdLogMessage(c.in); got != c.want {
			t.Errorf("%q → %q, want %q", c.in, got, c.want)
		}
	}
}

// TestRouteStdLog: a standard-library log line becomes one JSON record of
// the gateway's log, without the quoted peer bytes.
func TestRouteStdLog(t *testing.T) {
	defer log.SetOutput(log.Writer())
	defer log.SetFlags(log.Flags())
	var buf bytes.Buffer
	routeStdLog(newLogger(&buf, "info"))
	log.Printf("Unsolicited response received on idle HTTP channel starting with %q; err=%v", "SECRET-UPSTREAM", nil)
	out := buf.String()
	var rec map[string]any
	if err := json.Unmarshal([]byte(out), &rec); err != nil || rec["level"] != "WARN" {
		t.Fatalf("not one JSON warn record: %q (%v)", out, err)
	}
	if strings.Contains(out, "SECRET") {
		t.Fatalf("peer bytes logged: %s", out)
	}
}
