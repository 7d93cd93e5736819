package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// TestStartLogsMigrations: each start of the binary, on SQLite and on
// PostgreSQL, logs what it did to the store's schema — the first start the
// migrations it applied, by name, the second that none were needed. Neither
// said anything.
func TestStartLogsMigrations(t *testing.T) {
	for _, backend := range []struct {
		name string
		url  func(t testing.TB) string
	}{
		{"sqlite", storetest.SQLiteURL},
		{"postgres", storetest.PostgresURL},
	} {
		t.Run(backend.name, func(t *testing.T) {
			env := map[string]string{"AGENT_GATEWAY_DATABASE_URL": backend.url(t), "AGENT_GATEWAY_DATA_DIR": t.TempDir()}
			first := migrationLog(t, env)
			if first.Msg != "store migrations applied" || first.Backend != backend.name || len(first.Applied) == 0 ||
				len(first.Applied) != first.Migrations || !strings.HasPrefix(first.Applied[0], "0001_") {
				t.Fatalf("first start logged %+v", first)
			}
			second := migrationLog(t, env)
			if second.Msg != "store schema up to date: no migration needed" || second.Backend != backend.name ||
				len(second.Applied) != 0 || second.Migrations != first.Migrations {
				t.Fatalf("second start logged %+v", second)
			}
		})
	}
}

// migrationRecord is the log line of a start about the store's schema.
type migrationRecord struct {
	Msg        string   `json:"msg"`
	Backend    string   `json:"backend"`
	Applied    []string `json:"applied"`
	Migrations int      `json:"migrations"`
}

// migrationLog starts the gateway with env, stops it and returns its one
// log line about migrations.
func migrationLog(t *testing.T, env map[string]string) migrationRecord {
	t.Helper()
	p := gatewaytest.Start(t, gatewaytest.Options{Env: env})
	p.Stop()
	var found []migrationRecord
	for _, line := range strings.Split(p.Logs(), "\n") {
		var r migrationRecord
		if json.Unmarshal([]byte(line), &r) == nil && strings.Contains(r.Msg, "migration") {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d log lines about migrations, want 1:\n%s", len(found), p.Logs())
	}
	return found[0]
}
