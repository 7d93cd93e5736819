package store

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// tokenBytes is the entropy of a token secret: 256 bits.
const tokenBytes = 32

// NewToken returns a fresh bearer secret: prefix followed by 256 bits from
// crypto/rand in unpadded base64url (43 characters). The prefix is limited to
// lowercase letters, digits and underscores so a secret is always safe in an
// Authorization header.
func NewToken(prefix string) (string, error) {
	for _, r := range prefix {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return "", fmt.Errorf("%w: token prefix %q: only a-z, 0-9 and _ allowed", ErrInvalid, prefix)
		}
	}
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("token: reading crypto/rand: %w", err)
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// HashToken returns the lowercase hex SHA-256 of a token secret: the only
// form in which a secret is stored or compared. The secrets have 256 bits of
// entropy, so an unsalted fast hash is enough: there is nothing to guess.
func HashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// newID returns an opaque identifier: prefix, an underscore and 128 random
// bits as 26 lowercase base32 characters, e.g. "prj_5n3…". Identifiers are
// not secrets, but they are unguessable, so enumerating them is pointless.
func newID(prefix string) string {
	return prefix + "_" + strings.ToLower(rand.Text())
}
