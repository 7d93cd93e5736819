//go:build demo

// The demo links the emulated upstreams of test/ (test doubles that bring
// zitadel/oidc, go-jose and httptest with them), so it is compiled only
// with the demo build tag; the binary without it, which is the one `serve`
// ships in, re-executes `go run -tags demo . demo` (see demo_reexec.go).

package server

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
	"github.com/agent-gateway/agent-gateway/test/githubemu"
	"github.com/agent-gateway/agent-gateway/test/oidcprovider"
	"github.com/agent-gateway/agent-gateway/upstream"
)

// The demo's fixed names: an App, an installation, a user at the identity
// provider, and the gateway's client there.
const (
	demoAppID          = 1001
	demoInstallationID = 77
	demoSubject        = "alice"
	demoPassword       = "alice-demo-password"
	demoOIDCClient     = "agent-gateway-demo"
)

// demoUpstreams are the emulated upstreams and what they hold.
type demoUpstreams struct {
	forgejo     *forgejoemu.Emulator
	forgejoDemo *forgejoemu.Demo
	github      *githubemu.Emulator
	docs        *githubemu.Docs
	idp         *oidcprovider.Provider
	keyFile     string
}

// demoSeed is what the demo put in the gateway's store.
type demoSeed struct {
	projectID, sourceID, token string
}

// runDemo (built with -tags demo) starts the emulated upstreams with sample data — a Forgejo with
// real git repositories and pull requests, a GitHub API over a real git
// repository with a GitHub App, and an OpenID provider with one user — then
// the real gateway in front of them with a seeded project, prints how to
// connect, and serves until interrupted. It accepts the flags of serve;
// --listen picks the gateway's address.
func runDemo(ctx context.Context, args []string, std Stdio) error {
	loaded, err := Load(LoadOptions{Args: args, Stderr: std.Err})
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "agent-gateway-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cfg := loaded.Config
	up, err := startDemoUpstreams(tmp, cfg.PublicURL)
	if err != nil {
		return err
	}
	defer up.close()
	if cfg.ForgejoOrigin, err = upstream.ParseOrigin(up.forgejo.URL()); err != nil {
		return err
	}
	if cfg.GitHubAPIOrigin, err = upstream.ParseOrigin(up.github.URL()); err != nil {
		return err
	}
	cfg.GitHubAppID, cfg.GitHubAppKeyFile = demoAppID, up.keyFile
	cfg.OIDCIssuer, cfg.OIDCClientID, cfg.OIDCClientSecret = up.idp.Issuer(), demoOIDCClient, demoPassword
	if cfg.DataDir == Default().DataDir {
		cfg.DataDir = filepath.Join(tmp, "data")
	}
	var seed demoSeed
	return serveGateway(ctx, cfg, std,
		func(g *Gateway) (err error) { seed, err = seedDemoStore(ctx, g.store, up.docs); return err },
		func(string) { printDemo(std, cfg.PublicURL, up, seed) })
}

func startDemoUpstreams(tmp, publicURL string) (*demoUpstreams, error) {
	up := &demoUpstreams{}
	var err error
	if up.forgejo, err = forgejoemu.Start(forgejoemu.Options{Dir: filepath.Join(tmp, "forgejo")}); err != nil {
		return nil, fmt.Errorf("start the Forgejo emulator: %w", err)
	}
	if up.forgejoDemo, err = up.forgejo.SeedDemo(); err != nil {
		up.close()
		return nil, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		up.close()
		return nil, err
	}
	up.keyFile = filepath.Join(tmp, "github-app.pem")
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(up.keyFile, pemKey, 0o600); err != nil {
		up.close()
		return nil, err
	}
	if up.github, err = githubemu.Start(githubemu.Options{Dir: filepath.Join(tmp, "github"), AppID: demoAppID, AppKey: &key.PublicKey}); err != nil {
		up.close()
		return nil, fmt.Errorf("start the GitHub emulator: %w", err)
	}
	if up.docs, err = up.github.SeedDocs("demo", "handbook", demoInstallationID); err != nil {
		up.close()
		return nil, err
	}
	up.idp, err = oidcprovider.Start(oidcprovider.Options{
		Users:   []oidcprovider.User{{Subject: demoSubject, Username: demoSubject, Password: demoPassword, Email: "alice@example.test", Name: "Alice"}},
		Clients: []oidcprovider.Client{{ID: demoOIDCClient, Secret: demoPassword, RedirectURIs: []string{publicURL + "/oauth/callback"}}},
	})
	if err != nil {
		up.close()
		return nil, fmt.Errorf("start the OpenID provider: %w", err)
	}
	return up, nil
}

func (up *demoUpstreams) close() {
	if up.idp != nil {
		up.idp.Close()
	}
	if up.github != nil {
		up.github.Close()
	}
	if up.forgejo != nil {
		up.forgejo.Close()
	}
}

// seedDemoStore creates a project with alice as member, links the
// emulated repository, allowlists its runtime document and issues alice a
// documents:read token, the way an operator does with `agent-gateway admin`.
func seedDemoStore(ctx context.Context, st store.Store, d *githubemu.Docs) (demoSeed, error) {
	var seed demoSeed
	p, err := st.CreateProject(ctx, "", "demo")
	if err != nil {
		return seed, err
	}
	seed.projectID = p.ID
	if err := st.AddMember(ctx, p.ID, demoSubject); err != nil {
		return seed, err
	}
	repo, err := st.LinkRepository(ctx, p.ID, d.Owner, d.Repo, d.InstallationID)
	if err != nil {
		return seed, err
	}
	src, err := st.AddDocumentSource(ctx, store.NewDocumentSource{ProjectID: p.ID, RepositoryID: repo.ID,
		Role: store.RoleRuntime, Path: d.Runtime, CommitSHA: d.Commit})
	if err != nil {
		return seed, err
	}
	seed.sourceID = src.ID
	grant, err := st.CreateGrant(ctx, p.ID, demoSubject, "demo", []string{"documents:read"})
	if err != nil {
		return seed, err
	}
	tok, err := st.IssueAccessToken(ctx, grant.ID, 24*time.Hour)
	if err != nil {
		return seed, err
	}
	seed.token = tok.Secret
	return seed, nil
}

func printDemo(std Stdio, publicURL string, up *demoUpstreams, seed demoSeed) {
	fj, gh := publicURL+"/mcp/forgejo", publicURL+"/mcp/documents"
	d := up.forgejoDemo
	hdr := `-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream'`
	// Where `git apply --check` can try the verified diff: a clone of the
	// emulated repository at the pull request's stored merge base.
	var gitDir, mergeBase string
	if r, err := up.forgejo.Repo(d.Owner, d.PublicRepo); err == nil {
		gitDir = r.GitDir()
	}
	if p, err := up.forgejo.Pull(d.Owner, d.PublicRepo, d.OpenPull); err == nil {
		mergeBase = p.MergeBase()
	}
	fmt.Fprintf(std.Out, `
agent-gateway demo is running: the real gateway in front of emulated upstreams.
Everything below is local and made up for this demo; it is gone when you stop it.

  landing page        %[1]s/
  Forgejo endpoint    %[2]s
    emulated Forgejo  %[3]s   public %[4]s/%[5]s (pull requests #%[6]d open, #%[7]d closed, #%[8]d empty), private %[4]s/%[9]s
    a Forgejo token   %[10]s   (user %[11]s: read:repository, write:issue)
  documents endpoint  %[12]s
    emulated GitHub   %[13]s   %[14]s/%[15]s with GitHub App %[16]d
    project           %[17]s   runtime document %[18]s = source %[19]s
    a gateway token   %[20]s   (alice, documents:read, 24 h)
    OpenID provider   %[21]s   user alice / %[22]s (for the OAuth login)

List the anonymous Forgejo tools:

  curl -s %[2]s %[23]s \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'

Read page 1 of a pull request's verified diff:

  curl -s %[2]s %[23]s -H 'Authorization: Bearer %[10]s' \
    -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_pull_request_diff","arguments":{"owner":"%[4]s","repo":"%[5]s","index":%[6]d}}}'

Read pull request #%[6]d's whole diff, every page verified (trust pr1.diff only when the exit code is 0),
then check that git applies it to the pull request's merge base:

  export AGENT_GATEWAY_TOKEN=%[10]s
  go run . diff --endpoint %[2]s %[4]s/%[5]s#%[6]d > pr1.diff
  git clone -q %[24]s pr1-base && git -C pr1-base checkout -q %[25]s
  git -C pr1-base apply --check ../pr1.diff && echo "the verified diff applies"

Read the project's runtime document:

  curl -s %[12]s %[23]s -H 'Authorization: Bearer %[20]s' \
    -d '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"git_document_get","arguments":{"source_id":"%[19]s"}}}'

Connect an MCP client (it discovers OAuth on the documents endpoint and logs in as alice):

  claude mcp add --transport http forgejo %[2]s
  claude mcp add --transport http documents %[12]s

Stop with Ctrl-C.
`, publicURL, fj, up.forgejo.URL(), d.Owner, d.PublicRepo, d.OpenPull, d.ClosedPull, d.EmptyPull, d.PrivateRepo,
		d.ReaderToken, d.Reader, gh, up.github.URL(), up.docs.Owner, up.docs.Repo, demoAppID,
		seed.projectID, up.docs.Runtime, seed.sourceID, seed.token, up.idp.Issuer(), demoPassword, hdr,
		gitDir, mergeBase)
}
