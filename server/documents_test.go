package server

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestLoadCursorSecret(t *testing.T) {
	t.Run("generated once, 0600, then reused", func(t *testing.T) {
		cfg := Config{DataDir: filepath.Join(t.TempDir(), "data")}
		a, err := loadCursorSecret(cfg)
		if err != nil || len(a) < 32 {
			t.Fatalf("%d bytes, %v", len(a), err)
		}
		info, err := os.Stat(filepath.Join(cfg.DataDir, cursorSecretName))
		if err != nil || info.Mode().Perm() != 0o600 {
			t.Fatalf("mode %v, %v", info.Mode(), err)
		}
		b, err := loadCursorSecret(cfg)
		if err != nil || !bytes.Equal(a, b) {
			t.Fatal("a second start read another secret")
		}
	})
	t.Run("replicas starting together agree", func(t *testing.T) {
		cfg := Config{DataDir: t.TempDir()}
		var wg sync.WaitGroup
		got := make([][]byte, 8)
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i], _ = loadCursorSecret(cfg)
			}()
		}
		wg.Wait()
		for _, g := range got {
			if len(g) < 32 || !bytes.Equal(g, got[0]) {
				t.Fatal("concurrent starts disagree on the secret")
			}
		}
	})
	t.Run("secret_file", func(t *testing.T) {
		dir := t.TempDir()
		good := filepath.Join(dir, "good")
		os.WriteFile(good, []byte("0123456789abcdef0123456789abcdef\n"), 0o600)
		short := filepath.Join(dir, "short")
		os.WriteFile(short, []byte("tooshort"), 0o600)
		if b, err := loadCursorSecret(Config{CursorSecretFile: good}); err != nil || string(b) != "0123456789abcdef0123456789abcdef" {
			t.Fatalf("%q %v", b, err)
		}
		var ce *ConfigError
		if _, err := loadCursorSecret(Config{CursorSecretFile: short}); !errors.As(err, &ce) {
			t.Fatalf("short secret: %v", err)
		}
		if _, err := loadCursorSecret(Config{CursorSecretFile: filepath.Join(dir, "missing")}); !errors.As(err, &ce) {
			t.Fatalf("missing file: %v", err)
		}
	})
}
