package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	"go.yaml.in/yaml/v3"

	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// The tests of docs/deploy.md: each runs a step of the guide, reading the
// guide's own block where the step has one, with the binary `make build`
// writes.

// TestDeployBuildStamp (docs/deploy.md#1-build-the-binary): `make build`
// gives a binary whose `version` prints exactly what `git describe --tags
// --always --dirty` says of the checkout, built with -trimpath and -s -w.
func TestDeployBuildStamp(t *testing.T) {
	block := guideBlock(t, "docs/deploy.md", "TestDeployBuildStamp", 0)
	if !strings.Contains(block, "make build\n") || !strings.Contains(block, "bin/agent-gateway version\n") {
		t.Fatalf("the guide's build step changed:\n%s", block)
	}
	bin := gatewaytest.MakeBinary(t)
	root, _ := gatewaytest.ModuleRoot()
	describe, err := exec.Command("git", "-C", root, "describe", "--tags", "--always", "--dirty").Output()
	if err != nil {
		t.Fatalf("git describe: %v", err)
	}
	out, err := exec.Command(bin, "version").Output()
	want := "agent-gateway " + strings.TrimSpace(string(describe)) + " " + runtime.Version() + "\n"
	if err != nil || string(out) != want {
		t.Fatalf("version: %v %q, want %q", err, out, want)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(info.Settings, debug.BuildSetting{Key: "-trimpath", Value: "true"}) {
		t.Errorf("the binary was not built with -trimpath: %v", info.Settings)
	}
	// -s -w: no symbol table, no DWARF.
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, s := range f.Sections {
		if s.Name == ".symtab" || strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_") {
			t.Errorf("the binary has a %s section: not built with -s -w", s.Name)
		}
	}
}

// guideDatabase is a database made with the guide's SQL: its name (also
// the role's) and the URL the guide's export line gives for it.
type guideDatabase struct {
	name, url string
}

// createGuideDatabase runs the guide's CREATE ROLE / CREATE DATABASE as the
// server's superuser, with a role and database name of its own and a
// random password for "change-me", and returns the guide's
// AGENT_GATEWAY_DATABASE_URL pointed at the local server. Both are dropped
// when the test ends.
func createGuideDatabase(t *testing.T) guideDatabase {
	t.Helper()
	admin, adminURL := storetest.Admin(t)
	name := "agw_deploy_" + randomHex(t)[:12]
	password := randomHex(t)
	sqlBlock := replaceAll(t, guideBlock(t, "docs/deploy.md", "TestDeployPostgres", 0), "agent_gateway", name, "change-me", password)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, q := range []string{"DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize() + " WITH (FORCE)", "DROP ROLE IF EXISTS " + pgx.Identifier{name}.Sanitize()} {
			if _, err := admin.ExecContext(ctx, q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	// One statement at a time: CREATE DATABASE cannot run inside the
	// implicit transaction of a multi-statement query.
	for _, stmt := range strings.Split(sqlBlock, ";") {
		if stmt = strings.TrimSpace(stmt); stmt != "" {
			if _, err := admin.ExecContext(ctx, stmt); err != nil {
				t.Fatalf("the guide's SQL %q: %v", stmt, err)
			}
		}
	}
	shBlock := guideBlock(t, "docs/deploy.md", "TestDeployPostgres", 1)
	m := regexp.MustCompile(`(?m)^export AGENT_GATEWAY_DATABASE_URL='([^']+)'$`).FindStringSubmatch(shBlock)
	if m == nil || !strings.Contains(shBlock, "\nbin/agent-gateway serve ") {
		t.Fatalf("the guide's start step changed:\n%s", shBlock)
	}
	admin0, _ := url.Parse(adminURL)
	dbURL := replaceAll(t, m[1], "agent_gateway", name, "change-me", password, "db.internal:5432", admin0.Host, "sslmode=verify-full", "sslmode=disable")
	return guideDatabase{name: name, url: dbURL}
}

// migrationsApplied reads schema_migrations through url: version → when.
func migrationsApplied(t *testing.T, dbURL string) map[int64]time.Time {
	t.Helper()
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT version, applied_at FROM schema_migrations`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]time.Time{}
	for rows.Next() {
		var v int64
		var at time.Time
		if err := rows.Scan(&v, &at); err != nil {
			t.Fatal(err)
		}
		if _, dup := out[v]; dup {
			t.Fatalf("migration %d recorded twice", v)
		}
		out[v] = at
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// embeddedMigrations is how many schema steps the binary embeds.
func embeddedMigrations(t *testing.T) int {
	t.Helper()
	root, _ := gatewaytest.ModuleRoot()
	files, err := filepath.Glob(filepath.Join(root, "store", "migrations", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("store/migrations: %v, %d files", err, len(files))
	}
	return len(files)
}

// wantReady fails unless /readyz answers ready with the store ok.
func wantReady(t *testing.T, gw *gatewaytest.Process) {
	t.Helper()
	code, body := get(t, gw.URL+"/readyz")
	var r struct {
		Status    string
		Upstreams map[string]string
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || code != http.StatusOK || r.Status != "ready" || r.Upstreams["store"] != "ok" {
		t.Fatalf("/readyz: %d %s", code, body)
	}
}

// TestDeployPostgres (docs/deploy.md#3-the-store): the guide's SQL makes a
// role and a database it owns; the binary started with the guide's
// AGENT_GATEWAY_DATABASE_URL migrates it as that role (the tables are the
// role's), is ready, and has every embedded step recorded once; started
// again, it applies nothing twice.
func TestDeployPostgres(t *testing.T) {
	db := createGuideDatabase(t)
	bin := gatewaytest.MakeBinary(t)
	start := func() *gatewaytest.Process {
		return gatewaytest.Start(t, gatewaytest.Options{Binary: bin, Env: map[string]string{"AGENT_GATEWAY_DATABASE_URL": db.url}})
	}
	gw := start()
	wantReady(t, gw)
	first := migrationsApplied(t, db.url)
	if len(first) != embeddedMigrations(t) {
		t.Fatalf("schema_migrations has %d steps, the binary embeds %d", len(first), embeddedMigrations(t))
	}
	conn, err := sql.Open("pgx", db.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var owner string
	if err := conn.QueryRow(`SELECT tableowner FROM pg_tables WHERE tablename = 'schema_migrations'`).Scan(&owner); err != nil || owner != db.name {
		t.Fatalf("schema_migrations is owned by %q (%v), want the guide's role %q", owner, err, db.name)
	}
	gw.Stop()
	wantReady(t, start())
	if again := migrationsApplied(t, db.url); !maps.EqualFunc(first, again, time.Time.Equal) {
		t.Fatalf("a restart changed schema_migrations:\n%v\n%v", first, again)
	}
}

// TestDeployReplicasMigrateAtOnce (docs/deploy.md#3-the-store): two binaries
// started at the same moment on one fresh database both become ready, and
// each step is recorded once: one migrated under the advisory lock while the
// other waited.
func TestDeployReplicasMigrateAtOnce(t *testing.T) {
	dbURL := storetest.PostgresURL(t)
	bin := gatewaytest.MakeBinary(t)
	type replica struct {
		url    string
		cmd    *exec.Cmd
		exited <-chan struct{}
		logs   *syncWriter
	}
	var replicas []replica
	for range 2 {
		addr := gatewaytest.FreeAddr(t)
		cmd := exec.Command(bin, "serve")
		cmd.Env = append(gatewaytest.CleanEnv(), "AGENT_GATEWAY_LISTEN="+addr, "AGENT_GATEWAY_DATA_DIR="+t.TempDir(), "AGENT_GATEWAY_DATABASE_URL="+dbURL)
		logs := &syncWriter{}
		cmd.Stdout, cmd.Stderr = logs, logs
		replicas = append(replicas, replica{url: "http://" + addr, cmd: cmd, logs: logs})
	}
	// Both processes are started before either is waited for.
	for i := range replicas {
		r := &replicas[i]
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r.exited = gatewaytest.Exited(r.cmd)
		t.Cleanup(func() {
			gatewaytest.StopExited(r.cmd, r.exited, 30*time.Second, func() { _ = r.cmd.Process.Signal(os.Interrupt) }, nil)
			if t.Failed() {
				t.Logf("replica %s:\n%s", r.url, r.logs.String())
			}
		})
	}
	for _, r := range replicas {
		if err := waitReady(r.url, r.exited, 60*time.Second); err != nil {
			t.Fatalf("replica %s: %v\n%s", r.url, err, r.logs.String())
		}
	}
	if got := migrationsApplied(t, dbURL); len(got) != embeddedMigrations(t) {
		t.Fatalf("schema_migrations has %d steps, want %d", len(got), embeddedMigrations(t))
	}
}

// waitReady polls url's /readyz until it answers 200, the process exits or
// limit passes.
func waitReady(base string, exited <-chan struct{}, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("exited")
		default:
		}
		if resp, err := http.Get(base + "/readyz"); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("not ready in time")
}

// TestDeploySystemdUnit (docs/deploy.md#9-systemd): systemd-analyze verify
// accepts the shipped unit, with the binary `make build` made where the unit
// expects /usr/local/bin/agent-gateway, and has nothing to say about it (an
// unknown key would be a warning).
func TestDeploySystemdUnit(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("systemd-analyze is required in CI (apt-get install systemd)")
		}
		t.Skip("systemd-analyze not installed")
	}
	root, _ := gatewaytest.ModuleRoot()
	unit, err := os.ReadFile(filepath.Join(root, "configs", "systemd", "agent-gateway.service"))
	if err != nil {
		t.Fatal(err)
	}
	bin := gatewaytest.MakeBinary(t)
	f := filepath.Join(t.TempDir(), "agent-gateway.service")
	if err := os.WriteFile(f, []byte(replaceAll(t, string(unit), "ExecStart=/usr/local/bin/agent-gateway ", "ExecStart="+bin+" ")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", f).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestDeployKubernetes (docs/deploy.md#10-kubernetes): the kustomization
// renders (when kubectl is installed) to the four objects, and the
// Deployment's own command line, run with --config-test on the ConfigMap's
// configuration, the Secret's variables and the files where the Deployment
// mounts them, accepts it and hides the database password.
func TestDeployKubernetes(t *testing.T) {
	root, _ := gatewaytest.ModuleRoot()
	dir := filepath.Join(root, "configs", "kubernetes")
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		out, err := exec.Command(kubectl, "kustomize", dir).Output()
		if err != nil {
			t.Fatalf("kubectl kustomize: %v", err)
		}
		var kinds []string
		dec := yaml.NewDecoder(bytes.NewReader(out))
		for {
			var doc struct{ Kind string }
			if err := dec.Decode(&doc); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			kinds = append(kinds, doc.Kind)
		}
		slices.Sort(kinds)
		if !slices.Equal(kinds, []string{"ConfigMap", "Deployment", "HorizontalPodAutoscaler", "Service"}) {
			t.Fatalf("the kustomization renders %v", kinds)
		}
	} else {
		t.Log("kubectl not installed: the kustomization is not rendered (TestKubernetesManifests parses the files)")
	}

	read := func(name string, v any) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var cm struct{ Data map[string]string }
	read("configmap.yaml", &cm)
	var dep struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Args []string
						Env  []struct{ Name, Value string }
					}
				}
			}
		}
	}
	read("deployment.yaml", &dep)
	c := dep.Spec.Template.Spec.Containers[0]

	// The pod's file system, under a scratch directory.
	pod := t.TempDir()
	inPod := func(p string) string { return filepath.Join(pod, filepath.FromSlash(p)) }
	config := cm.Data["agent-gateway.yaml"]
	config = replaceAll(t, config, "/etc/agent-gateway/", inPod("/etc/agent-gateway")+string(filepath.Separator),
		"/var/lib/agent-gateway", inPod("/var/lib/agent-gateway"))
	files := map[string][]byte{
		"/etc/agent-gateway/config/agent-gateway.yaml": []byte(config),
		"/etc/agent-gateway/cursor/secret":             []byte(randomHex(t) + randomHex(t) + "\n"),
	}
	for p, b := range files {
		if err := os.MkdirAll(filepath.Dir(inPod(p)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(inPod(p), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	key, err := os.ReadFile(writeAppKey(t))
	if err != nil {
		t.Fatal(err)
	}
	// What the init container's `install -m 0600` leaves.
	if err := os.MkdirAll(inPod("/etc/agent-gateway/github"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inPod("/etc/agent-gateway/github/private-key.pem"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	args := slices.Clone(c.Args)
	for i, a := range args {
		if strings.HasPrefix(a, "/etc/agent-gateway/") {
			args[i] = inPod(a)
		}
	}
	const dbPassword = "k8s-secret-db-password"
	cmd := exec.Command(gatewaytest.MakeBinary(t), append(args, "--config-test")...)
	cmd.Env = append(gatewaytest.CleanEnv(),
		"AGENT_GATEWAY_DATABASE_URL=postgres://agent_gateway:"+dbPassword+"@db:5432/agent_gateway?sslmode=verify-full",
		"AGENT_GATEWAY_RATELIMIT_REDIS_URL=redis://redis:6379/0",
		"HEYAIRA_GITHUB_APP_ID=123456")
	for _, e := range c.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "configuration OK\n") {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	if strings.Contains(string(out), dbPassword) {
		t.Fatalf("--config-test printed the database password:\n%s", out)
	}
}
