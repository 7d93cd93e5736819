package main

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
	"github.com/agent-gateway/agent-gateway/test/githubemu"
)

// The documents fixture's GitHub App and installation.
const (
	docsAppID          = 2017
	docsInstallationID = 717
)

// docFile is one document the fragment scenarios read: the demo's runtime
// document (204,800 bytes of 1- to 4-byte characters) and files of the
// sizes whose cost the issue asks for, made the same way.
type docFile struct {
	scenario string
	path     string
	size     int
}

var docFiles = []docFile{
	{"document 200 KiB (demo)", "docs/CONTINUITY_PROTOCOL.md", 200 << 10},
	{"document 64 KiB", "sizes/64k.md", 64 << 10},
	{"document 256 KiB", "sizes/256k.md", 256 << 10},
	{"document 1 MiB", "sizes/1m.md", 1 << 20},
}

// documentsFixture is the GitHub emulator with the documents committed, and
// what the gateway and the direct path need to read them.
type documentsFixture struct {
	emu     *githubemu.Emulator
	key     *rsa.PrivateKey
	keyFile string
	owner   string
	repo    string
	commit  string
	// sources maps a docFile path to its source_id, token is a
	// documents:read access token of the project holding them.
	sources map[string]string
	token   string
}

// startDocuments starts the GitHub emulator with one commit holding every
// docFile and writes the App's private key for the gateway.
func startDocuments(tmp string) (*documentsFixture, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	f := &documentsFixture{key: key, keyFile: filepath.Join(tmp, "github-app.pem"), owner: "load", repo: "docs", sources: map[string]string{}}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(f.keyFile, pemKey, 0o600); err != nil {
		return nil, err
	}
	if f.emu, err = githubemu.Start(githubemu.Options{Dir: filepath.Join(tmp, "github"), AppID: docsAppID, AppKey: &key.PublicKey}); err != nil {
		return nil, err
	}
	var entries []githubemu.Entry
	for _, d := range docFiles {
		entries = append(entries, githubemu.Entry{Path: d.path, Content: githubemu.MultiByteDocument(d.size)})
	}
	if err := f.emu.CreateRepository(f.owner, f.repo); err != nil {
		f.emu.Close()
		return nil, err
	}
	if f.commit, err = f.emu.Commit(f.owner, f.repo, "main", "Documents of the load run", entries); err != nil {
		f.emu.Close()
		return nil, err
	}
	f.emu.AddInstallation(docsInstallationID, f.owner+"/"+f.repo)
	return f, nil
}

// gatewayEnv is the gateway's GitHub configuration.
func (f *documentsFixture) gatewayEnv() []string {
	return []string{
		"AGENT_GATEWAY_GITHUB_API_ORIGIN=" + f.emu.URL(),
		"HEYAIRA_GITHUB_APP_ID=" + strconv.Itoa(docsAppID),
		"HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE=" + f.keyFile,
	}
}

// seed allowlists every docFile in a new project and issues a
// documents:read token, through `agent-gateway admin` as an operator does.
func (f *documentsFixture) seed(bin string, env []string) error {
	admin := func(args ...string) (map[string]any, error) { return gatewaytest.Admin(bin, env, args...) }
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	p, err := admin("create-project", "--name", "load")
	if err != nil {
		return err
	}
	project := str(p, "project_id")
	if _, err := admin("add-member", "--project-id", project, "--subject", "loader"); err != nil {
		return err
	}
	if _, err := admin("link-repository", "--project-id", project, "--github-owner", f.owner, "--github-repository", f.repo,
		"--installation-id", strconv.Itoa(docsInstallationID)); err != nil {
		return err
	}
	for i, d := range docFiles {
		role := "reference"
		if i == 0 {
			role = "runtime"
		}
		s, err := admin("add-document-source", "--project-id", project, "--github-owner", f.owner, "--github-repository", f.repo,
			"--document-role", role, "--path", d.path, "--commit-sha", f.commit)
		if err != nil {
			return err
		}
		f.sources[d.path] = str(s, "source_id")
	}
	g, err := admin("create-consent", "--project-id", project, "--subject", "loader", "--scopes", "documents:read")
	if err != nil {
		return err
	}
	f.token = str(g, "access_token")
	return nil
}

// installationToken mints an installation token the way the gateway does
// (an App JWT to POST /app/installations/{id}/access_tokens), for the
// direct path.
func (f *documentsFixture) installationToken() (string, error) {
	now := time.Now()
	jwtText, err := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{
		Issuer: strconv.Itoa(docsAppID), IssuedAt: jwt.NewNumericDate(now.Add(-30 * time.Second)),
		ExpiresAt: jwt.NewNumericDate(now.Add(9 * time.Minute)),
	}).SignedString(f.key)
	if err != nil {
		return "", err
	}
	req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/app/installations/%d/access_tokens", f.emu.URL(), docsInstallationID), nil)
	req.Header.Set("Authorization", "Bearer "+jwtText)
	req.Header.Set("Accept", "application/vnd.github+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var t struct {
		Token string `json:"token"`
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &t) != nil || t.Token == "" {
		return "", fmt.Errorf("mint an installation token: %d", resp.StatusCode)
	}
	return t.Token, nil
}

// scenarios are the fragment reads: directly, the Contents answer the
// gateway fetches for every fragment (the whole file, base64); through the
// gateway, git_document_get of the file's first fragment (64 KiB, or the
// whole file when smaller).
func (f *documentsFixture) scenarios(gw string) ([]scenario, error) {
	token, err := f.installationToken()
	if err != nil {
		return nil, err
	}
	var out []scenario
	for _, d := range docFiles {
		contents := fmt.Sprintf("%s/repos/%s/%s/contents/%s?ref=%s", f.emu.URL(), f.owner, f.repo, d.path, url.QueryEscape(f.commit))
		out = append(out, scenario{
			name: d.scenario,
			direct: target{name: "direct", ok: func(b []byte) bool { return bytes.Contains(b, []byte(`"encoding":"base64"`)) },
				req: func() *http.Request {
					r, _ := http.NewRequest(http.MethodGet, contents, nil)
					r.Header.Set("Accept", githubObjectMediaType)
					r.Header.Set("Authorization", "Bearer "+token)
					return r
				}},
			gateway: target{name: "gateway", ok: func(b []byte) bool { return okResult(b) && bytes.Contains(b, []byte(`fragment_sha256`)) },
				req: mcpCallAt(gw, "/mcp/documents", f.token, "git_document_get", fmt.Sprintf(`{"source_id":%q}`, f.sources[d.path]))},
		})
	}
	return out, nil
}

// githubObjectMediaType is what the gateway asks the Contents route for.
const githubObjectMediaType = "application/vnd.github.object+json"

// isDocumentScenario tells the fragment scenarios, selected together by
// "documents".
func isDocumentScenario(name string) bool { return strings.HasPrefix(name, "document ") }
