package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/store"
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

type fakeTokens struct{ err error }

func (f fakeTokens) LookupAccessToken(_ context.Context, secret string) (store.Principal, error) {
	if f.err != nil {
		return store.Principal{}, f.err
	}
	if secret != "agw_at_good" {
		return store.Principal{}, fmt.Errorf("%w: access token", store.ErrNotFound)
	}
	return store.Principal{GrantID: "grt_1", ProjectID: "prj_1", Subject: "alice", Scopes: []string{"documents:read"}}, nil
}

func (f fakeTokens) LookupLegacyToken(_ context.Context, secret string) (store.LegacyToken, error) {
	if secret != "agw_lt_good" {
		return store.LegacyToken{}, fmt.Errorf("%w: legacy token", store.ErrNotFound)
	}
	return store.LegacyToken{ID: "ltk_1", ProjectID: "prj_1", Permissions: []string{"memory", "task"}}, nil
}

func TestStoreAuthenticator(t *testing.T) {
	var logs bytes.Buffer
	a := storeAuthenticator{store: fakeTokens{}, log: slog.New(slog.NewJSONHandler(&logs, nil))}
	ctx := context.Background()
	p, err := a.Authenticate(ctx, "agw_at_good")
	if err != nil || p.Kind != middleware.OAuthGrant || p.Key != "grant:grt_1" || p.ProjectID != "prj_1" || !p.HasScope("documents:read") {
		t.Fatalf("grant principal %+v, %v", p, err)
	}
	p, err = a.Authenticate(ctx, "agw_lt_good")
	if err != nil || p.Kind != middleware.LegacyProjectToken || p.Key != "legacy:ltk_1" || p.HasScope("documents:read") || !p.ScopesKnown {
		t.Fatalf("legacy principal %+v, %v", p, err)
	}
	for _, bad := range []string{"agw_at_bad", "agw_lt_bad", "agw_rt_refresh", "ghp_github", ""} {
		if _, err := a.Authenticate(ctx, bad); !errors.Is(err, middleware.ErrInvalidToken) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
	a.store = fakeTokens{err: errors.New("database down")}
	if _, err := a.Authenticate(ctx, "agw_at_secret-canary"); !errors.Is(err, middleware.ErrInvalidToken) {
		t.Fatalf("store failure: %v", err)
	}
	if !bytes.Contains(logs.Bytes(), []byte("database down")) || bytes.Contains(logs.Bytes(), []byte("canary")) {
		t.Fatalf("logs: %s", logs.String())
	}
}
