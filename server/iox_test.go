package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadFileBounded: a file of exactly the bound is read; one byte more,
// or an endless device, is refused without being read whole, and the
// error names the file, not its content.
func TestReadFileBounded(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	at := write("at", strings.Repeat("s", 16))
	over := write("over", strings.Repeat("s", 17))
	if b, err := readFileBounded(at, 16); err != nil || len(b) != 16 {
		t.Fatalf("a file at the bound: %d bytes, %v", len(b), err)
	}
	for name, path := range map[string]string{"one byte over": over, "an endless device": "/dev/zero"} {
		_, err := readFileBounded(path, 16)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "over 16 bytes") || strings.Contains(err.Error(), "ssss") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := readFileBounded(filepath.Join(dir, "missing"), 16); !os.IsNotExist(err) {
		t.Errorf("a missing file: %v", err)
	}
}

// TestStartFilesBounded: each file read at start, the secrets and the
// config file, is refused when it is /dev/zero instead of filling memory.
func TestStartFilesBounded(t *testing.T) {
	if _, err := processCredential(Config{ForgejoTokenFile: "/dev/zero"}); err == nil || !strings.Contains(err.Error(), "forgejo.token_file") {
		t.Errorf("forgejo.token_file: %v", err)
	}
	if _, err := processCredential(Config{ForgejoUsername: "u", ForgejoPassFile: "/dev/zero"}); err == nil || !strings.Contains(err.Error(), "forgejo.password_file") {
		t.Errorf("forgejo.password_file: %v", err)
	}
	if _, err := oidcClientSecret(Config{OIDCClientSecretFile: "/dev/zero"}); err == nil || !strings.Contains(err.Error(), "oidc.client_secret_file") {
		t.Errorf("oidc.client_secret_file: %v", err)
	}
	if _, err := loadCursorSecret(Config{CursorSecretFile: "/dev/zero"}); err == nil || !strings.Contains(err.Error(), "over") {
		t.Errorf("cursor.secret_file: %v", err)
	}
	if _, problems := readYAML("/dev/zero"); len(problems) != 1 || !strings.Contains(problems[0], "over") {
		t.Errorf("the config file: %v", problems)
	}
	if _, err := diffToken("/dev/zero"); err == nil || !strings.Contains(err.Error(), "over") {
		t.Errorf("--token-file: %v", err)
	}
}
