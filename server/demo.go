//go:build demo

// The demo links the emulated upstreams of test/ (test doubles that bring
// zitadel/oidc, go-jose and httptest with them), so it is compiled only
// with the demo build tag; the binary without it, which is the one `serve`
// ships in, builds this one (`go build -tags demo`, cached per source
// state) and re-executes it (see demo_reexec.go and demo_build.go).

package server

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// The demo's instruction catalog: an account repository of instruction
// documents under docs/agents/, read by its own installation, and the
// profile the walk-through dispatches.
const (
	demoAgentsRepo         = "agents"
	demoAgentsInstallation = 78
	demoProfile            = "reviewer"
)

// demoAgentFiles are the account's instruction documents.
var demoAgentFiles = map[string]string{
	"docs/agents/core.md":           "# Core\n\nWork only on what the grant names. Say what you did and what you did not verify.\n",
	"docs/agents/modes/worker.md":   "# Worker\n\nDo the task; stop and ask when the proposal is ambiguous.\n",
	"docs/agents/roles/reviewer.md": "# Reviewer\n\nRead the whole verified diff before you comment on it.\n",
	"docs/agents/soul.md":           "Be kind, be exact.\n",
	"docs/agents/skills/diffs.md":   "# Reading diffs\n\nFollow next_cursor until it is absent; a page is verified evidence.\n",
}

// demoUpstreams are the emulated upstreams and what they hold.
type demoUpstreams struct {
	forgejo     *forgejoemu.Emulator
	forgejoDemo *forgejoemu.Demo
	grant       forgejoemu.Grant // prepared by the owner for the bot, awaiting the agent
	github      *githubemu.Emulator
	docs        *githubemu.Docs
	agents      string // commit of the account's instruction repository
	idp         *oidcprovider.Provider
	keyFile     string
}

// demoSeed is what the demo put in the gateway's store.
type demoSeed struct {
	projectID, sourceID, profileID, token string
	// requestKey is the submission's idempotency key the banner uses.
	requestKey string
}

// runDemo (built with -tags demo) starts the emulated upstreams with sample data — a Forgejo with
// real git repositories and pull requests, a GitHub API over a real git
// repository with a GitHub App, and an OpenID provider with one user — then
// the real gateway in front of them with a seeded project, prints how to
// connect, and serves until interrupted. It accepts the flags of serve;
// --listen picks the gateway's address.
func runDemo(ctx context.Context, args []string, std Stdio) error {
	if done, err := demoPreflight(args, std); done || err != nil {
		return err
	}
	loaded, err := Load(LoadOptions{Command: "demo", Args: args, Stdout: std.Out, Stderr: std.Err})
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
		func(g *Gateway) (err error) { seed, err = seedDemoStore(ctx, g.store, up); return err },
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
	// The human side of the agent work grant contract
	// (docs/architecture.md#agent-work-grant-contract), done as the owner
	// would in Core's browser: a grant for the bot, awaiting the bot's
	// confirmation.
	d := up.forgejoDemo
	if up.grant, err = up.forgejo.PrepareGrant(d.Owner, d.PublicRepo, d.Bot, d.Owner, forgejoemu.GrantProposal{
		Task:    "Read pull request #1's verified diff and file an Issue listing what it changes.",
		Summary: "Summarise pull request #1",
	}); err != nil {
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
	if up.agents, err = seedDemoAgents(up.github, up.docs.Owner); err != nil {
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

// seedDemoAgents creates the account's instruction repository owner/agents
// with demoAgentFiles on main and an installation that reads it, and
// returns the commit.
func seedDemoAgents(gh *githubemu.Emulator, owner string) (string, error) {
	if err := gh.CreateRepository(owner, demoAgentsRepo); err != nil {
		return "", err
	}
	var entries []githubemu.Entry
	for p, c := range demoAgentFiles {
		entries = append(entries, githubemu.Entry{Path: p, Content: []byte(c)})
	}
	sha, err := gh.Commit(owner, demoAgentsRepo, "main", "Instruction documents", entries)
	if err != nil {
		return "", err
	}
	gh.AddInstallation(demoAgentsInstallation, owner+"/"+demoAgentsRepo)
	return sha, nil
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

// demoScopes are the scopes of alice's gateway token: every scope of the
// documents endpoint's tools, which the banner calls.
var demoScopes = documentsScopes()

// seedDemoStore does what an operator does with `agent-gateway admin`:
// creates a project with alice as member, links the emulated repository,
// allowlists its runtime document, configures the account's instruction
// catalog (core, worker mode, and a "reviewer" profile whose methodology
// is a project instruction source) and issues alice a token with
// demoScopes.
func seedDemoStore(ctx context.Context, st store.Store, up *demoUpstreams) (demoSeed, error) {
	var seed demoSeed
	d := up.docs
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
	if seed.profileID, err = seedDemoCatalog(ctx, st, p, repo.ID, up); err != nil {
		return seed, fmt.Errorf("seed the instruction catalog: %w", err)
	}
	consent, err := st.CreateConsent(ctx, p.ID, demoSubject, "demo", demoScopes)
	if err != nil {
		return seed, err
	}
	tok, err := st.IssueAccessToken(ctx, consent.ID, 24*time.Hour)
	if err != nil {
		return seed, err
	}
	seed.token = tok.Secret
	if seed.requestKey, err = newRequestKey(); err != nil {
		return seed, err
	}
	return seed, nil
}

// seedDemoCatalog links the account's instruction repository, allowlists
// its documents pinned at their commit, names the core and the worker
// mode, and creates the project's profile demoProfile: role
// responsibilities, the project's README as methodology, soul and a skill,
// so that no layer is missing. It returns the profile's ID.
func seedDemoCatalog(ctx context.Context, st store.Store, p store.Project, projectRepo string, up *demoUpstreams) (string, error) {
	arp, err := st.LinkAccountRepository(ctx, p.AccountID, up.docs.Owner, demoAgentsRepo, demoAgentsInstallation)
	if err != nil {
		return "", err
	}
	ins := map[string]string{}
	for path := range demoAgentFiles {
		s, err := st.AddInstructionSource(ctx, store.NewInstructionSource{AccountID: p.AccountID, RepositoryID: arp.ID, Path: path, CommitSHA: up.agents})
		if err != nil {
			return "", err
		}
		ins[path] = s.ID
	}
	if _, err := st.SetAccountLayer(ctx, p.AccountID, store.LayerCore, "", ins["docs/agents/core.md"]); err != nil {
		return "", err
	}
	if _, err := st.SetAccountLayer(ctx, p.AccountID, store.LayerMode, store.DefaultMode, ins["docs/agents/modes/worker.md"]); err != nil {
		return "", err
	}
	method, err := st.AddDocumentSource(ctx, store.NewDocumentSource{ProjectID: p.ID, RepositoryID: projectRepo,
		Role: store.RoleInstruction, Path: up.docs.Readme, CommitSHA: up.docs.Commit})
	if err != nil {
		return "", err
	}
	prof, err := st.CreateProfile(ctx, store.NewCatalogProfile{ProjectID: p.ID, Name: demoProfile})
	if err != nil {
		return "", err
	}
	for _, l := range []struct{ layer, source string }{
		{store.LayerRoleResponsibilities, ins["docs/agents/roles/reviewer.md"]},
		{store.LayerMethodology, method.ID},
		{store.LayerSoul, ins["docs/agents/soul.md"]},
		{store.LayerSkills, ins["docs/agents/skills/diffs.md"]},
	} {
		if _, err := st.SetProfileLayer(ctx, prof.ID, l.layer, []string{l.source}); err != nil {
			return "", err
		}
	}
	return prof.ID, nil
}

// demoSelf is how the banner names this binary in a command: its absolute
// path, quoted for a POSIX shell when it needs to be. The binary is the
// demo build, which has every command; `go run . diff` would compile again
// and turn diff's exit codes 2 and 3 into 1.
func demoSelf() string {
	exe, err := os.Executable()
	if err != nil {
		return "agent-gateway"
	}
	if strings.Trim(exe, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+") == "" {
		return exe
	}
	return "'" + strings.ReplaceAll(exe, "'", `'\''`) + "'"
}

// newRequestKey returns a random canonical lowercase UUIDv4, the form
// submit_agent_work_proposal requires of its idempotency key.
func newRequestKey() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}

// mcpCurl is the banner's curl command for one MCP call: method
// tools/list when tool is empty, else tools/call of tool with args (a JSON
// object). A token, when set, goes in the Authorization header.
func mcpCurl(endpoint, token string, id int, tool, args string) string {
	auth := ""
	if token != "" {
		auth = " -H 'Authorization: Bearer " + token + "'"
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, id)
	if tool != "" {
		body = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}`, id, tool, args)
	}
	return fmt.Sprintf("  curl -s %s -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream'%s \\\n    -d '%s'\n",
		endpoint, auth, body)
}

// printDemo prints where everything is and the walk-through: every tool
// of both toolsets, in the order of the product's flows, each a command
// that works as printed with the tokens printed (test/e2e TestDemoWalkThrough
// runs every one).
func printDemo(std Stdio, publicURL string, up *demoUpstreams, seed demoSeed) {
	fj, gh := publicURL+"/mcp/forgejo", publicURL+"/mcp/documents"
	d, g := up.forgejoDemo, up.grant
	// Where `git apply --check` can try the verified diff: a clone of the
	// emulated repository at the pull request's stored merge base.
	var gitDir, mergeBase string
	if r, err := up.forgejo.Repo(d.Owner, d.PublicRepo); err == nil {
		gitDir = r.GitDir()
	}
	if p, err := up.forgejo.Pull(d.Owner, d.PublicRepo, d.OpenPull); err == nil {
		mergeBase = p.MergeBase()
	}
	repo := fmt.Sprintf(`"owner":"%s","repo":"%s"`, d.Owner, d.PublicRepo)
	grant := fmt.Sprintf(`{%s,"grant_id":%d}`, repo, g.ID)
	triple := fmt.Sprintf(`%s,"grant_id":%d,"proposal_schema":"%s","proposal_version":%d,"proposal_digest":"%s"`,
		repo, g.ID, forgejoemu.ProposalSchema, forgejoemu.ProposalVersion, g.Digest)
	bot, tok := d.BotToken, seed.token
	w := std.Out
	fmt.Fprintf(w, `
agent-gateway demo is running: the real gateway in front of emulated upstreams.
Everything below is local and made up for this demo; it is gone when you stop it.

  landing page        %[1]s/
  Forgejo endpoint    %[2]s
    emulated Forgejo  %[3]s   %[4]s/%[5]s (pull requests #%[6]d open, #%[7]d closed, #%[8]d empty)
    a Forgejo token   %[9]s   (user %[10]s, the agent: read:repository, write:issue)
    agent work grant  %[11]d on %[4]s/%[5]s, prepared by %[4]s for %[10]s, awaiting the agent
  documents endpoint  %[12]s
    emulated GitHub   %[13]s   %[14]s/%[15]s with GitHub App %[16]d; instruction documents in %[14]s/%[17]s
    project           %[18]s   runtime document %[19]s = source %[20]s
    catalog profile   %[21]s   %[22]q: core, %[23]s mode, role responsibilities, methodology, soul, skills
    a gateway token   %[24]s   (alice, %[25]s, 24 h)
    OpenID provider   %[26]s   user alice / %[27]s (for the OAuth login)

The walk-through: every tool of both endpoints, in order, each one MCP call over plain HTTP.

1. Read the forge anonymously: the tool list, a search, the repository, its pull requests, one of them.

`, publicURL, fj, up.forgejo.URL(), d.Owner, d.PublicRepo, d.OpenPull, d.ClosedPull, d.EmptyPull,
		bot, d.Bot, g.ID, gh, up.github.URL(), up.docs.Owner, up.docs.Repo, demoAppID, demoAgentsRepo,
		seed.projectID, up.docs.Runtime, seed.sourceID, seed.profileID, demoProfile, store.DefaultMode,
		tok, strings.Join(demoScopes, " "), up.idp.Issuer(), demoPassword)
	fmt.Fprint(w, mcpCurl(fj, "", 1, "", ""))
	fmt.Fprint(w, mcpCurl(fj, "", 2, "search_repositories", `{"q":"gateway"}`))
	fmt.Fprint(w, mcpCurl(fj, "", 3, "get_repository", "{"+repo+"}"))
	fmt.Fprint(w, mcpCurl(fj, "", 4, "list_pull_requests", "{"+repo+`,"state":"all"}`))
	fmt.Fprint(w, mcpCurl(fj, "", 5, "get_pull_request", fmt.Sprintf(`{%s,"index":%d}`, repo, d.OpenPull)))
	fmt.Fprintf(w, "\n2. As the agent %s, read the grants that name it, and this one:\n\n", d.Bot)
	fmt.Fprint(w, mcpCurl(fj, bot, 6, "list_agent_work_grants", `{"state":"awaiting_agent"}`))
	fmt.Fprint(w, mcpCurl(fj, bot, 7, "get_agent_work_grant", grant))
	fmt.Fprintf(w, "\n3. Read page 1 of pull request #%d's verified diff:\n\n", d.OpenPull)
	fmt.Fprint(w, mcpCurl(fj, bot, 8, "get_pull_request_diff", fmt.Sprintf(`{%s,"index":%d}`, repo, d.OpenPull)))
	fmt.Fprintf(w, `
   or read the whole diff, every page verified (trust pr1.diff only when the exit code is 0),
   then check that git applies it to the pull request's merge base:

  export AGENT_GATEWAY_TOKEN=%[1]s
  %[8]s diff --endpoint %[2]s %[3]s/%[4]s#%[5]d > pr1.diff
  git clone -q %[6]s pr1-base && git -C pr1-base checkout -q %[7]s
  git -C pr1-base apply --check ../pr1.diff && echo "the verified diff applies"

4. Confirm the grant: the agent repeats the proposal it read (schema, version, digest):

`, bot, fj, d.Owner, d.PublicRepo, d.OpenPull, gitDir, mergeBase, demoSelf())
	fmt.Fprint(w, mcpCurl(fj, bot, 9, "confirm_agent_work_grant", "{"+triple+"}"))
	fmt.Fprintf(w, `
5. Approve it as the human %[1]s. Forgejo does this in the browser; the emulator has a route for it:

  curl -s -X POST -H 'Authorization: token %[2]s' %[3]s/api/v1/repos/%[1]s/%[4]s/agent-work-grants/%[5]d/approve

6. Submit the work: the grant becomes an Issue. The request key is the agent's idempotency key,
   stored before the call; repeating the call with it is a replay, never a second Issue:

`, d.Owner, d.OwnerToken, up.forgejo.URL(), d.PublicRepo, g.ID)
	fmt.Fprint(w, mcpCurl(fj, bot, 10, "submit_agent_work_proposal", fmt.Sprintf(
		`{%s,"request_key":"%s","title":"Summary of pull request #%d","body":"Adds a binary logo and a Latin-1 file, renames the guide."}`,
		triple, seed.requestKey, d.OpenPull)))
	fmt.Fprint(w, "\n7. Read the receipt with the same key:\n\n")
	fmt.Fprint(w, mcpCurl(fj, bot, 11, "get_agent_work_submission", fmt.Sprintf(`{%s,"grant_id":%d,"request_key":"%s"}`, repo, g.ID, seed.requestKey)))
	fmt.Fprint(w, "\n8. On the documents endpoint, as alice: the project's runtime bootstrap,\n\n")
	fmt.Fprint(w, mcpCurl(gh, tok, 12, "runtime_bootstrap_get", `{}`))
	fmt.Fprint(w, "\n9. the first fragment of its runtime document,\n\n")
	fmt.Fprint(w, mcpCurl(gh, tok, 13, "git_document_get", fmt.Sprintf(`{"source_id":"%s"}`, seed.sourceID)))
	fmt.Fprint(w, "\n10. the catalog profiles, and one assembled (hashes and sizes, no text),\n\n")
	fmt.Fprint(w, mcpCurl(gh, tok, 14, "catalog_profiles_list", `{}`))
	fmt.Fprint(w, mcpCurl(gh, tok, 15, "catalog_profile_get", fmt.Sprintf(`{"profile_id":"%s"}`, seed.profileID)))
	fmt.Fprint(w, "\n11. a dispatch, which freezes the profile as a workflow (kept in workflow.json),\n\n")
	fmt.Fprint(w, strings.TrimSuffix(mcpCurl(gh, tok, 16, "workflow_dispatch", fmt.Sprintf(`{"profile_id":"%s"}`, seed.profileID)), "\n")+" > workflow.json\n")
	fmt.Fprint(w, "\n12. and the workflow it stored:\n\n")
	fmt.Fprint(w, "  WF=$(grep -o 'wfl_[a-z0-9]*' workflow.json | head -n 1)\n")
	fmt.Fprint(w, mcpCurl(gh, tok, 17, "workflow_get", `{"workflow_id":"'"$WF"'"}`))
	fmt.Fprintf(w, `
Connect an MCP client (it discovers OAuth on the documents endpoint and logs in as alice):

  claude mcp add --transport http forgejo %s
  claude mcp add --transport http documents %s
  claude mcp login documents

The login is the next step: until it, "claude mcp list" says the documents server needs
authentication. It runs in a terminal (a TTY): it opens the browser at the OpenID provider
(user alice above), or prints the address with --no-browser; in a claude session, /mcp does
the same. The MCP Inspector opens the browser itself only with MCP_AUTO_OPEN_ENABLED=true
(docs/oauth.md, "Clients that need a terminal").

Stop with Ctrl-C.
`, fj, gh)
}
