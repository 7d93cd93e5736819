package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// TestDataDirFilesOwnerOnly: a gateway started on a data directory that
// already exists as 0755 keeps its database, -wal and -shm files 0600:
// they hold token hashes and the allowlist.
func TestDataDirFilesOwnerOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gw := gatewaytest.Start(t, gatewaytest.Options{Env: map[string]string{"AGENT_GATEWAY_DATA_DIR": dir}})
	names := []string{"agent-gateway.db", "agent-gateway.db-wal", "agent-gateway.db-shm"}
	deadline := time.Now().Add(10 * time.Second)
	for _, name := range names {
		for {
			fi, err := os.Stat(filepath.Join(dir, name))
			if err == nil {
				if fi.Mode().Perm() != 0o600 {
					t.Errorf("%s has mode %v, want 0600", name, fi.Mode().Perm())
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v\n%s", name, err, gw.Logs())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
