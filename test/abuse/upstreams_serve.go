package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agent-gateway/agent-gateway/test/forgejoemu"
	"github.com/agent-gateway/agent-gateway/test/githubemu"
)

// The upstreams process: the emulated Forgejo and GitHub, seeded, in a
// process of their own, so the attackers' goroutines in the harness do
// not share a Go scheduler with them (real upstreams run on other
// machines). The harness starts it by running its own executable with
// upstreamsEnv set to a directory; it answers one upstreamsReady line on
// stdout, serves until its stdin closes (the harness closed it, exited or
// crashed) or it is sent SIGTERM or SIGINT, and answers the harness's
// questions on a control server of its own (controlRoutes).

// upstreamsEnv, set to a directory, makes the abuse executable (or its
// test binary) the upstreams process instead of the run.
const upstreamsEnv = "ABUSE_SERVE_UPSTREAMS"

// maxServedAnswer bounds the times one /served answer holds; the harness
// pages through the rest.
const maxServedAnswer = 10000

// upstreamsReady is the upstreams process's one line to the harness:
// where everything is and what was seeded.
type upstreamsReady struct {
	ForgejoURL string `json:"forgejo_url"`
	GitHubURL  string `json:"github_url"`
	// ControlURL is the control server's origin (controlRoutes).
	ControlURL string `json:"control_url"`
	// KeyFile is the GitHub App's private key (PEM, 0600), for the gateway.
	KeyFile string `json:"key_file"`
	// Demo is what forgejoemu.SeedDemo made, but for NonUTF8Path, which is
	// not UTF-8 and so cannot cross as a JSON string (nothing here reads
	// it).
	Demo forgejoemu.Demo `json:"demo"`
	// Docs is what githubemu.SeedDocs made, without the files' contents
	// (megabytes; nothing here reads them).
	Docs githubemu.Docs `json:"docs"`
}

// markedRequests counts the Forgejo emulator's recorded requests that
// carry an attacker's marks: what reached Forgejo for the attacker.
type markedRequests struct {
	// Bearer are the requests whose Authorization holds the bearer mark,
	// from Bearers distinct Authorization values.
	Bearer  int `json:"bearer"`
	Bearers int `json:"bearers"`
	// Query are the other requests whose query string holds the query mark.
	Query int `json:"query"`
}

// serveUpstreamsIfAsked runs the upstreams process and exits when
// upstreamsEnv is set; it returns otherwise. main and TestMain call it
// first.
func serveUpstreamsIfAsked() {
	dir := os.Getenv(upstreamsEnv)
	if dir == "" {
		return
	}
	if err := serveUpstreams(dir); err != nil {
		fmt.Fprintln(os.Stderr, "abuse upstreams:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func serveUpstreams(dir string) error {
	var times upstreamTimes
	forgejo, err := forgejoemu.Start(forgejoemu.Options{Dir: filepath.Join(dir, "forgejo"), Served: times.add})
	if err != nil {
		return err
	}
	defer forgejo.Close()
	demo, err := forgejo.SeedDemo()
	if err != nil {
		return err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	keyFile := filepath.Join(dir, "app.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return err
	}
	github, err := githubemu.Start(githubemu.Options{Dir: filepath.Join(dir, "github"), AppID: appID, AppKey: &key.PublicKey, Served: times.add})
	if err != nil {
		return err
	}
	defer github.Close()
	docs, err := github.SeedDocs("demo", "handbook", installationID)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	control := &http.Server{Handler: controlRoutes(&times, forgejo), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = control.Serve(ln) }()
	defer control.Close()

	ready := upstreamsReady{ForgejoURL: forgejo.URL(), GitHubURL: github.URL(), ControlURL: "http://" + ln.Addr().String(), KeyFile: keyFile, Demo: *demo, Docs: *docs}
	ready.Demo.NonUTF8Path, ready.Docs.Files = "", nil
	if err := json.NewEncoder(os.Stdout).Encode(ready); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	stdinClosed := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(stdinClosed) }()
	select {
	case <-stdinClosed:
	case <-ctx.Done():
	}
	return nil
}

// controlRoutes answer the harness's questions about the emulators:
//
//	GET  /served?from=N&limit=L  the emulators' own times (ns) of requests N… (at most maxServedAnswer), and the total
//	GET  /forgejo/marked?bearer=B&query=Q  markedRequests (an empty mark matches nothing)
//	POST /forgejo/reset  forgets the Forgejo emulator's recorded requests
func controlRoutes(times *upstreamTimes, forgejo *forgejoemu.Emulator) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /served", func(w http.ResponseWriter, r *http.Request) {
		from, err1 := strconv.Atoi(r.URL.Query().Get("from"))
		limit, err2 := strconv.Atoi(r.URL.Query().Get("limit"))
		if err := errors.Join(err1, err2); err != nil || from < 0 || limit < 0 {
			http.Error(w, "from and limit want integers ≥ 0", http.StatusBadRequest)
			return
		}
		total, page := times.page(from, min(limit, maxServedAnswer))
		writeJSON(w, servedAnswer{Total: total, Nanoseconds: page})
	})
	mux.HandleFunc("GET /forgejo/marked", func(w http.ResponseWriter, r *http.Request) {
		bearer, query := r.URL.Query().Get("bearer"), r.URL.Query().Get("query")
		var m markedRequests
		bearers := map[string]bool{}
		for _, req := range forgejo.Requests() {
			a := req.Header.Get("Authorization")
			switch {
			case bearer != "" && strings.Contains(a, bearer):
				m.Bearer++
				bearers[a] = true
			case query != "" && strings.Contains(req.RawQuery, query):
				m.Query++
			}
		}
		m.Bearers = len(bearers)
		writeJSON(w, m)
	})
	mux.HandleFunc("POST /forgejo/reset", func(w http.ResponseWriter, _ *http.Request) {
		forgejo.ResetRequests()
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

// servedAnswer is one page of the emulators' own times.
type servedAnswer struct {
	Total       int     `json:"total"`
	Nanoseconds []int64 `json:"ns"`
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// upstreamTimes collects the emulators' own time for each request they
// serve (their Served hook), in order of completion.
type upstreamTimes struct {
	mu sync.Mutex
	d  []time.Duration
}

func (u *upstreamTimes) add(_ *http.Request, d time.Duration) {
	u.mu.Lock()
	u.d = append(u.d, d)
	u.mu.Unlock()
}

// page is how many times are recorded, and up to limit of them from the
// from-th on, in nanoseconds.
func (u *upstreamTimes) page(from, limit int) (total int, ns []int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	from = min(from, len(u.d))
	ns = make([]int64, 0, min(limit, len(u.d)-from))
	for _, d := range u.d[from:min(len(u.d), from+limit)] {
		ns = append(ns, int64(d))
	}
	return len(u.d), ns
}
