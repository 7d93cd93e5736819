package middleware

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestOrigin(t *testing.T) {
	allowed := []string{"https://gw.example", "http://127.0.0.1:8080/"}
	cases := []struct {
		name    string
		origins []string
		want    int
	}{
		{"no Origin passes", nil, http.StatusOK},
		{"own origin passes", []string{"https://gw.example"}, http.StatusOK},
		{"case differs passes", []string{"HTTPS://GW.EXAMPLE"}, http.StatusOK},
		{"configured with trailing slash passes", []string{"http://127.0.0.1:8080"}, http.StatusOK},
		{"other origin refused", []string{"https://evil.example"}, http.StatusForbidden},
		{"rebinding: same host other port refused", []string{"https://gw.example:8443"}, http.StatusForbidden},
		{"scheme differs refused", []string{"http://gw.example"}, http.StatusForbidden},
		{"suffix trick refused", []string{"https://gw.example.evil.example"}, http.StatusForbidden},
		{"null refused", []string{"null"}, http.StatusForbidden},
		{"empty refused", []string{""}, http.StatusForbidden},
		{"two Origin headers refused", []string{"https://gw.example", "https://gw.example"}, http.StatusForbidden},
		{"two Origin headers, one foreign, refused", []string{"https://gw.example", "https://evil.example"}, http.StatusForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, rec := newReq(http.MethodPost, "/mcp/forgejo", nil)
			for _, o := range tc.origins {
				r.Header.Add("Origin", o)
			}
			next := http.Handler(ok)
			if tc.want != http.StatusOK {
				next = mustNotRun(t)
			}
			w := httptest.NewRecorder()
			Origin(allowed)(next).ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("status = %d, want %d", w.Code, tc.want)
			}
			if tc.want == http.StatusForbidden {
				if e := errorBody(t, w.Body.String()); e["code"] != "origin_forbidden" {
					t.Errorf("code = %v", e["code"])
				}
				if rec.Outcome() != "origin_forbidden" {
					t.Errorf("outcome = %q", rec.Outcome())
				}
			}
		})
	}
}
