package server

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/test/githubemu"
	"github.com/agent-gateway/agent-gateway/upstream"
)

// startAppEmulator starts the GitHub emulator with a GitHub App (id 1001)
// whose private key is in keyFile; it stops when tb ends.
func startAppEmulator(tb testing.TB) (emu *githubemu.Emulator, keyFile string) {
	tb.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatal(err)
	}
	keyFile = filepath.Join(tb.TempDir(), "app.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		tb.Fatal(err)
	}
	emu, err = githubemu.Start(githubemu.Options{Dir: tb.TempDir(), AppID: 1001, AppKey: &key.PublicKey})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = emu.Close() })
	return emu, keyFile
}

// BenchmarkDocumentFragment serves tools/call git_document_get of the
// demo's 204,800-byte document (a 64 KiB fragment) through the whole
// in-process router against the GitHub emulator, on the owned tools/call
// path and on the SDK's side by side; run with -cpuprofile to
// see where a fragment's time goes (docs/performance.md, "Document
// fragments").
func BenchmarkDocumentFragment(b *testing.B) {
	emu, keyFile := startAppEmulator(b)
	d, err := emu.SeedDocs("demo", "handbook", 77)
	if err != nil {
		b.Fatal(err)
	}
	cfg := Default()
	cfg.DataDir = b.TempDir()
	cfg.ReadPerMinute = 1 << 30
	cfg.GitHubAPIOrigin, _ = upstream.ParseOrigin(emu.URL())
	cfg.GitHubAppID, cfg.GitHubAppKeyFile = 1001, keyFile
	cfg.PublicURL = "http://127.0.0.1:8080"
	ctx := context.Background()
	g, err := New(ctx, cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	p, err := g.store.CreateProject(ctx, "", "bench")
	if err != nil {
		b.Fatal(err)
	}
	if err := g.store.AddMember(ctx, p.ID, "alice"); err != nil {
		b.Fatal(err)
	}
	repo, err := g.store.LinkRepository(ctx, p.ID, d.Owner, d.Repo, d.InstallationID)
	if err != nil {
		b.Fatal(err)
	}
	src, err := g.store.AddDocumentSource(ctx, store.NewDocumentSource{ProjectID: p.ID, RepositoryID: repo.ID,
		Role: store.RoleRuntime, Path: d.Runtime, CommitSHA: d.Commit})
	if err != nil {
		b.Fatal(err)
	}
	consent, err := g.store.CreateConsent(ctx, p.ID, "alice", "bench", []string{"documents:read"})
	if err != nil {
		b.Fatal(err)
	}
	tok, err := g.store.IssueAccessToken(ctx, consent.ID, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range ownedPaths {
		b.Run(p.name, func(b *testing.B) {
			// Each path its own router, registry and all, over the one store.
			g.cfg.OwnedToolCalls = p.configure == nil
			g.registry = prometheus.NewRegistry()
			benchCalls(b, g.Handler(), "/mcp/documents", tok.Secret, "git_document_get", `{"source_id":"`+src.ID+`"}`, "fragment_sha256")
		})
	}
}
