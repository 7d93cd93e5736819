package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agent-gateway/agent-gateway/handlers/documents"
	"github.com/agent-gateway/agent-gateway/handlers/instructions"
	"github.com/agent-gateway/agent-gateway/handlers/oauth"
	"github.com/agent-gateway/agent-gateway/handlers/toolset"
	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/upstream"
	"github.com/agent-gateway/agent-gateway/upstream/github"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// storeOpenTimeout bounds opening (and migrating) the store at start.
const storeOpenTimeout = time.Minute

// openStore opens the configured store: SQLite under data_dir unless
// database.url names another.
func openStore(ctx context.Context, cfg Config) (store.Store, error) {
	ctx, cancel := context.WithTimeout(ctx, storeOpenTimeout)
	defer cancel()
	st, err := store.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("store (database.url, data_dir): %w", err)
	}
	return st, nil
}

// logMigrations logs what opening the store did to its schema: the
// migrations applied, or that none were needed.
func logMigrations(log *slog.Logger, st store.Store) {
	r, ok := store.Migrations(st)
	switch {
	case !ok:
	case len(r.Applied) == 0:
		log.Info("store schema up to date: no migration needed", "backend", r.Backend, "migrations", r.Known)
	default:
		log.Info("store migrations applied", "backend", r.Backend, "applied", r.Applied, "migrations", r.Known)
	}
}

// wireDocuments opens the store and builds the documents toolset: the
// store backs authentication and the allowlist, the cursor secret signs
// continuations, and the GitHub App (when configured) reads the files.
func (g *Gateway) wireDocuments(ctx context.Context) error {
	st, err := openStore(ctx, g.cfg)
	if err != nil {
		return err
	}
	logMigrations(g.log, st)
	if g.tracer != nil {
		st = store.Traced(st, g.tracer, storeSystem(g.cfg.DatabaseURL))
	}
	g.store = st
	g.closers = append(g.closers, st.Close)
	probe := &storeProbe{ping: st.Ping, write: st.ProbeWrite, now: time.Now}
	g.ready = append(g.ready, readinessCheck{name: "store", check: probe.check})
	g.registry.MustRegister(newPoolCollector(st.PoolStats))

	secret, err := loadCursorSecret(g.cfg)
	if err != nil {
		return err
	}
	cursors, err := documents.NewCursors(secret, g.cfg.CursorTTL)
	if err != nil {
		return fmt.Errorf("cursor.secret_file: %w", err)
	}
	files, err := g.githubFiles()
	if err != nil {
		return err
	}
	guard := storeGuard{breaker: g.breakers.store}
	g.documentsC = documentsToolset(documents.Options{Sources: guardedSources{guard, st}, Files: files, Cursors: cursors},
		instructions.Options{Store: guardedCatalog{guard, st}, GitHub: files})
	g.documentsAuth = oauth.NewStoreAuthenticator(st, g.log, g.breakers.store)
	return nil
}

// documentsToolset is the toolset served at /mcp/documents: the document
// tools (docs/architecture.md#documents-contract) and the instruction
// catalog (docs/architecture.md#instruction-catalog-contract).
func documentsToolset(o documents.Options, io instructions.Options) *toolset.Toolset {
	return toolset.New("agent-gateway-documents", Version,
		"Read the project's allowlisted GitHub documents, pinned to commits. Start with runtime_bootstrap_get, "+
			"then read a source with git_document_get and follow next_cursor until it is absent. "+
			"Agent instructions: list profiles with catalog_profiles_list, dispatch one with workflow_dispatch, "+
			"and read a dispatched workflow again with workflow_get.",
		append(documents.Tools(o), instructions.Tools(io)...)...)
}

// documentsScopes are the scopes the documents endpoint's tools check,
// read from the tools' definitions without their dependencies (no handler
// runs): what the admin CLI, with no gateway wired, knows as checked.
func documentsScopes() []string {
	return documentsToolset(documents.Options{}, instructions.Options{}).ScopeNames()
}

// githubReader reads files at commits and resolves branch heads.
type githubReader interface {
	documents.Files
	instructions.GitHub
}

// githubFiles is the GitHub Contents client. Without an App (both
// github.app_id and github.private_key_file) or an API origin, every read
// answers provider_unconfigured; a key file that is set but unreadable
// fails the start.
func (g *Gateway) githubFiles() (githubReader, error) {
	if g.cfg.GitHubAPIOrigin == nil {
		return unconfiguredFiles{reason: "no GitHub API origin is configured (github.api_origin)"}, nil
	}
	var app *github.App
	switch {
	case g.cfg.GitHubAppID != 0 && g.cfg.GitHubAppKeyFile != "":
		var err error
		if app, err = github.LoadApp(g.cfg.GitHubAppID, g.cfg.GitHubAppKeyFile); err != nil {
			return nil, &ConfigError{Problems: []string{"github.private_key_file: " + err.Error()}}
		}
	case g.cfg.GitHubAppID != 0 || g.cfg.GitHubAppKeyFile != "":
		g.log.Warn(g.cfg.halfConfiguredApp())
	}
	g.githubApp = app != nil
	up := upstream.New(upstream.Config{
		Name: "github", Origin: g.cfg.GitHubAPIOrigin, IOTimeout: g.cfg.GitHubIOTimeout, Observer: g.metrics,
		// GitHub is a third party: it never learns the gateway's trace IDs.
		Tracing: g.upstreamTracing(github.Routes, false),
	})
	installs := github.NewInstallations(up, app)
	installs.Observe(func(event string) { g.domain.installTokens.WithLabelValues(event).Inc() })
	files := github.NewClient(up, installs)
	files.SetCallTimeout(g.cfg.GitHubCallTimeout)
	return files, nil
}

// unconfiguredFiles answers every read with provider_unconfigured.
type unconfiguredFiles struct{ reason string }

func (u unconfiguredFiles) GetFile(context.Context, github.FileRequest) (*github.File, error) {
	return nil, toolerr.New(toolerr.ProviderUnconfigured, "%s", u.reason)
}

func (u unconfiguredFiles) BranchHead(context.Context, github.BranchRequest) (string, error) {
	return "", toolerr.New(toolerr.ProviderUnconfigured, "%s", u.reason)
}

// cursorSecretName is the generated secret's file name under data_dir.
const cursorSecretName = "cursor.secret"

// loadCursorSecret reads cursor.secret_file, or <data_dir>/cursor.secret,
// generating the latter (32 random bytes, hex, mode 0600) on first start.
// Surrounding whitespace is ignored, so a secret written with a trailing
// newline works. Replicas must share one secret (a shared file or the same
// secret_file), or a cursor one issued fails on another.
func loadCursorSecret(cfg Config) ([]byte, error) {
	read := func(key, path string) ([]byte, error) {
		b, err := readFileBounded(path, maxSecretFileBytes)
		if err != nil {
			return nil, err
		}
		b = []byte(strings.TrimSpace(string(b)))
		if len(b) < documents.MinSecretBytes {
			return nil, &ConfigError{Problems: []string{fmt.Sprintf("%s: %s holds fewer than %d bytes", key, path, documents.MinSecretBytes)}}
		}
		return b, nil
	}
	if cfg.CursorSecretFile != "" {
		b, err := read("cursor.secret_file", cfg.CursorSecretFile)
		var ce *ConfigError
		if err != nil && !errors.As(err, &ce) {
			return nil, &ConfigError{Problems: []string{"cursor.secret_file: " + err.Error()}}
		}
		return b, err
	}
	path := filepath.Join(cfg.DataDir, cursorSecretName)
	if b, err := read("data_dir", path); !errors.Is(err, fs.ErrNotExist) {
		return b, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data_dir: %w", err)
	}
	// Written under a temporary name and linked into place, so a replica
	// starting at the same moment never reads a half-written secret: the
	// first link wins and everyone reads its file.
	tmp, err := os.CreateTemp(cfg.DataDir, ".cursor.secret-*")
	if err != nil {
		return nil, fmt.Errorf("data_dir: %w", err)
	}
	defer os.Remove(tmp.Name())
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		tmp.Close()
		return nil, err
	}
	_, werr := tmp.WriteString(hex.EncodeToString(raw))
	if err := errors.Join(werr, tmp.Chmod(0o600), tmp.Sync(), tmp.Close()); err != nil {
		return nil, fmt.Errorf("data_dir: writing the cursor secret: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("data_dir: %w", err)
	}
	return read("data_dir", path)
}
