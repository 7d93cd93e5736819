package gatewaytest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestCanariesFind(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der := x509.MarshalPKCS1PrivateKey(key)
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: der})
	bearer := NewCanaryToken("bearer")
	c := &Canaries{}
	c.Add("bearer", bearer)
	c.AddPEM("app key", pemBytes)
	c.AddPattern("minted", regexp.MustCompile(`ghs_CANARY[A-Z2-7]{20,}`))
	lines := strings.Split(string(pemBytes), "\n")
	cases := []struct {
		name, text string
		want       []string
	}{
		{"clean", `{"level":"INFO","msg":"request","caller":"pt:1a2b"}`, nil},
		{"bearer as is", "Authorization: Bearer " + bearer, []string{"bearer"}},
		{"bearer in base64", base64.StdEncoding.EncodeToString([]byte("x:" + bearer)), nil},
		{"bearer alone in base64", base64.StdEncoding.EncodeToString([]byte(bearer)), []string{"bearer (base64)"}},
		{"the whole PEM", string(pemBytes), []string{"app key (PEM line 1)"}},
		{"the PEM body without line breaks", base64.StdEncoding.EncodeToString(der), []string{"app key (base64 body)"}},
		{"one PEM line", "error: " + lines[3], []string{"app key (PEM line 3)"}},
		{"DER in base64url", base64.RawURLEncoding.EncodeToString(der), []string{"app key (base64url DER)"}},
		{"a minted token", `"token":"ghs_CANARYABCDEFGHIJKLMNOPQRSTUV"`, []string{"minted"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := c.Find(tc.text)
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Fatalf("found %v, want %s among them", got, w)
				}
			}
			if tc.want == nil && len(got) > 0 && tc.name == "clean" {
				t.Fatalf("found %v in clean text", got)
			}
		})
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a short canary was accepted")
		}
	}()
	c.Add("short", "abc")
}

// TestRecordingTransport: what a Connect session reads is what the scan
// sees.
func TestRecordingTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"result":"canary-x"}`)
	}))
	defer srv.Close()
	buf := &SyncBuffer{}
	hc := &http.Client{Transport: &recordingTransport{base: http.DefaultTransport, into: buf}}
	resp, err := hc.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if buf.String() != string(b) || !strings.Contains(buf.String(), "canary-x") {
		t.Fatalf("recorded %q, read %q", buf.String(), b)
	}
}
