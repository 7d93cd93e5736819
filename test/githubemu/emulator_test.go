package githubemu

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"
)

const appID = 4242

var (
	keyOnce sync.Once
	testKey *rsa.PrivateKey
)

func key(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	keyOnce.Do(func() {
		var err error
		if testKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	})
	return testKey
}

func start(t *testing.T) (*Emulator, *Docs) {
	t.Helper()
	e, err := Start(Options{Dir: t.TempDir(), AppID: appID, AppKey: &key(t).PublicKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	d, err := e.SeedDocs("octo", "docs", 77)
	if err != nil {
		t.Fatal(err)
	}
	return e, d
}

func signJWT(t *testing.T, iss string, iat, exp time.Time, method jwt.SigningMethod, k any) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, jwt.RegisteredClaims{
		Issuer: iss, IssuedAt: jwt.NewNumericDate(iat), ExpiresAt: jwt.NewNumericDate(exp),
	}).SignedString(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func do(t *testing.T, method, url, auth, accept string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Logf("read: %v", err)
	}
	return resp, b
}

func mint(t *testing.T, e *Emulator, installation int64) string {
	t.Helper()
	now := time.Now()
	jwtS := signJWT(t, strconv.Itoa(appID), now.Add(-time.Minute), now.Add(9*time.Minute), jwt.SigningMethodRS256, key(t))
	resp, body := do(t, "POST", e.URL()+"/app/installations/"+strconv.FormatInt(installation, 10)+"/access_tokens", "Bearer "+jwtS, "")
	if resp.StatusCode != 201 {
		t.Fatalf("mint: %d %s", resp.StatusCode, body)
	}
	var out struct {
		Token     string `json:"token"`
		ExpiresAt string `json:"expires_at"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.Token == "" || out.ExpiresAt == "" {
		t.Fatalf("mint body: %s", body)
	}
	return out.Token
}

func TestTokenRouteVerifiesTheAppJWT(t *testing.T) {
	e, d := start(t)
	now := time.Now()
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	url := e.URL() + "/app/installations/77/access_tokens"
	cases := []struct {
		name string
		auth string
		want int
	}{
		{"valid", "Bearer " + signJWT(t, "4242", now.Add(-time.Minute), now.Add(9*time.Minute), jwt.SigningMethodRS256, key(t)), 201},
		{"no header", "", 401},
		{"wrong issuer", "Bearer " + signJWT(t, "4243", now.Add(-time.Minute), now.Add(9*time.Minute), jwt.SigningMethodRS256, key(t)), 401},
		{"other key", "Bearer " + signJWT(t, "4242", now.Add(-time.Minute), now.Add(9*time.Minute), jwt.SigningMethodRS256, other), 401},
		{"expired", "Bearer " + signJWT(t, "4242", now.Add(-11*time.Minute), now.Add(-time.Minute), jwt.SigningMethodRS256, key(t)), 401},
		{"exp too far", "Bearer " + signJWT(t, "4242", now.Add(-time.Minute), now.Add(11*time.Minute), jwt.SigningMethodRS256, key(t)), 401},
		{"iat in the future", "Bearer " + signJWT(t, "4242", now.Add(2*time.Minute), now.Add(9*time.Minute), jwt.SigningMethodRS256, key(t)), 401},
		{"HS256", "Bearer " + signJWT(t, "4242", now.Add(-time.Minute), now.Add(9*time.Minute), jwt.SigningMethodHS256, []byte("secret")), 401},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := do(t, "POST", url, c.auth, "")
			if resp.StatusCode != c.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.want, body)
			}
		})
	}
	if e.TokenMints() != 1 || e.TokenRefusals() != len(cases)-1 {
		t.Fatalf("mints %d refusals %d", e.TokenMints(), e.TokenRefusals())
	}
	// An unknown installation is 404.
	resp, _ := do(t, "POST", e.URL()+"/app/installations/999/access_tokens", cases[0].auth, "")
	if resp.StatusCode != 404 {
		t.Fatalf("unknown installation: %d", resp.StatusCode)
	}
	_ = d
}

func contents(t *testing.T, e *Emulator, token, path, ref, accept string) (*http.Response, map[string]any, []byte) {
	t.Helper()
	url := e.URL() + "/repos/octo/docs/contents/" + escapePath(path) + "?ref=" + ref
	resp, body := do(t, "GET", url, "Bearer "+token, accept)
	var obj map[string]any
	_ = json.Unmarshal(body, &obj)
	return resp, obj, body
}

func TestContentsAnswersLikeGitHub(t *testing.T) {
	e, d := start(t)
	tok := mint(t, e, 77)
	obj := "application/vnd.github.object+json"

	t.Run("file", func(t *testing.T) {
		for _, p := range []string{d.Runtime, d.Readme, d.Odd, d.Escapes, d.Empty, d.NotUTF8, d.MaxSize} {
			resp, o, body := contents(t, e, tok, p, d.Commit, obj)
			if resp.StatusCode != 200 || o["type"] != "file" || o["path"] != p || o["encoding"] != "base64" {
				t.Fatalf("%s: %d %.300s", p, resp.StatusCode, body)
			}
			c := o["content"].(string)
			for _, line := range strings.Split(strings.TrimSuffix(c, "\n"), "\n") {
				if len(line) > 60 {
					t.Fatalf("%s: base64 line of %d characters", p, len(line))
				}
			}
			got, err := base64.StdEncoding.DecodeString(c)
			if err != nil || !bytes.Equal(got, d.Files[p]) || int(o["size"].(float64)) != len(got) {
				t.Fatalf("%s: content differs (err %v)", p, err)
			}
		}
	})
	t.Run("too large", func(t *testing.T) {
		resp, o, _ := contents(t, e, tok, d.TooLarge, d.Commit, obj)
		if resp.StatusCode != 200 || o["encoding"] != "none" || o["content"] != "" || int(o["size"].(float64)) != MaxBlobBytes+1 {
			t.Fatalf("object media type: %d %v", resp.StatusCode, o["encoding"])
		}
		resp, _, body := contents(t, e, tok, d.TooLarge, d.Commit, "application/vnd.github+json")
		if resp.StatusCode != 403 || !strings.Contains(string(body), "too_large") {
			t.Fatalf("default media type: %d %s", resp.StatusCode, body)
		}
	})
	t.Run("directory", func(t *testing.T) {
		resp, o, _ := contents(t, e, tok, d.Dir, d.Commit, obj)
		if resp.StatusCode != 200 || o["type"] != "dir" || len(o["entries"].([]any)) == 0 {
			t.Fatalf("object: %d %v", resp.StatusCode, o)
		}
		resp, _, body := contents(t, e, tok, d.Dir, d.Commit, "")
		if resp.StatusCode != 200 || body[0] != '[' {
			t.Fatalf("array: %d %.200s", resp.StatusCode, body)
		}
	})
	t.Run("symlink to a file answers the file", func(t *testing.T) {
		resp, o, _ := contents(t, e, tok, d.LinkToFile, d.Commit, obj)
		if resp.StatusCode != 200 || o["type"] != "file" || o["path"] != d.Readme {
			t.Fatalf("%d %v", resp.StatusCode, o)
		}
	})
	t.Run("symlink outside", func(t *testing.T) {
		resp, o, _ := contents(t, e, tok, d.LinkOutside, d.Commit, obj)
		if resp.StatusCode != 200 || o["type"] != "symlink" || o["target"] != "../../../etc/passwd" {
			t.Fatalf("%d %v", resp.StatusCode, o)
		}
	})
	t.Run("submodule", func(t *testing.T) {
		resp, o, _ := contents(t, e, tok, d.Submodule, d.Commit, obj)
		if resp.StatusCode != 200 || o["type"] != "submodule" {
			t.Fatalf("%d %v", resp.StatusCode, o)
		}
	})
	t.Run("missing path, unknown commit, bad token", func(t *testing.T) {
		if resp, _, _ := contents(t, e, tok, d.MissingUnicode, d.Commit, obj); resp.StatusCode != 404 {
			t.Fatalf("missing: %d", resp.StatusCode)
		}
		if resp, _, _ := contents(t, e, tok, d.Readme, strings.Repeat("0", 40), obj); resp.StatusCode != 404 {
			t.Fatalf("unknown commit: %d", resp.StatusCode)
		}
		if resp, _, _ := contents(t, e, "ghs_nope", d.Readme, d.Commit, obj); resp.StatusCode != 401 {
			t.Fatalf("bad token: %d", resp.StatusCode)
		}
	})
	t.Run("branch", func(t *testing.T) {
		resp, body := do(t, "GET", e.URL()+"/repos/octo/docs/branches/main", "Bearer "+tok, "")
		if resp.StatusCode != 200 || !strings.Contains(string(body), d.Commit) {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
	if !utf8.Valid(d.Files[d.Runtime]) || len(d.Files[d.Runtime]) <= 64<<10 {
		t.Fatal("the runtime document must be valid UTF-8 over 64 KiB")
	}
}

func TestTokensExpireAndInstallationsScope(t *testing.T) {
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e, err := Start(Options{Dir: t.TempDir(), AppID: appID, AppKey: &key(t).PublicKey, TokenTTL: time.Hour, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	d, err := e.SeedDocs("octo", "docs", 77)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.CreateRepository("octo", "other"); err != nil {
		t.Fatal(err)
	}
	e.AddInstallation(78, "octo/other")
	tok := mint(t, e, 78)
	if resp, _, _ := contents(t, e, tok, d.Readme, d.Commit, ""); resp.StatusCode != 404 {
		t.Fatalf("another installation's token: %d, want 404", resp.StatusCode)
	}
	tok = mint(t, e, 77)
	mu.Lock()
	now = now.Add(61 * time.Minute)
	mu.Unlock()
	if resp, _, _ := contents(t, e, tok, d.Readme, d.Commit, ""); resp.StatusCode != 401 {
		t.Fatalf("expired token: %d, want 401", resp.StatusCode)
	}
}

func TestFaults(t *testing.T) {
	e, d := start(t)
	tok := mint(t, e, 77)
	url := e.URL() + "/repos/octo/docs/contents/" + d.Readme + "?ref=" + d.Commit
	e.SetFault(RouteContents, Fault{Kind: FaultRedirect, Times: 1})
	if resp, _ := do(t, "GET", url, "Bearer "+tok, ""); resp.StatusCode != 302 {
		t.Fatalf("redirect: %d", resp.StatusCode)
	}
	e.SetFault(RouteContents, Fault{Kind: FaultHugeBody, Times: 1})
	if resp, body := do(t, "GET", url, "Bearer "+tok, ""); len(body) != HugeBodyBytes || resp.ContentLength != HugeBodyBytes {
		t.Fatalf("huge: %d bytes, Content-Length %d", len(body), resp.ContentLength)
	}
	e.SetFault(RouteContents, Fault{Kind: FaultHugeBodyChunked, Times: 1})
	if resp, body := do(t, "GET", url, "Bearer "+tok, ""); len(body) != HugeBodyBytes || resp.ContentLength != -1 {
		t.Fatalf("chunked: %d bytes, Content-Length %d", len(body), resp.ContentLength)
	}
	e.SetFault(RouteContents, Fault{Kind: FaultFalseLength, DeclaredLength: 1000, Times: 1})
	if resp, body := do(t, "GET", url, "Bearer "+tok, ""); len(body) != 1000 || resp.ContentLength != 1000 {
		t.Fatalf("false length: %d bytes", len(body))
	}
	e.SetFault(RouteContents, Fault{Kind: FaultStatus, Status: 429, Header: http.Header{"Retry-After": {"17"}}, Times: 1})
	if resp, _ := do(t, "GET", url, "Bearer "+tok, ""); resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "17" {
		t.Fatalf("429: %d", resp.StatusCode)
	}
	if resp, _ := do(t, "GET", url, "Bearer "+tok, ""); resp.StatusCode != 200 {
		t.Fatalf("after the faults: %d", resp.StatusCode)
	}
	if n := e.ContentsRequests(); n != 6 {
		t.Fatalf("contents requests %d, want 6", n)
	}
}

// TestHostileFaults: the byte-level faults of the hostile-upstream tests
// send what they promise on the wire.
func TestHostileFaults(t *testing.T) {
	e, d := start(t)
	tok := mint(t, e, 77)
	path := "/repos/octo/docs/contents/" + d.Readme + "?ref=" + d.Commit
	_, normal := do(t, "GET", e.URL()+path, "Bearer "+tok, "")
	raw := func(t *testing.T) []byte {
		t.Helper()
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.URL(), "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
		_, _ = io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+tok+"\r\n\r\n")
		b, _ := io.ReadAll(io.LimitReader(conn, 64<<10+1))
		return b
	}
	e.SetFault(RouteContents, Fault{Kind: FaultExtraBytes, Body: []byte("SURPLUS"), Times: 1})
	if b := raw(t); !bytes.HasSuffix(b, append(append([]byte(nil), normal...), "SURPLUS"...)) {
		t.Fatalf("extra bytes: %q", b)
	}
	e.SetFault(RouteContents, Fault{Kind: FaultEndlessHeaders, Times: 1})
	if b := raw(t); len(b) <= 64<<10 || bytes.Contains(b, []byte("\r\n\r\n")) {
		t.Fatalf("endless headers: %d bytes", len(b))
	}
	e.SetFault(RouteContents, Fault{Kind: FaultStallBody, Times: 1})
	if b := raw(t); !bytes.HasSuffix(b, normal[:len(normal)/2]) {
		t.Fatalf("stall: %q", b)
	}
	e.SetFault(RouteContents, Fault{Kind: FaultReset, Times: 1})
	if b := raw(t); bytes.HasSuffix(b, normal) {
		t.Fatalf("reset sent the whole body")
	}
	via := make([]string, 1000)
	for i := range via {
		via[i] = "1.1 proxy-" + strconv.Itoa(i)
	}
	e.SetFault(RouteContents, Fault{Kind: FaultHeaders, Header: http.Header{"Via": via}, Times: 1})
	resp, body := do(t, "GET", e.URL()+path, "Bearer "+tok, "")
	if len(resp.Header.Values("Via")) != 1000 || !bytes.Equal(body, normal) {
		t.Fatalf("Via: %d values", len(resp.Header.Values("Via")))
	}
}

// mintWith posts a token request with body and returns the status and token.
func mintWith(t *testing.T, e *Emulator, installation int64, body string) (int, string) {
	t.Helper()
	now := time.Now()
	jwtS := signJWT(t, strconv.Itoa(appID), now.Add(-time.Minute), now.Add(9*time.Minute), jwt.SigningMethodRS256, key(t))
	req, _ := http.NewRequest("POST", e.URL()+"/app/installations/"+strconv.FormatInt(installation, 10)+"/access_tokens", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+jwtS)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Token string `json:"token"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out.Token
}

// TestTokensNarrowed: a token minted with repositories and permissions
// works only for those repositories and that access, as GitHub's do; the
// emulator refuses (422) repositories outside the installation and
// permissions the App lacks, and records every mint's body.
func TestTokensNarrowed(t *testing.T) {
	e, d := start(t)
	if err := e.CreateRepository("octo", "other"); err != nil {
		t.Fatal(err)
	}
	e.AddInstallation(77, "octo/other")
	cases := []struct {
		name       string
		body       string
		mintStatus int
		readStatus int // reading octo/docs with the token
	}{
		{"no body: every repository, every permission", "", 201, 200},
		{"narrowed to docs", `{"permissions":{"contents":"read"},"repositories":["docs"]}`, 201, 200},
		{"narrowed to docs, other case", `{"permissions":{"contents":"read"},"repositories":["DOCS"]}`, 201, 200},
		{"narrowed to another repository", `{"permissions":{"contents":"read"},"repositories":["other"]}`, 201, 404},
		{"without contents", `{"permissions":{"metadata":"read"},"repositories":["docs"]}`, 201, 403},
		{"a repository outside the installation", `{"permissions":{"contents":"read"},"repositories":["nope"]}`, 422, 0},
		{"owner/name is not a name", `{"permissions":{"contents":"read"},"repositories":["octo/docs"]}`, 422, 0},
		{"an unknown permission", `{"permissions":{"administration":"write"}}`, 422, 0},
		{"a bad level", `{"permissions":{"contents":"admin"}}`, 422, 0},
		{"an unknown member", `{"permissions":{"contents":"read"},"scope":"all"}`, 422, 0},
		{"not JSON", `contents=read`, 422, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(e.Mints())
			status, tok := mintWith(t, e, 77, tc.body)
			if status != tc.mintStatus {
				t.Fatalf("mint: %d, want %d", status, tc.mintStatus)
			}
			if status != 201 {
				if len(e.Mints()) != before {
					t.Fatal("a refused mint was recorded")
				}
				return
			}
			if m := e.Mints(); len(m) != before+1 || m[len(m)-1].Body != tc.body || m[len(m)-1].Installation != 77 {
				t.Fatalf("recorded mints %+v", m[before:])
			}
			if resp, _, _ := contents(t, e, tok, d.Readme, d.Commit, ""); resp.StatusCode != tc.readStatus {
				t.Fatalf("read with the token: %d, want %d", resp.StatusCode, tc.readStatus)
			}
		})
	}
}
