package gatewaytest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// KeyPrefixEnv names the budget key prefix in Redis (ratelimit.key_prefix).
const KeyPrefixEnv = "AGENT_GATEWAY_RATELIMIT_KEY_PREFIX"

// runNonce tells this test process's keys from those of any other run on
// the same Redis (another helper's, an earlier run in the same minute).
var runNonce = func() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}()

// KeyPrefix is the budget key prefix Start gives a gateway of test t that
// uses Redis and names no prefix: one per test (and per run), so no test
// spends another's budgets, while the replicas one test starts share
// theirs.
func KeyPrefix(t testing.TB) string {
	sum := sha256.Sum256([]byte(t.Name()))
	return "agwtest:" + runNonce + ":" + hex.EncodeToString(sum[:6]) + ":"
}
