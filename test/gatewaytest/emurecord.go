package gatewaytest

import (
	"net/http"
	"testing"

	"github.com/agent-gateway/agent-gateway/test/emurecord"
)

// RecordStats asks the emulator at origin what its request record holds
// (emurecord.Path) and fails tb unless the answer is what held, read after
// it, says the record holds: the route tells the truth and asking it
// records nothing.
func RecordStats(tb testing.TB, origin string, held func() emurecord.Stats) emurecord.Stats {
	tb.Helper()
	s, err := emurecord.Get(http.DefaultClient, origin)
	if want := held(); err != nil || s != want {
		tb.Fatalf("%s answered %+v (%v), the record holds %+v", emurecord.Path, s, err, want)
	}
	return s
}
