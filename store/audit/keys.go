package audit

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Key file names under data_dir.
const (
	// SigningKeyFile holds the Ed25519 seed that signs checkpoints (hex).
	SigningKeyFile = "audit-signing.key"
	// FingerprintKeyFile holds the HMAC secret of bearer fingerprints (hex).
	FingerprintKeyFile = "audit-fingerprint.key"
)

// maxKeyFileBytes bounds the read of a key file; both hold 64 hex digits.
const maxKeyFileBytes = 4096

// LoadSigningKey reads the checkpoint signing key from dir, generating it
// on first use (mode 0600).
func LoadSigningKey(dir string) (ed25519.PrivateKey, error) {
	seed, err := loadSecret(dir, SigningKeyFile)
	if err != nil {
		return nil, err
	}
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("audit: %s holds %d bytes, want an Ed25519 seed of %d", filepath.Join(dir, SigningKeyFile), len(seed), ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// LoadFingerprintKey reads the bearer fingerprint secret from dir,
// generating it on first use (mode 0600).
func LoadFingerprintKey(dir string) ([]byte, error) {
	return loadSecret(dir, FingerprintKeyFile)
}

// KeyID names a public key in checkpoints: the first 128 bits of its
// SHA-256, hex.
func KeyID(pub ed25519.PublicKey) string { return Hash(pub)[:32] }

// loadSecret reads dir/name, 32 bytes in hex, refusing a file group or
// others may read (like the GitHub App key); it generates the file when
// absent, under a temporary name linked into place, so two processes
// starting at once read the same secret.
func loadSecret(dir, name string) ([]byte, error) {
	path := filepath.Join(dir, name)
	b, err := readSecret(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return b, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("audit: data_dir: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+name+"-*")
	if err != nil {
		return nil, fmt.Errorf("audit: data_dir: %w", err)
	}
	defer os.Remove(tmp.Name())
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		tmp.Close()
		return nil, err
	}
	_, werr := tmp.WriteString(hex.EncodeToString(raw) + "\n")
	if err := errors.Join(werr, tmp.Chmod(0o600), tmp.Sync(), tmp.Close()); err != nil {
		return nil, fmt.Errorf("audit: writing %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("audit: data_dir: %w", err)
	}
	return readSecret(path)
}

// readSecret reads and decodes one key file after checking its mode.
func readSecret(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("audit: %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("audit: %s has mode %04o, which lets group or others at the key: run chmod 600 %s", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxKeyFileBytes {
		return nil, fmt.Errorf("audit: %s is over %d bytes", path, maxKeyFileBytes)
	}
	raw, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(raw) != 32 {
		return nil, fmt.Errorf("audit: %s does not hold 32 bytes in hex", path)
	}
	return raw, nil
}

// ReadPublicKey returns the public key of the signing key in dir without
// creating one: verification must not mint the key it checks against.
func ReadPublicKey(dir string) (ed25519.PublicKey, error) {
	seed, err := readSecret(filepath.Join(dir, SigningKeyFile))
	if err != nil {
		return nil, err
	}
	return ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey), nil
}

// ParsePublicKey reads a public key as `admin audit public-key` prints
// it: 64 hex digits.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	b, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("audit: a public key is %d bytes in hex", ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}
