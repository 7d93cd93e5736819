package e2e

import (
	"bytes"
	"errors"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/store/storetest"
	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// replicaPair is two gateway processes sharing one PostgreSQL database, one
// Redis, one cursor secret and the same emulated upstreams, as replicas
// behind a load balancer.
type replicaPair struct {
	fj   *forgejoStack // Forgejo emulator and demo data (its own gateway unused)
	docs *docStack     // GitHub emulator, documents data and replica A
	a, b *gatewaytest.Process
}

func startReplicas(t *testing.T, extra map[string]string) *replicaPair {
	t.Helper()
	requireRedis(t)
	emu, demo := startDemoEmulator(t)
	env := map[string]string{
		"AGENT_GATEWAY_FORGEJO_ORIGIN":      emu.URL(),
		"AGENT_GATEWAY_RATELIMIT_REDIS_URL": "redis://127.0.0.1:6379/0",
	}
	for k, v := range extra {
		env[k] = v
	}
	docs := newDocStack(t, storetest.PostgresURL(t), stackOptions{env: env})
	// Replica B: the same store, data directory (so the same generated
	// cursor secret), App key and upstreams.
	envB := map[string]string{
		"AGENT_GATEWAY_DATABASE_URL":          docs.dbURL,
		"AGENT_GATEWAY_DATA_DIR":              docs.dataDir,
		"AGENT_GATEWAY_GITHUB_API_ORIGIN":     docs.emu.URL(),
		"HEYAIRA_GITHUB_APP_ID":               strconv.Itoa(appID),
		"HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE": docs.keyFile,
	}
	for k, v := range env {
		envB[k] = v
	}
	b := gatewaytest.Start(t, gatewaytest.Options{Env: envB})
	return &replicaPair{fj: &forgejoStack{emu: emu, demo: demo}, docs: docs, a: docs.gw, b: b}
}

// TestReplicasContinueEachOther: a diff continuation and a document
// continuation started on replica A finish on replica B.
func TestReplicasContinueEachOther(t *testing.T) {
	rp := startReplicas(t, nil)
	d := rp.fj.demo

	// Diff: page 1 on A, every further page on B.
	p := addPullWithFiles(t, rp.fj.emu, d.Owner, d.PrivateRepo, "topic/replicas", mixedFiles())
	want := gitDiff(t, rp.fj.emu, d.Owner, d.PrivateRepo, p)
	sa := rp.a.Connect(t, "/mcp/forgejo", d.ReaderToken)
	sb := rp.b.Connect(t, "/mcp/forgejo", d.ReaderToken)
	args := map[string]any{"owner": d.Owner, "repo": d.PrivateRepo, "index": p.Index()}
	var got bytes.Buffer
	session, pages := sa, 0
	for {
		page, out := callDiff(t, session, args)
		if page == nil {
			t.Fatalf("page %d: %v", pages, out)
		}
		pages++
		got.Write(checkPage(t, page))
		if page.EOF {
			break
		}
		args["cursor"] = page.NextCursor
		session = sb
	}
	if pages < 3 || !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("diff across replicas: %d pages, %d bytes, want %d bytes equal to git diff", pages, got.Len(), len(want))
	}

	// Document: the first fragment on A, the rest on B.
	doc := rp.docs.docs.Files[rp.docs.docs.Runtime]
	src := rp.docs.sources[rp.docs.docs.Runtime]
	ca := rp.a.Connect(t, "/mcp/documents", rp.docs.tokenA)
	cb := rp.b.Connect(t, "/mcp/documents", rp.docs.tokenA)
	out, isErr := callTool(t, ca, "git_document_get", map[string]any{"source_id": src})
	if isErr || out["next_cursor"] == nil {
		t.Fatalf("first fragment on A: %v", out)
	}
	content := []byte(out["content"].(string))
	for cursor := out["next_cursor"]; cursor != nil; cursor = out["next_cursor"] {
		out, isErr = callTool(t, cb, "git_document_get", map[string]any{"source_id": src, "cursor": cursor})
		if isErr {
			t.Fatalf("continuation on B: %v", out)
		}
		content = append(content, out["content"].(string)...)
	}
	if !bytes.Equal(content, doc) {
		t.Fatalf("document across replicas: %d bytes, want %d", len(content), len(doc))
	}
}

// TestReplicasShareBudgets: a documents caller's budget spent across A and
// B is refused on B.
func TestReplicasShareBudgets(t *testing.T) {
	rp := startReplicas(t, map[string]string{"AGENT_GATEWAY_RATELIMIT_READ_PER_MINUTE": "40"})
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	auth := map[string]string{"Authorization": "Bearer " + rp.docs.tokenA}
	for i := 0; i < 40; i++ {
		gw := rp.a
		if i%2 == 1 {
			gw = rp.b
		}
		if resp, out := postRPC(t, gw.URL+"/mcp/documents", list, auth); resp.StatusCode != 200 {
			t.Fatalf("request %d within the budget: %d %s", i, resp.StatusCode, out)
		}
	}
	if resp, _ := postRPC(t, rp.b.URL+"/mcp/documents", list, auth); resp.StatusCode != 429 {
		t.Fatalf("B accepted a request beyond the budget spent across A and B: %d", resp.StatusCode)
	}
}

// TestReplicaStopUnderLoad: under load on both replicas, A is stopped:
// every request A accepted is answered, and B loses none.
func TestReplicaStopUnderLoad(t *testing.T) {
	rp := startReplicas(t, map[string]string{"AGENT_GATEWAY_RATELIMIT_READ_PER_MINUTE": "1000000"})

	// Load on both replicas, each worker with its own Forgejo bearer (so its
	// own budget); stop A in the middle.
	d := rp.fj.demo
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_repository","arguments":{"owner":"` + d.Owner + `","repo":"` + d.PublicRepo + `"}}}`
	var acceptedA, answeredA, okB atomic.Int64
	var failures []string
	var mu sync.Mutex
	fail := func(s string) { mu.Lock(); failures = append(failures, s); mu.Unlock() }
	stop := make(chan struct{})
	var wg sync.WaitGroup
	worker := func(url, bearer string, onA bool) {
		defer wg.Done()
		client := &http.Client{Timeout: 30 * time.Second}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			req, _ := http.NewRequest(http.MethodPost, url+"/mcp/forgejo", strings.NewReader(call))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+bearer)
			resp, err := client.Do(req)
			if err != nil {
				if onA {
					// Refused at connect after A closed its listener: never
					// accepted, a load balancer sends it elsewhere.
					continue
				}
				fail("B: " + err.Error())
				continue
			}
			var body bytes.Buffer
			_, rerr := body.ReadFrom(resp.Body)
			resp.Body.Close()
			ok := rerr == nil && resp.StatusCode == 200 && !strings.Contains(body.String(), `"isError":true`)
			if onA {
				acceptedA.Add(1)
				if !ok {
					fail("A accepted a request and did not answer it: " + resp.Status)
					continue
				}
				answeredA.Add(1)
			} else {
				if !ok {
					fail("B: " + resp.Status + " " + body.String())
					continue
				}
				okB.Add(1)
			}
		}
	}
	for w := 0; w < 3; w++ {
		wg.Add(2)
		go worker(rp.a.URL, "load-a-"+randomHex(t), true)
		go worker(rp.b.URL, "load-b-"+randomHex(t), false)
	}
	time.Sleep(1500 * time.Millisecond)
	if err := rp.a.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err, exited := rp.a.Wait(20 * time.Second); !exited || err != nil {
		t.Fatalf("replica A: exited=%v err=%v", exited, err)
	}
	time.Sleep(1 * time.Second)
	close(stop)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d failures, first: %s", len(failures), failures[0])
	}
	if acceptedA.Load() == 0 || okB.Load() == 0 || answeredA.Load() != acceptedA.Load() {
		t.Fatalf("load did not run: A accepted %d answered %d, B ok %d", acceptedA.Load(), answeredA.Load(), okB.Load())
	}
	t.Logf("A accepted and answered %d, B answered %d", answeredA.Load(), okB.Load())
}

// TestShutdownGraceBound: a call that outlives shutdown_grace does not hold
// the process: it exits within the grace period (plus process teardown).
func TestShutdownGraceBound(t *testing.T) {
	st := startForgejoStack(t, map[string]string{"AGENT_GATEWAY_SHUTDOWN_GRACE": "1s", "AGENT_GATEWAY_FORGEJO_IO_TIMEOUT": "30s"})
	st.emu.SetFault("/api/v1/repos/"+st.demo.Owner, forgejoemu.Fault{Kind: forgejoemu.FaultSlow, Delay: 20 * time.Second})
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_repository","arguments":{"owner":"` + st.demo.Owner + `","repo":"` + st.demo.PublicRepo + `"}}}`
	go func() {
		req, _ := http.NewRequest(http.MethodPost, st.gw.URL+"/mcp/forgejo", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	if err := st.gw.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err, exited := st.gw.Wait(10 * time.Second)
	elapsed := time.Since(start)
	if !exited || elapsed > 4*time.Second {
		t.Fatalf("exit took %s (exited=%v), want about the 1 s grace", elapsed, exited)
	}
	var ee *exec.ExitError
	if err == nil || !errors.As(err, &ee) || !strings.Contains(st.gw.Logs(), "graceful shutdown did not finish") {
		t.Fatalf("an unfinished drain must be reported: err=%v\n%s", err, st.gw.Logs())
	}
}
