package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // reads the SQLite replica's rows back

	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
	"github.com/agent-gateway/agent-gateway/test/oidcprovider"
	"github.com/agent-gateway/agent-gateway/test/tcpcut"
)

// stack is what one fault run stands on: two replicas on a PostgreSQL
// database of the run's own (reached through a cuttable proxy) sharing a
// Redis (through another proxy, under a key prefix of the run's own), a
// third gateway on SQLite whose files can be made to hit a full disk, and
// the emulated Forgejo behind a third proxy. The machine's PostgreSQL and
// Redis are only ever connected to: the run creates and drops its own
// database, and every cut happens in its own proxies.
type stack struct {
	tmp, bin                string
	forgejo                 *forgejoemu.Emulator
	demo                    *forgejoemu.Demo
	idp                     *oidcprovider.Provider
	pgProxy, redisProxy     *tcpcut.Proxy
	forgejoProxy            *tcpcut.Proxy
	adminDB                 *sql.DB
	adminURL, dbName, dbURL string // dbURL goes through pgProxy
	pair                    []*replica
	sqlite                  *replica
	docsToken               string
	keep                    bool // leave tmp (the logs) for a failed run to be read
}

// replica is one gateway process on a fixed address, which a rolling
// restart stops and starts again; ready is what the balancer last saw on
// its /readyz.
type replica struct {
	name, addr, bin string
	env             []string
	log             *os.File
	ready           atomic.Bool

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// url is the replica's base URL.
func (r *replica) url() string { return "http://" + r.addr }

// start runs the replica and waits up to 30 s for /healthz.
func (r *replica) start() error {
	cmd := exec.Command(r.bin, "serve")
	gatewaytest.TiedToParent(cmd)
	cmd.Env = r.env
	cmd.Stdout, cmd.Stderr = r.log, r.log
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	r.mu.Lock()
	r.cmd, r.done = cmd, done
	r.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("replica %s exited at start; its log is %s", r.name, r.log.Name())
		default:
		}
		if resp, err := http.Get(r.url() + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("replica %s did not start; its log is %s", r.name, r.log.Name())
}

// stop sends SIGTERM and waits for the exit (the drain and the grace
// included), killing it after 30 s.
func (r *replica) stop() {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	gatewaytest.StopExited(cmd, done, 30*time.Second, func() { _ = cmd.Process.Signal(syscall.SIGTERM) }, nil)
}

// pid is the running process's id.
func (r *replica) pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cmd.Process.Pid
}

// stackSettings are the gateway settings every replica runs with:
// budgets far above what the run's callers spend (so any 429 is a fault
// named wrongly, not a budget), a short drain the balancer's readiness
// polls see, and a Forgejo wait short enough for a hanging Forgejo to be
// answered within a short run.
var stackSettings = []string{
	"AGENT_GATEWAY_RATELIMIT_READ_PER_MINUTE=1000000",
	"AGENT_GATEWAY_RATELIMIT_WRITE_PER_MINUTE=1000000",
	"AGENT_GATEWAY_RATELIMIT_IP_CEILING_PER_MINUTE=1000000",
	"AGENT_GATEWAY_OAUTH_REGISTER_PER_MINUTE=1000000",
	"AGENT_GATEWAY_OAUTH_REGISTER_TOTAL_PER_MINUTE=1000000",
	"AGENT_GATEWAY_OAUTH_MAX_UNUSED_CLIENTS=1000000",
	"AGENT_GATEWAY_SHUTDOWN_DRAIN=" + drain.String(),
	"AGENT_GATEWAY_FORGEJO_IO_TIMEOUT=2s",
}

// drain is the replicas' shutdown_drain: several of the balancer's
// readiness polls long.
const drain = 600 * time.Millisecond

func startStack() (s *stack, err error) {
	s = &stack{}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.tmp, err = os.MkdirTemp("", "agent-gateway-faults-"); err != nil {
		return nil, err
	}
	s.bin = filepath.Join(s.tmp, "agent-gateway")
	if err := gatewaytest.BuildRelease(s.bin); err != nil {
		return nil, err
	}
	if s.forgejo, err = forgejoemu.Start(forgejoemu.Options{Dir: filepath.Join(s.tmp, "forgejo")}); err != nil {
		return nil, err
	}
	if s.demo, err = s.forgejo.SeedDemo(); err != nil {
		return nil, err
	}
	fu, _ := url.Parse(s.forgejo.URL())
	if s.forgejoProxy, err = tcpcut.Start(fu.Host); err != nil {
		return nil, err
	}
	if err := s.createDatabase(); err != nil {
		return nil, err
	}
	if s.redisProxy, err = tcpcut.Start(redisAddr()); err != nil {
		return nil, err
	}
	if err := pingRedis(redisAddr()); err != nil {
		return nil, fmt.Errorf("no Redis at %s: %w", redisAddr(), err)
	}
	addrs := make([]string, 3)
	for i := range addrs {
		if addrs[i], err = gatewaytest.FreeLoopbackAddr(); err != nil {
			return nil, err
		}
	}
	if s.idp, err = oidcprovider.Start(oidcprovider.Options{
		Users:   []oidcprovider.User{{Subject: "alice", Username: "alice", Password: "alice-pw", Email: "alice@example.test", Name: "Alice"}},
		Clients: []oidcprovider.Client{{ID: "gw", Secret: "gw-secret", RedirectURIs: []string{"http://" + addrs[0] + "/oauth/callback"}}},
	}); err != nil {
		return nil, err
	}
	common := append([]string{
		"AGENT_GATEWAY_FORGEJO_ORIGIN=http://" + s.forgejoProxy.Addr(),
		"AGENT_GATEWAY_OIDC_ISSUER=" + s.idp.Issuer(),
		"AGENT_GATEWAY_OIDC_CLIENT_ID=gw",
		"AGENT_GATEWAY_OIDC_CLIENT_SECRET=gw-secret",
	}, stackSettings...)
	// The pair shares one store, one Redis key prefix and one data
	// directory (so one generated cursor secret), as replicas do.
	pairDir := filepath.Join(s.tmp, "pair")
	pairEnv := append([]string{
		"AGENT_GATEWAY_DATA_DIR=" + pairDir,
		"AGENT_GATEWAY_DATABASE_URL=" + s.dbURL,
		"AGENT_GATEWAY_RATELIMIT_REDIS_URL=redis://" + s.redisProxy.Addr() + "/0",
		gatewaytest.KeyPrefixEnv + "=agwfaults:" + randomHex(6) + ":",
	}, common...)
	if err := s.seed(append(gatewaytest.CleanEnv(), pairEnv...)); err != nil {
		return nil, err
	}
	for i, name := range []string{"A", "B"} {
		r, err := s.newReplica(name, addrs[i], pairEnv)
		if err != nil {
			return nil, err
		}
		s.pair = append(s.pair, r)
	}
	// The SQLite gateway keeps its budgets in memory: its fault is its
	// disk alone.
	if s.sqlite, err = s.newReplica("SQLite", addrs[2], append([]string{"AGENT_GATEWAY_DATA_DIR=" + filepath.Join(s.tmp, "sqlite")}, common...)); err != nil {
		return nil, err
	}
	for _, r := range append([]*replica{s.sqlite}, s.pair...) {
		if err := r.start(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// newReplica prepares (does not start) a gateway listening on addr.
func (s *stack) newReplica(name, addr string, env []string) (*replica, error) {
	log, err := os.Create(filepath.Join(s.tmp, "gateway-"+name+".log"))
	if err != nil {
		return nil, err
	}
	return &replica{name: name, addr: addr, bin: s.bin, log: log,
		env: append(gatewaytest.CleanEnv(), append([]string{"AGENT_GATEWAY_LISTEN=" + addr}, env...)...)}, nil
}

// seed makes a project with one allowlisted document and a consent with
// documents:read, as an operator does with the admin CLI, and keeps the
// consent's access token for the documents callers.
func (s *stack) seed(env []string) error {
	admin := func(args ...string) (map[string]any, error) { return gatewaytest.Admin(s.bin, env, args...) }
	project, err := admin("create-project", "--name", "faults")
	if err != nil {
		return err
	}
	p := project["project_id"].(string)
	for _, args := range [][]string{
		{"add-member", "--project-id", p, "--subject", "alice"},
		{"link-repository", "--project-id", p, "--github-owner", "demo", "--github-repository", "handbook", "--installation-id", "77"},
		{"add-document-source", "--project-id", p, "--github-owner", "demo", "--github-repository", "handbook",
			"--document-role", "runtime", "--path", "docs/runtime.md", "--commit-sha", strings.Repeat("ab", 20)},
	} {
		if _, err := admin(args...); err != nil {
			return err
		}
	}
	consent, err := admin("create-consent", "--project-id", p, "--subject", "alice", "--scopes", "documents:read")
	if err != nil {
		return err
	}
	s.docsToken = consent["access_token"].(string)
	return nil
}

// createDatabase makes the run's own database on the machine's
// PostgreSQL (the tests' admin connection) and points dbURL at it through
// the cuttable proxy.
func (s *stack) createDatabase() error {
	s.adminURL = os.Getenv(storetest.PostgresURLEnv)
	if s.adminURL == "" {
		s.adminURL = storetest.DefaultPostgresURL
	}
	cfg, err := pgx.ParseConfig(s.adminURL)
	if err != nil {
		return fmt.Errorf("%s is not a PostgreSQL URL", storetest.PostgresURLEnv)
	}
	cfg.ConnectTimeout = 5 * time.Second
	s.adminDB = stdlib.OpenDB(*cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.dbName = "ag_faults_" + randomHex(8)
	if _, err := s.adminDB.ExecContext(ctx, "CREATE DATABASE "+pgx.Identifier{s.dbName}.Sanitize()); err != nil {
		s.adminDB.Close()
		s.adminDB = nil
		return fmt.Errorf("create the run's database on the machine's PostgreSQL: %w", err)
	}
	u, err := url.Parse(s.adminURL)
	if err != nil {
		return err
	}
	if s.pgProxy, err = tcpcut.Start(u.Host); err != nil {
		return err
	}
	u.Host, u.Path = s.pgProxy.Addr(), "/"+s.dbName
	s.dbURL = u.String()
	return nil
}

// storedClients returns which of ids are rows of the pair's store (read
// directly, not through the proxy) or of the SQLite gateway's file.
func (s *stack) storedClients(sqlite bool, ids []string) (map[string]bool, error) {
	var db *sql.DB
	var err error
	if sqlite {
		db, err = sql.Open("sqlite", "file:"+filepath.Join(s.tmp, "sqlite", "agent-gateway.db")+"?mode=ro&_pragma=busy_timeout(5000)")
	} else {
		u, _ := url.Parse(s.adminURL)
		u.Path = "/" + s.dbName
		db, err = sql.Open("pgx", u.String())
	}
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.Query(`SELECT client_id FROM oauth_clients`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	all := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		all[id] = true
	}
	found := map[string]bool{}
	for _, id := range ids {
		found[id] = all[id]
	}
	return found, rows.Err()
}

func (s *stack) close() {
	for _, r := range append(append([]*replica(nil), s.pair...), s.sqlite) {
		if r != nil {
			r.stop()
			r.log.Close()
		}
	}
	for _, p := range []*tcpcut.Proxy{s.pgProxy, s.redisProxy, s.forgejoProxy} {
		if p != nil {
			p.Close()
		}
	}
	if s.adminDB != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, _ = s.adminDB.ExecContext(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{s.dbName}.Sanitize()+" WITH (FORCE)")
		cancel()
		s.adminDB.Close()
	}
	if s.idp != nil {
		s.idp.Close()
	}
	if s.forgejo != nil {
		s.forgejo.Close()
	}
	if s.tmp != "" && !s.keep {
		os.RemoveAll(s.tmp)
	}
}

// redisAddr is the machine's Redis the run shares (never reconfigures).
func redisAddr() string { return "127.0.0.1:6379" }

// pingRedis sends one inline PING.
func pingRedis(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	b := make([]byte, 7)
	n, _ := c.Read(b)
	if !bytes.HasPrefix(b[:n], []byte("+PONG")) {
		return errors.New("no PONG")
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
