package middleware

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, func(tool string) bool { return tool == "get_repository" })
	r := chi.NewRouter()
	r.Use(RequestID)
	r.Use(m.Handler)
	r.Get("/healthz", func(http.ResponseWriter, *http.Request) {})
	r.Handle("/repos/{owner}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}))
	r.Handle("/mcp/forgejo", MCPPeek(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		RecordFromContext(r.Context()).SetOutcome("not_found")
	})))

	call := func(tool string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q}}`, tool)
	}
	do := func(method, path, body string) {
		t.Helper()
		r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(method, path, strings.NewReader(body)))
	}
	do(http.MethodGet, "/healthz", "")
	do(http.MethodGet, "/repos/alice", "")
	do(http.MethodGet, "/repos/bob", "")
	do(http.MethodPost, "/mcp/forgejo", call("get_repository"))
	for i := range 50 {
		do(http.MethodPost, "/mcp/forgejo", call(fmt.Sprintf("made_up_%d", i)))
		do(http.MethodGet, fmt.Sprintf("/nope/%d", i), "")
	}

	cases := []struct {
		name   string
		labels []string // route, status, tool, outcome
		want   float64
	}{
		{"handler writing nothing is 200, no outcome", []string{"/healthz", "200", "", "none"}, 1},
		{"route pattern, not path", []string{"/repos/{owner}", "418", "", "none"}, 2},
		{"known tool", []string{"/mcp/forgejo", "200", "get_repository", "not_found"}, 1},
		{"unknown tools fold into one label", []string{"/mcp/forgejo", "200", "unknown", "not_found"}, 50},
		{"unmatched paths fold into one label", []string{"unmatched", "404", "", "none"}, 50},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := counterValue(t, m.requests.WithLabelValues(tc.labels...))
			if got != tc.want {
				t.Fatalf("count%v = %v, want %v", tc.labels, got, tc.want)
			}
		})
	}
	t.Run("series stay bounded", func(t *testing.T) {
		if n := seriesCount(m.requests); n != len(cases) {
			t.Fatalf("%d request series, want %d", n, len(cases))
		}
		if n := seriesCount(m.duration); n != 5 {
			t.Fatalf("%d duration series, want 5", n)
		}
	})
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var out dto.Metric
	if err := c.Write(&out); err != nil {
		t.Fatal(err)
	}
	return out.GetCounter().GetValue()
}

func seriesCount(c prometheus.Collector) int {
	ch := make(chan prometheus.Metric)
	go func() { c.Collect(ch); close(ch) }()
	n := 0
	for range ch {
		n++
	}
	return n
}
