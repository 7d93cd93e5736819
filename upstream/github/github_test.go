package github

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agent-gateway/agent-gateway/test/githubemu"
	"github.com/agent-gateway/agent-gateway/upstream"
	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

const testAppID = 31337

var (
	keyOnce sync.Once
	testKey *rsa.PrivateKey
)

func appKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	keyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		testKey = k
	})
	return testKey
}

type stack struct {
	emu    *githubemu.Emulator
	docs   *githubemu.Docs
	client *Client
	tokens *Installations
}

func newStack(t *testing.T, o githubemu.Options, withApp bool) *stack {
	t.Helper()
	o.Dir, o.AppID, o.AppKey = t.TempDir(), testAppID, &appKey(t).PublicKey
	emu, err := githubemu.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close() })
	docs, err := emu.SeedDocs("octo", "docs", 77)
	if err != nil {
		t.Fatal(err)
	}
	origin, err := upstream.ParseOrigin(emu.URL())
	if err != nil {
		t.Fatal(err)
	}
	up := upstream.New(upstream.Config{Name: "github", Origin: origin, IOTimeout: 5 * time.Second})
	var app *App
	if withApp {
		if app, err = NewApp(testAppID, appKey(t)); err != nil {
			t.Fatal(err)
		}
	}
	tokens := NewInstallations(up, app)
	return &stack{emu: emu, docs: docs, client: NewClient(up, tokens), tokens: tokens}
}

func (s *stack) req(path string) FileRequest {
	return FileRequest{InstallationID: s.docs.InstallationID, Owner: "octo", Repo: "docs", Path: path, Commit: s.docs.Commit}
}

func codeOf(t *testing.T, err error) toolerr.Code {
	t.Helper()
	var te *toolerr.Error
	if !errors.As(err, &te) {
		t.Fatalf("error %v is not a *toolerr.Error", err)
	}
	return te.Code
}

func TestAppJWTClaims(t *testing.T) {
	app, err := NewApp(testAppID, appKey(t))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	app.now = func() time.Time { return now }
	s, err := app.JWT()
	if err != nil {
		t.Fatal(err)
	}
	var c jwt.RegisteredClaims
	tok, err := jwt.ParseWithClaims(s, &c, func(*jwt.Token) (any, error) { return &appKey(t).PublicKey, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithTimeFunc(func() time.Time { return now }))
	if err != nil || !tok.Valid {
		t.Fatalf("parse: %v", err)
	}
	if c.Issuer != strconv.Itoa(testAppID) || !c.IssuedAt.Time.Equal(now.Add(-60*time.Second)) ||
		c.ExpiresAt.Time.After(now.Add(10*time.Minute)) || !c.ExpiresAt.Time.After(now) {
		t.Fatalf("claims %+v", c)
	}
}

func TestLoadApp(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(appKey(t))
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	cases := []struct {
		name string
		file string
		ok   bool
	}{
		{"pkcs1", write("a.pem", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(appKey(t))})), true},
		{"pkcs8", write("b.pem", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})), true},
		{"garbage", write("c.pem", []byte("not a key SECRET-MATERIAL")), false},
		{"1024-bit", write("d.pem", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(small)})), false},
		{"missing", filepath.Join(dir, "none.pem"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadApp(testAppID, c.file)
			if (err == nil) != c.ok {
				t.Fatalf("err = %v", err)
			}
			if err != nil && strings.Contains(err.Error(), "SECRET-MATERIAL") {
				t.Fatalf("the error quotes the file: %v", err)
			}
		})
	}
	if _, err := NewApp(0, appKey(t)); err == nil {
		t.Fatal("App ID 0 accepted")
	}
}

func TestGetFile(t *testing.T) {
	s := newStack(t, githubemu.Options{}, true)
	d := s.docs
	ctx := context.Background()
	for _, p := range []string{d.Runtime, d.Readme, d.Odd, d.Empty, d.MaxSize, d.NotUTF8} {
		f, err := s.client.GetFile(ctx, s.req(p))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if string(f.Content) != string(d.Files[p]) || f.Path != p {
			t.Fatalf("%s: content differs", p)
		}
	}
	refusals := []struct {
		name string
		path string
		code toolerr.Code
	}{
		{"directory", d.Dir, toolerr.NotRegularFile},
		{"symlink to a file", d.LinkToFile, toolerr.NotRegularFile},
		{"symlink outside", d.LinkOutside, toolerr.NotRegularFile},
		{"submodule", d.Submodule, toolerr.NotRegularFile},
		{"1 MiB + 1", d.TooLarge, toolerr.FileTooLarge},
		{"missing", d.MissingUnicode, toolerr.ProviderNotFound},
	}
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.client.GetFile(ctx, s.req(c.path))
			if got := codeOf(t, err); got != c.code {
				t.Fatalf("code %s, want %s (%v)", got, c.code, err)
			}
		})
	}
	// What was sent: escaped segments, the pinned commit, the object media
	// type, the API version, identity encoding and an installation token.
	for _, r := range s.emu.Requests() {
		if r.Route != githubemu.RouteContents {
			continue
		}
		if r.Header.Get("Accept") != ObjectMediaType || r.Header.Get("X-GitHub-Api-Version") != APIVersion ||
			r.Header.Get("Accept-Encoding") != "identity" || !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ghs_") ||
			r.Query != "ref="+d.Commit {
			t.Fatalf("request %s: headers %v query %s", r.RawPath, r.Header, r.Query)
		}
	}
	var odd bool
	for _, r := range s.emu.Requests() {
		if r.Path == "/repos/octo/docs/contents/"+d.Odd {
			odd = true
			if strings.ContainsAny(r.RawPath, " #?") {
				t.Fatalf("odd path sent unescaped: %s", r.RawPath)
			}
		}
	}
	if !odd {
		t.Fatal("the odd path was not requested")
	}
	if s.emu.TokenMints() != 1 {
		t.Fatalf("%d mints for one installation, want 1", s.emu.TokenMints())
	}
}

// TestGetFileSaysWhatHappened: a refusal's message names what went wrong,
// not a neighbouring failure: an answer that breaks off
// after its head is not "could not be reached", and encoding "none" on a
// small file is not "larger than 1048576 bytes".
func TestGetFileSaysWhatHappened(t *testing.T) {
	s := newStack(t, githubemu.Options{}, true)
	d := s.docs
	readme := d.Files[d.Readme]
	none := func(size int) []byte {
		return fmt.Appendf(nil, `{"type":"file","path":%q,"sha":%q,"size":%d,"encoding":"none","content":""}`, d.Readme, BlobSHA(readme), size)
	}
	cases := []struct {
		name      string
		fault     githubemu.Fault
		code      toolerr.Code
		says, not string
	}{
		{"body shorter than Content-Length", githubemu.Fault{Kind: githubemu.FaultFalseLength, DeclaredLength: 1_400_000, Size: 5000},
			toolerr.ProviderUnavailable, "broke off", "could not be reached"},
		{"reset mid-body", githubemu.Fault{Kind: githubemu.FaultReset}, toolerr.ProviderUnavailable, "broke off", "could not be reached"},
		{"encoding none on 1,080 bytes", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 200, Body: none(1080)},
			toolerr.ProviderMalformed, `no content (encoding "none") for a file of 1080 bytes`, "larger than"},
		{"encoding none on 1 MiB + 1", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 200, Body: none(MaxFileBytes + 1)},
			toolerr.FileTooLarge, "larger than 1048576 bytes", "encoding"},
		{"encoding none on 1,040,000 bytes", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 200, Body: none(1_040_000)},
			toolerr.FileTooLarge, "does not send the content of a file of 1040000 bytes", "larger than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s.emu.SetFault(githubemu.RouteContents, c.fault)
			defer s.emu.ClearFaults()
			_, err := s.client.GetFile(context.Background(), s.req(d.Readme))
			te := toolerr.As(err)
			if te.Code != c.code || !strings.Contains(te.Message, c.says) || strings.Contains(te.Message, c.not) {
				t.Fatalf("%s: %q, want %s saying %q", te.Code, te.Message, c.code, c.says)
			}
		})
	}
}

func TestGetFileFaults(t *testing.T) {
	s := newStack(t, githubemu.Options{}, true)
	d := s.docs
	file := func(path, sha string, size int, encoding, content string) []byte {
		return fmt.Appendf(nil, `{"type":"file","path":%q,"sha":%q,"size":%d,"encoding":%q,"content":%q}`, path, sha, size, encoding, content)
	}
	readme := d.Files[d.Readme]
	good := githubemu.Base64Lines(readme)
	sha := BlobSHA(readme)
	reset := strconv.FormatInt(time.Now().Add(42*time.Second).Unix(), 10)
	cases := []struct {
		name  string
		fault githubemu.Fault
		code  toolerr.Code
		retry int64
	}{
		{"redirect", githubemu.Fault{Kind: githubemu.FaultRedirect, Location: "https://evil.example/x"}, toolerr.RedirectRefused, 0},
		{"1,500,001 bytes with Content-Length", githubemu.Fault{Kind: githubemu.FaultHugeBody}, toolerr.ResponseTooLarge, 0},
		{"1,500,001 bytes chunked", githubemu.Fault{Kind: githubemu.FaultHugeBodyChunked}, toolerr.ResponseTooLarge, 0},
		{"false small Content-Length", githubemu.Fault{Kind: githubemu.FaultFalseLength, DeclaredLength: 1000}, toolerr.ProviderMalformed, 0},
		{"false large Content-Length", githubemu.Fault{Kind: githubemu.FaultFalseLength, DeclaredLength: 1_600_000}, toolerr.ResponseTooLarge, 0},
		{"body shorter than Content-Length", githubemu.Fault{Kind: githubemu.FaultFalseLength, DeclaredLength: 1_400_000, Size: 5000}, toolerr.ProviderUnavailable, 0},
		{"malformed JSON", githubemu.Fault{Kind: githubemu.FaultMalformedJSON}, toolerr.ProviderMalformed, 0},
		{"gzip", githubemu.Fault{Kind: githubemu.FaultGzip}, toolerr.ProviderMalformed, 0},
		{"404", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 404}, toolerr.ProviderNotFound, 0},
		{"403", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 403}, toolerr.ProviderForbidden, 0},
		{"403 too_large", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 403, Body: []byte(`{"message":"too big","errors":[{"code":"too_large"}]}`)}, toolerr.FileTooLarge, 0},
		{"403 primary rate limit", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 403, Header: http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {reset}}}, toolerr.ProviderRateLimited, 42},
		{"403 secondary rate limit", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 403, Header: http.Header{"Retry-After": {"30"}}}, toolerr.ProviderRateLimited, 30},
		{"429", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 429, Header: http.Header{"Retry-After": {"17"}}}, toolerr.ProviderRateLimited, 17},
		{"500", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 500}, toolerr.ProviderUnavailable, 0},
		{"502", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 502}, toolerr.ProviderUnavailable, 0},
		{"503", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 503}, toolerr.ProviderUnavailable, 0},
		{"HTML", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte("<html>")}, toolerr.ProviderMalformed, 0},
		{"array (directory)", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 200, Body: []byte(`[{"type":"file"}]`)}, toolerr.NotRegularFile, 0},
		{"size mismatch", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 200, Body: file(d.Readme, sha, len(readme)+1, "base64", good)}, toolerr.ProviderMalformed, 0},
		{"blob ID mismatch", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 200, Body: file(d.Readme, strings.Repeat("0", 40), len(readme), "base64", good)}, toolerr.ProviderMalformed, 0},
		{"bad base64", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 200, Body: file(d.Readme, sha, len(readme), "base64", "@@@@")}, toolerr.ProviderMalformed, 0},
		{"encoding none under 1 MiB", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 200, Body: file(d.Readme, sha, 10, "none", "")}, toolerr.ProviderMalformed, 0},
		{"encoding none over 1 MiB", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 200, Body: file(d.Readme, sha, MaxFileBytes+1, "none", "")}, toolerr.FileTooLarge, 0},
		{"unknown encoding", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 200, Body: file(d.Readme, sha, len(readme), "utf-8", string(readme))}, toolerr.ProviderMalformed, 0},
		{"other path", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 200, Body: file("other.md", sha, len(readme), "base64", good)}, toolerr.NotRegularFile, 0},
		{"no type", githubemu.Fault{Kind: githubemu.FaultStatus, Status: 200, Body: []byte(`{"path":"README.md"}`)}, toolerr.ProviderMalformed, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s.emu.SetFault(githubemu.RouteContents, c.fault)
			defer s.emu.ClearFaults()
			s.emu.ResetCounters()
			_, err := s.client.GetFile(context.Background(), s.req(d.Readme))
			if got := codeOf(t, err); got != c.code {
				t.Fatalf("code %s, want %s (%v)", got, c.code, err)
			}
			var te *toolerr.Error
			errors.As(err, &te)
			if c.retry != 0 {
				if got := te.Details["retry_after_seconds"]; got != c.retry && got != c.retry-1 {
					t.Fatalf("retry_after_seconds = %v, want %d", got, c.retry)
				}
			}
			if strings.Contains(te.Message, "evil") || strings.Contains(te.Message, "too big") {
				t.Fatalf("upstream text in the message: %s", te.Message)
			}
			for _, r := range s.emu.Requests() {
				if strings.Contains(r.Path, "__redirected") {
					t.Fatal("the redirect was followed")
				}
			}
			if n := s.emu.ContentsRequests(); n != 1 {
				t.Fatalf("%d contents requests, want 1", n)
			}
		})
	}
}

func TestUnconfigured(t *testing.T) {
	s := newStack(t, githubemu.Options{}, false)
	_, err := s.client.GetFile(context.Background(), s.req(s.docs.Readme))
	if codeOf(t, err) != toolerr.ProviderUnconfigured {
		t.Fatalf("no App: %v", err)
	}
	if len(s.emu.Requests()) != 0 {
		t.Fatal("an unconfigured client sent a request")
	}
	s = newStack(t, githubemu.Options{}, true)
	r := s.req(s.docs.Readme)
	r.InstallationID = 0
	if _, err := s.client.GetFile(context.Background(), r); codeOf(t, err) != toolerr.ProviderUnconfigured {
		t.Fatalf("no installation: %v", err)
	}
	r.InstallationID = 999 // unknown to GitHub
	if _, err := s.client.GetFile(context.Background(), r); codeOf(t, err) != toolerr.ProviderUnconfigured {
		t.Fatalf("unknown installation: %v", err)
	}
}

func TestTokenCache(t *testing.T) {
	// A read-only injected credential
	// (docs/architecture.md#github-app-and-installation-tokens): each mint asks
	// for contents read on the one repository read, and the cache keeps one
	// token per installation and repository.
	t.Run("narrowed and cached per installation and repository", func(t *testing.T) {
		s := newStack(t, githubemu.Options{TokenTTL: time.Hour}, true)
		if err := s.emu.CreateRepository("octo", "other"); err != nil {
			t.Fatal(err)
		}
		commit, err := s.emu.Commit("octo", "other", "main", "add", []githubemu.Entry{{Path: "README.md", Content: []byte("other\n")}})
		if err != nil {
			t.Fatal(err)
		}
		s.emu.AddInstallation(77, "octo/other")
		other := FileRequest{InstallationID: 77, Owner: "octo", Repo: "other", Path: "README.md", Commit: commit}
		for i := 0; i < 3; i++ {
			if _, err := s.client.GetFile(context.Background(), s.req(s.docs.Readme)); err != nil {
				t.Fatal(err)
			}
			if f, err := s.client.GetFile(context.Background(), other); err != nil || string(f.Content) != "other\n" {
				t.Fatalf("other: %v", err)
			}
		}
		mints := s.emu.Mints()
		if len(mints) != 2 {
			t.Fatalf("%d mints for two repositories of one installation, want 2", len(mints))
		}
		for i, repo := range []string{"docs", "other"} {
			want := `{"permissions":{"contents":"read"},"repositories":["` + repo + `"]}`
			if mints[i].Installation != 77 || mints[i].Body != want {
				t.Fatalf("mint %d: %+v, want body %s", i, mints[i], want)
			}
		}
		// Each token reads only its own repository.
		docsTok, _ := s.tokens.Token(context.Background(), 77, "docs")
		if _, status, err := s.client.getFile(context.Background(), other, docsTok); status != 404 || err == nil {
			t.Fatalf("the docs token read octo/other: %d %v", status, err)
		}
	})
	t.Run("replaced in the background near expiry", func(t *testing.T) {
		s := newStack(t, githubemu.Options{TokenTTL: time.Hour, TokenDelay: 200 * time.Millisecond}, true)
		for i := 0; i < 5; i++ {
			if _, err := s.client.GetFile(context.Background(), s.req(s.docs.Readme)); err != nil {
				t.Fatal(err)
			}
		}
		if n := s.emu.TokenMints(); n != 1 {
			t.Fatalf("%d mints, want 1", n)
		}
		old, _ := s.tokens.Token(context.Background(), 77, "docs")
		// Move the cache's clock to 4 minutes before expiry: the live
		// token is still handed out, and one mint replaces it meanwhile.
		s.tokens.now = func() time.Time { return time.Now().Add(56 * time.Minute) }
		for i := 0; i < 3; i++ {
			if tok, err := s.tokens.Token(context.Background(), 77, "docs"); err != nil || tok != old {
				t.Fatalf("near expiry: %v, want the live token (no wait on the mint)", err)
			}
		}
		waitFlights(t, s.tokens)
		if n := s.emu.TokenMints(); n != 2 {
			t.Fatalf("%d mints after nearing expiry, want 2", n)
		}
		if tok, _ := s.tokens.Token(context.Background(), 77, "docs"); tok == old {
			t.Fatal("the refreshed token is not the one handed out")
		}
	})
	t.Run("short-lived tokens are kept until their own expiry", func(t *testing.T) {
		// A token GitHub issues with under RefreshBefore to live was
		// minted again on every call. One clock, moved by the test, runs
		// the cache, the App's JWTs and the emulator's expiry.
		var shift atomic.Int64
		clock := func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }
		s := newStack(t, githubemu.Options{TokenTTL: 4 * time.Minute, Now: clock}, true)
		s.tokens.now, s.tokens.app.now = clock, clock
		for i := 0; i < 3; i++ {
			if _, err := s.client.GetFile(context.Background(), s.req(s.docs.Readme)); err != nil {
				t.Fatal(err)
			}
		}
		if n := s.emu.TokenMints(); n != 1 {
			t.Fatalf("%d mints for three reads with a 4-minute token, want 1", n)
		}
		// Past half its life, concurrent callers still read with it and
		// one new token is minted for all of them.
		shift.Store(int64(2*time.Minute + time.Second))
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.client.GetFile(context.Background(), s.req(s.docs.Readme)); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		waitFlights(t, s.tokens)
		if n := s.emu.TokenMints(); n != 2 {
			t.Fatalf("%d mints after half the token's life, want 2", n)
		}
		// Past its expiry a token is not handed out: callers wait for one
		// mint.
		shift.Store(int64(7 * time.Minute))
		for i := 0; i < 3; i++ {
			if _, err := s.client.GetFile(context.Background(), s.req(s.docs.Readme)); err != nil {
				t.Fatal(err)
			}
		}
		if n := s.emu.TokenMints(); n != 3 {
			t.Fatalf("%d mints after expiry, want 3", n)
		}
	})
	t.Run("a failed refresh keeps the live token and is retried later", func(t *testing.T) {
		s := newStack(t, githubemu.Options{TokenTTL: time.Hour}, true)
		old, err := s.tokens.Token(context.Background(), 77, "docs")
		if err != nil {
			t.Fatal(err)
		}
		s.emu.SetFault(githubemu.RouteToken, githubemu.Fault{Kind: githubemu.FaultStatus, Status: 502})
		clock := time.Now().Add(56 * time.Minute)
		s.tokens.now = func() time.Time { return clock }
		for i := 0; i < 5; i++ {
			if tok, err := s.tokens.Token(context.Background(), 77, "docs"); err != nil || tok != old {
				t.Fatalf("call %d while the token route fails: %v, want the live token", i, err)
			}
			waitFlights(t, s.tokens)
		}
		if n := tokenRequests(s.emu); n != 2 {
			t.Fatalf("%d token requests for five calls, want 2 (one mint, one failed refresh)", n)
		}
		clock = clock.Add(refreshRetry)
		s.emu.ClearFaults()
		if tok, err := s.tokens.Token(context.Background(), 77, "docs"); err != nil || tok != old {
			t.Fatalf("after refreshRetry: %v, want the live token", err)
		}
		waitFlights(t, s.tokens)
		if n := s.emu.TokenMints(); n != 2 {
			t.Fatalf("%d mints after refreshRetry, want 2", n)
		}
	})
	t.Run("concurrent callers mint once", func(t *testing.T) {
		s := newStack(t, githubemu.Options{TokenDelay: 300 * time.Millisecond}, true)
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.client.GetFile(context.Background(), s.req(s.docs.Readme))
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if n := s.emu.TokenMints(); n != 1 {
			t.Fatalf("%d mints for 16 concurrent calls, want 1", n)
		}
	})
	t.Run("a refused token is replaced once", func(t *testing.T) {
		s := newStack(t, githubemu.Options{}, true)
		if _, err := s.client.GetFile(context.Background(), s.req(s.docs.Readme)); err != nil {
			t.Fatal(err)
		}
		s.emu.RevokeTokens()
		if _, err := s.client.GetFile(context.Background(), s.req(s.docs.Readme)); err != nil {
			t.Fatal(err)
		}
		if n := s.emu.TokenMints(); n != 2 {
			t.Fatalf("%d mints, want 2", n)
		}
	})
	t.Run("a cancelled caller does not fail the mint", func(t *testing.T) {
		s := newStack(t, githubemu.Options{TokenDelay: 300 * time.Millisecond}, true)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { _, err := s.tokens.Token(ctx, 77, "docs"); done <- err }()
		time.Sleep(50 * time.Millisecond)
		other := make(chan error, 1)
		go func() { _, err := s.tokens.Token(context.Background(), 77, "docs"); other <- err }()
		// Cancel only once both callers wait on the one mint; on a busy
		// machine the second could otherwise arrive after the first left
		// and rightly start a mint of its own.
		waitForWaiters(t, s.tokens, 77, 2)
		cancel()
		if err := <-done; err == nil {
			t.Fatal("the cancelled caller got a token")
		}
		if err := <-other; err != nil {
			t.Fatalf("the waiting caller failed: %v", err)
		}
		if n := s.emu.TokenMints(); n != 1 {
			t.Fatalf("%d mints, want 1", n)
		}
	})
}

// waitForWaiters waits until n callers wait on the installation's mint.
func waitForWaiters(t *testing.T, s *Installations, installationID int64, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.mu.Lock()
		f := s.flights[keyFor(installationID, "docs")]
		ok := f != nil && f.waiters == n
		s.mu.Unlock()
		if ok {
			return
		}
	}
	t.Fatalf("never %d callers waiting on the mint", n)
}

// waitFlights waits until no mint of tokens is in progress (a background
// refresh has published its outcome).
func waitFlights(t *testing.T, tokens *Installations) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		tokens.mu.Lock()
		n := len(tokens.flights)
		tokens.mu.Unlock()
		if n == 0 {
			return
		}
	}
	t.Fatal("a token mint is still in progress after 10 s")
}

// tokenRequests counts the requests the emulator's token route received.
func tokenRequests(emu *githubemu.Emulator) int {
	n := 0
	for _, r := range emu.Requests() {
		if r.Route == githubemu.RouteToken {
			n++
		}
	}
	return n
}
