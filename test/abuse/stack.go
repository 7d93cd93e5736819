package main

import (
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // counts the gateway's rows

	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
	"github.com/agent-gateway/agent-gateway/test/oidcprovider"
)

// stack is the gateway binary in front of the emulated upstreams, with a
// seeded project, as `agent-gateway demo` runs it but with each piece
// reachable for counting. The upstreams run in a process of their own
// (upstreams.go); the OIDC provider and the metadata host, off the
// measured calls' path, in this one.
type stack struct {
	tmp, bin, dataDir, logPath string
	url                        string
	cmd                        *exec.Cmd
	up                         *upstreams // the emulated Forgejo and GitHub, in a process of their own (upstreams.go)
	demo                       *forgejoemu.Demo
	idp                        *oidcprovider.Provider
	metadata                   *metadataHost // client metadata documents (cimd.go)
	sourceID, docsToken        string
	honest                     *tokenExchange // oauth.go
}

const (
	appID          = 1001
	installationID = 77
)

func startStack(gatewayEnv []string) (s *stack, err error) {
	s = &stack{}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.tmp, err = os.MkdirTemp("", "agent-gateway-abuse-"); err != nil {
		return nil, err
	}
	s.dataDir, s.logPath, s.bin = filepath.Join(s.tmp, "data"), filepath.Join(s.tmp, "gateway.log"), filepath.Join(s.tmp, "agent-gateway")
	if err := gatewaytest.BuildRelease(s.bin); err != nil {
		return nil, err
	}
	if s.up, err = startUpstreams(filepath.Join(s.tmp, "upstreams")); err != nil {
		return nil, err
	}
	s.demo = &s.up.Demo
	docs := s.up.Docs
	addr, err := gatewaytest.FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	s.url = "http://" + addr
	if s.idp, err = oidcprovider.Start(oidcprovider.Options{
		Users:   []oidcprovider.User{{Subject: "alice", Username: "alice", Password: "alice-pw", Email: "alice@example.test", Name: "Alice"}},
		Clients: []oidcprovider.Client{{ID: "gw", Secret: "gw-secret", RedirectURIs: []string{s.url + "/oauth/callback"}}},
	}); err != nil {
		return nil, err
	}
	if s.metadata, err = startMetadataHost(s.tmp); err != nil {
		return nil, err
	}
	env := []string{
		"AGENT_GATEWAY_LISTEN=" + addr,
		"AGENT_GATEWAY_DATA_DIR=" + s.dataDir,
		"AGENT_GATEWAY_FORGEJO_ORIGIN=" + s.up.ForgejoURL,
		"AGENT_GATEWAY_GITHUB_API_ORIGIN=" + s.up.GitHubURL,
		"HEYAIRA_GITHUB_APP_ID=" + strconv.Itoa(appID),
		"HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE=" + s.up.KeyFile,
		"AGENT_GATEWAY_OIDC_ISSUER=" + s.idp.Issuer(),
		"AGENT_GATEWAY_OIDC_CLIENT_ID=gw",
		"AGENT_GATEWAY_OIDC_CLIENT_SECRET=gw-secret",
		// The IPv6 attacker's proxy (ipv6.go); no other caller uses it.
		"AGENT_GATEWAY_TRUSTED_PROXIES=" + ipv6Proxy,
	}
	env = append(env, s.metadata.env()...)
	// The project, its document and a gateway token, as an operator makes
	// them with the admin CLI.
	project, err := s.admin(env, "create-project", "--name", "abuse")
	if err != nil {
		return nil, err
	}
	p := project["project_id"].(string)
	steps := [][]string{
		{"add-member", "--project-id", p, "--subject", "alice"},
		{"link-repository", "--project-id", p, "--github-owner", docs.Owner, "--github-repository", docs.Repo, "--installation-id", strconv.Itoa(installationID)},
	}
	for _, args := range steps {
		if _, err := s.admin(env, args...); err != nil {
			return nil, err
		}
	}
	src, err := s.admin(env, "add-document-source", "--project-id", p, "--github-owner", docs.Owner, "--github-repository", docs.Repo,
		"--document-role", "runtime", "--path", docs.Runtime, "--commit-sha", docs.Commit)
	if err != nil {
		return nil, err
	}
	s.sourceID = src["source_id"].(string)
	consent, err := s.admin(env, "create-consent", "--project-id", p, "--subject", "alice", "--scopes", "documents:read")
	if err != nil {
		return nil, err
	}
	s.docsToken = consent["access_token"].(string)

	logFile, err := os.Create(s.logPath)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(s.bin, "serve")
	gatewaytest.TiedToParent(s.cmd)
	s.cmd.Env = append(append(gatewaytest.CleanEnv(), env...), gatewayEnv...)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	logFile.Close() // the child holds its own descriptor
	for i := 0; i < 300; i++ {
		if resp, err := http.Get(s.url + "/healthz"); err == nil {
			resp.Body.Close()
			if s.honest, err = signIn(s.url); err != nil {
				return nil, fmt.Errorf("sign the honest OAuth client in: %w", err)
			}
			return s, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, fmt.Errorf("the gateway did not start; its log is %s", s.logPath)
}

// admin runs `agent-gateway admin args… --json` on the stack's store.
func (s *stack) admin(env []string, args ...string) (map[string]any, error) {
	return gatewaytest.Admin(s.bin, append(gatewaytest.CleanEnv(), env...), args...)
}

func (s *stack) close() {
	if s.cmd != nil && s.cmd.Process != nil {
		gatewaytest.StopCommand(s.cmd, 30*time.Second, func() { _ = s.cmd.Process.Signal(os.Interrupt) }, nil)
	}
	if s.idp != nil {
		s.idp.Close()
	}
	s.metadata.close()
	if s.up != nil {
		s.up.close()
	}
	if s.tmp != "" {
		os.RemoveAll(s.tmp)
	}
}

// rss returns the gateway's resident set now and its peak (VmRSS and
// VmHWM of /proc/<pid>/status), in bytes.
func (s *stack) rss() (now, peak int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			now = n << 10
		case "VmHWM:":
			peak = n << 10
		}
	}
	return now, peak
}

// logBytes is the size of what the gateway has logged so far.
func (s *stack) logBytes() int64 {
	st, err := os.Stat(s.logPath)
	if err != nil {
		return 0
	}
	return st.Size()
}

// rows counts the rows of every table of the gateway's SQLite store.
func (s *stack) rows() (map[string]int64, error) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(s.dataDir, "agent-gateway.db")+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rs, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
	if err != nil {
		return nil, err
	}
	var tables []string
	for rs.Next() {
		var n string
		if err := rs.Scan(&n); err != nil {
			rs.Close()
			return nil, err
		}
		tables = append(tables, n)
	}
	rs.Close()
	out := map[string]int64{}
	for _, tbl := range tables {
		var n int64
		if err := db.QueryRow(`SELECT count(*) FROM "` + tbl + `"`).Scan(&n); err != nil {
			return nil, err
		}
		out[tbl] = n
	}
	return out, nil
}
