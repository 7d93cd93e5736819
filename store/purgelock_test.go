package store

import (
	"crypto/sha256"
	"encoding/binary"
	"testing"
)

// TestPurgeLockKeys: each purge's advisory lock key is the first 8 bytes
// of SHA-256 of its name, as documented, and no two purges share one.
func TestPurgeLockKeys(t *testing.T) {
	seen := map[purgeLock]string{}
	for name, key := range map[string]purgeLock{
		"agent-gateway/store/purge":          oauthPurgeLock,
		"agent-gateway/store/workflow-purge": workflowPurgeLock,
		"agent-gateway/store/audit-purge":    auditPurgeLock,
	} {
		sum := sha256.Sum256([]byte(name))
		if want := purgeLock(int64(binary.BigEndian.Uint64(sum[:8]))); key != want {
			t.Errorf("%s: key %d, want %d", name, key, want)
		}
		if other, dup := seen[key]; dup {
			t.Errorf("%s and %s share a lock key", name, other)
		}
		seen[key] = name
	}
}
