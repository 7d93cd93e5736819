package githubemu

import (
	"crypto/rsa"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agent-gateway/agent-gateway/test/emurecord"
)

// Options configures an emulator.
type Options struct {
	// Dir is where the repositories live. Empty means a fresh temporary
	// directory, removed by Close; a given directory is left in place.
	Dir string
	// AppID and AppKey are the GitHub App whose JWTs the token route accepts.
	AppID  int64
	AppKey *rsa.PublicKey
	// TokenTTL is the lifetime of minted installation tokens; default 1 hour,
	// GitHub's.
	TokenTTL time.Duration
	// TokenDelay is slept before each token is minted, to widen races in
	// tests of concurrent minting.
	TokenDelay time.Duration
	// Logf, when set, receives one line per request.
	Logf func(format string, args ...any)
	// Served, when set, is told each request and how long it took to
	// serve (emurecord.Timed).
	Served func(r *http.Request, d time.Duration)
	// Now is the clock of JWT checks and token expiry; default time.Now.
	Now func() time.Time
}

// Emulator is a running GitHub API emulator on a loopback port.
type Emulator struct {
	opts   Options
	dir    string
	ownDir bool
	home   string
	origin string
	ln     net.Listener
	srv    *http.Server
	served chan struct{}
	done   chan struct{} // closed by Close: ends hijacked fault connections

	closeOnce sync.Once
	closeErr  error

	objects objectCache

	mu            sync.Mutex
	installations map[int64]map[string]bool // installation → "owner/repo" (lowercase)
	tokens        map[string]issuedToken
	faults        map[Route]*faultEntry
	requests      emurecord.Ring[Request]
	contentsCount int
	tokenMints    int
	mints         []Mint
	tokenRefusals int
	holds         []*Hold
	trickling     int
	widen         bool
}

// Request is one request the emulator received.
type Request struct {
	Method  string
	Path    string // unescaped
	RawPath string // as sent (escaped)
	Query   string
	Header  http.Header
	Route   Route
}

// Start creates the emulator's directory and serves HTTP/1.1 on 127.0.0.1
// at a free port.
func Start(opts Options) (*Emulator, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("githubemu: git is required: %w", err)
	}
	if opts.TokenTTL <= 0 {
		opts.TokenTTL = time.Hour
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	e := &Emulator{
		opts: opts, served: make(chan struct{}), done: make(chan struct{}),
		installations: map[int64]map[string]bool{}, tokens: map[string]issuedToken{},
		faults: map[Route]*faultEntry{},
	}
	if opts.Dir == "" {
		dir, err := os.MkdirTemp("", "githubemu-")
		if err != nil {
			return nil, fmt.Errorf("githubemu: %w", err)
		}
		e.dir, e.ownDir = dir, true
	} else {
		if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("githubemu: %w", err)
		}
		e.dir = opts.Dir
	}
	e.home = filepath.Join(e.dir, ".home")
	if err := os.MkdirAll(e.home, 0o755); err != nil {
		return nil, e.abort(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, e.abort(err)
	}
	e.ln = ln
	e.origin = "http://" + ln.Addr().String()
	e.srv = &http.Server{
		Handler:           e.handler(),
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          log.New(logfWriter{e.logf}, "", 0),
	}
	go func() {
		defer close(e.served)
		if err := e.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.logf("githubemu: serve: %v", err)
		}
	}()
	return e, nil
}

func (e *Emulator) abort(err error) error {
	if e.ownDir {
		_ = os.RemoveAll(e.dir)
	}
	return fmt.Errorf("githubemu: %w", err)
}

// URL is the emulator's origin, "http://127.0.0.1:<port>": the gateway's
// github.api_origin.
func (e *Emulator) URL() string { return e.origin }

// Close stops the server and removes the directory if Start created it.
func (e *Emulator) Close() error {
	e.closeOnce.Do(func() {
		e.releaseHolds()
		close(e.done)
		err := e.srv.Close()
		<-e.served
		if e.ownDir {
			if rerr := os.RemoveAll(e.dir); rerr != nil && err == nil {
				err = rerr
			}
		}
		e.closeErr = err
	})
	return e.closeErr
}

func (e *Emulator) logf(format string, args ...any) {
	if e.opts.Logf != nil {
		e.opts.Logf(format, args...)
	}
}

type logfWriter struct{ logf func(string, ...any) }

func (w logfWriter) Write(p []byte) (int, error) {
	w.logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Route names a route group, for faults and the request log.
type Route string

// The routes.
const (
	RouteToken    Route = "token"
	RouteContents Route = "contents"
	RouteBranch   Route = "branch"
	RouteOther    Route = "other"
)

// routes is the one route table of the emulated API.
func (e *Emulator) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /app/installations/{id}/access_tokens", e.serveToken)
	mux.HandleFunc("GET /repos/{owner}/{repo}/contents/{path...}", e.serveContents)
	mux.HandleFunc("GET /repos/{owner}/{repo}/branches/{branch...}", e.serveBranch)
	return mux
}

// Pattern is the route pattern the emulator serves method and path with,
// without its method, or "" when it has none: a test checks that it
// serves every route the gateway's GitHub client requests.
func (e *Emulator) Pattern(method, path string) string {
	req, err := http.NewRequest(method, path, nil)
	if err != nil {
		return ""
	}
	_, pattern := e.routes().Handler(req)
	_, p, _ := strings.Cut(pattern, " ")
	return p
}

// handler routes requests: the record's own route (emurecord.Path)
// answers first, unrecorded; every other request is timed for
// Options.Served, recorded, then the
// route's fault (if any) or the route itself answers.
func (e *Emulator) handler() http.Handler {
	mux := e.routes()
	return emurecord.Serve(emurecord.Timed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := routeOf(r)
		e.record(r, route)
		e.logf("githubemu: %s %s", r.Method, r.URL.EscapedPath())
		e.waitHold(r)
		if f, ok := e.takeFault(route); ok {
			e.serveFault(w, r, f, mux)
			return
		}
		if route == RouteOther {
			writeMessage(w, http.StatusNotFound, "Not Found")
			return
		}
		mux.ServeHTTP(w, r)
	}), e.opts.Served), e.RecordStats)
}

func routeOf(r *http.Request) Route {
	p := r.URL.Path
	switch {
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/app/installations/") && strings.HasSuffix(p, "/access_tokens"):
		return RouteToken
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/repos/") && strings.Contains(p, "/contents/"):
		return RouteContents
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/repos/") && strings.Contains(p, "/branches/"):
		return RouteBranch
	}
	return RouteOther
}

// record adds r to the request record, an emurecord.Ring: the demo runs
// this emulator for as long as a person leaves it up. Tests read far fewer
// requests than it keeps; the counters count every request.
func (e *Emulator) record(r *http.Request, route Route) {
	rec := Request{
		Method: r.Method, Path: r.URL.Path, RawPath: r.URL.EscapedPath(), Query: r.URL.RawQuery,
		Header: r.Header.Clone(), Route: route,
	}
	cost := emurecord.Cost{Head: emurecord.HeadBytes([]string{rec.Method, rec.Path, rec.RawPath, rec.Query}, rec.Header)}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.requests.Add(rec, cost)
	if route == RouteContents {
		e.contentsCount++
	}
}

// Requests returns the requests received since the last ResetCounters,
// oldest first: every one, up to the record's bounds (emurecord.Ring: the
// newest emurecord.MaxRequests, within its bytes of heads).
func (e *Emulator) Requests() []Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.requests.All()
}

// RecordStats tells what the request record holds, as emurecord.Path
// answers it.
func (e *Emulator) RecordStats() emurecord.Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.requests.Stats(func(r Request) string {
		if r.Query == "" {
			return r.Method + " " + r.RawPath
		}
		return r.Method + " " + r.RawPath + "?" + r.Query
	})
}

// ContentsRequests counts requests to the Contents route (faulted or not).
func (e *Emulator) ContentsRequests() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.contentsCount
}

// TokenMints counts installation tokens minted (201 answers).
func (e *Emulator) TokenMints() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.tokenMints
}

// TokenRefusals counts token requests refused for their JWT.
func (e *Emulator) TokenRefusals() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.tokenRefusals
}

// ResetCounters clears the request log and every counter; minted tokens
// stay valid.
func (e *Emulator) ResetCounters() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.requests.Reset()
	e.contentsCount, e.tokenMints, e.tokenRefusals, e.mints = 0, 0, 0, nil
}
