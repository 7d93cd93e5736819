package github

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadAppKeyFileProtection: the App key file must be protected
// (docs/architecture.md#github-app-and-installation-tokens): mode 0600 or
// 0400 and owned by the user the gateway runs as. Any other is refused
// with a message naming the file, its mode in octal and the command that
// fixes it.
func TestLoadAppKeyFileProtection(t *testing.T) {
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(appKey(t))})
	write := func(t *testing.T, mode os.FileMode) string {
		t.Helper()
		p := filepath.Join(t.TempDir(), "app.pem")
		if err := os.WriteFile(p, keyPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		// Chmod, not WriteFile's mode: the umask must not decide the case.
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		mode os.FileMode
		ok   bool
	}{
		{0o600, true}, {0o400, true},
		{0o644, false}, {0o640, false}, {0o604, false}, {0o660, false}, {0o606, false},
		{0o610, false}, {0o601, false}, {0o777, false},
	} {
		t.Run(c.mode.String(), func(t *testing.T) {
			p := write(t, c.mode)
			_, err := LoadApp(testAppID, p)
			if c.ok {
				if err != nil {
					t.Fatalf("a protected key file refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("mode %04o accepted", c.mode)
			}
			msg := err.Error()
			if !strings.Contains(msg, p) || !strings.Contains(msg, "mode "+octal(c.mode)) || !strings.Contains(msg, "chmod 600 "+p) {
				t.Fatalf("message %q does not name the file, mode %s and the fix", msg, octal(c.mode))
			}
			if strings.Contains(msg, "PRIVATE KEY") {
				t.Fatalf("the message quotes the key: %q", msg)
			}
		})
	}
	t.Run("owned by another user", func(t *testing.T) {
		p := write(t, 0o600)
		other := os.Geteuid() + 4242
		if err := os.Chown(p, other, -1); err != nil {
			t.Skipf("only a privileged user can give a file away: %v", err)
		}
		_, err := LoadApp(testAppID, p)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "owned by uid") {
			t.Fatalf("a key file of another user: %v", err)
		}
	})
	t.Run("a directory", func(t *testing.T) {
		if _, err := LoadApp(testAppID, t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("a directory: %v", err)
		}
	})
	t.Run("a symbolic link to a protected file", func(t *testing.T) {
		p := write(t, 0o600)
		link := filepath.Join(t.TempDir(), "link.pem")
		if err := os.Symlink(p, link); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadApp(testAppID, link); err != nil {
			t.Fatalf("a link to a protected key (as Kubernetes mounts secrets): %v", err)
		}
	})
	t.Run("larger than a key", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "big.pem")
		if err := os.WriteFile(p, make([]byte, maxKeyFile+1), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadApp(testAppID, p); err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Fatalf("an oversized file: %v", err)
		}
	})
}

// octal writes a mode as the messages do: four octal digits.
func octal(m os.FileMode) string { return fmt.Sprintf("%04o", m.Perm()) }
