package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// TestCredentialRedacted: however a credential is printed or logged by
// accident (%v, %+v, %#v, %s, slog, JSON), its secret does not appear;
// only Apply puts it on a request.
func TestCredentialRedacted(t *testing.T) {
	const secret = "canary-credential-0123456789abcdef"
	for _, c := range []Credential{{Token: secret}, {Username: "bot", Password: secret}} {
		var logs bytes.Buffer
		slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", "cred", c, "wrapped", struct{ C Credential }{c})
		j, _ := json.Marshal(struct{ C fmt.Stringer }{c})
		for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, c), fmt.Sprintf("%v", []Credential{c}),
			fmt.Sprintf("%+v", struct{ C Credential }{c}), logs.String(), string(j)} {
			if strings.Contains(s, secret) {
				t.Fatalf("the secret is printed: %s", s)
			}
		}
		req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
		c.Apply(req)
		if !strings.Contains(req.Header.Get("Authorization"), "Bearer "+secret) && c.Token != "" {
			t.Fatalf("Apply: %q", req.Header.Get("Authorization"))
		}
		if u, p, ok := req.BasicAuth(); c.Username != "" && (!ok || u != "bot" || p != secret) {
			t.Fatalf("Apply basic: %q %q", u, p)
		}
	}
}
