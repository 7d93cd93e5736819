package store_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/agent-gateway/agent-gateway/store"
)

func TestNewToken(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		secret, err := store.NewToken("agw_at_")
		if err != nil {
			t.Fatal(err)
		}
		body, ok := strings.CutPrefix(secret, "agw_at_")
		if !ok {
			t.Fatalf("%q lacks its prefix", secret)
		}
		raw, err := base64.RawURLEncoding.DecodeString(body)
		if err != nil || len(raw) < 32 {
			t.Fatalf("%q: want at least 256 bits of base64url, got %d bytes (%v)", secret, len(raw), err)
		}
		if seen[secret] {
			t.Fatalf("duplicate token %q", secret)
		}
		seen[secret] = true
	}
	for _, bad := range []string{"Bearer ", "a b", "x/", "ü"} {
		if _, err := store.NewToken(bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("NewToken(%q) error = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestHashToken(t *testing.T) {
	// SHA-256("abc"), FIPS 180-2 appendix B.1.
	const want = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if got := store.HashToken("abc"); got != want {
		t.Errorf("HashToken(abc) = %s, want %s", got, want)
	}
	if store.HashToken("a") == store.HashToken("b") {
		t.Error("distinct secrets share a hash")
	}
}
