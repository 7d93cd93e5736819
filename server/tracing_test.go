package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// TestTracingSettings pins what tracing.otlp_endpoint and
// tracing.sample_ratio accept: a base URL kept with its path (the
// exporter appends /v1/traces), https or loopback http only, and a ratio
// in [0, 1]; tracing stays off by default.
func TestTracingSettings(t *testing.T) {
	l, err := load(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Config.TracingEndpoint != nil || l.Config.TracingSampleRatio != 1 {
		t.Fatalf("default tracing %v ratio %v, want off and 1", l.Config.TracingEndpoint, l.Config.TracingSampleRatio)
	}
	for _, tc := range []struct {
		name, endpoint, ratio string
		want                  string // the endpoint kept, or the key of the problem
	}{
		{"loopback http", "http://127.0.0.1:4318", "", "http://127.0.0.1:4318"},
		{"https with a path", "https://collector.example/otlp/", "0.25", "https://collector.example/otlp"},
		{"plain http elsewhere", "http://collector.example:4318", "", "tracing.otlp_endpoint"},
		{"other scheme", "grpc://127.0.0.1:4317", "", "tracing.otlp_endpoint"},
		{"query", "https://collector.example/?x=1", "", "tracing.otlp_endpoint"},
		{"userinfo", "https://u:p@collector.example", "", "tracing.otlp_endpoint"},
		{"ratio above 1", "http://127.0.0.1:4318", "1.5", "tracing.sample_ratio"},
		{"negative ratio", "http://127.0.0.1:4318", "-0.1", "tracing.sample_ratio"},
		{"ratio not a number", "http://127.0.0.1:4318", "half", "tracing.sample_ratio"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{"AGENT_GATEWAY_TRACING_OTLP_ENDPOINT": tc.endpoint}
			if tc.ratio != "" {
				vars["AGENT_GATEWAY_TRACING_SAMPLE_RATIO"] = tc.ratio
			}
			if strings.HasPrefix(tc.want, "tracing.") {
				got := problems(t, nil, vars)
				if len(got) != 1 || !strings.HasPrefix(got[0], tc.want) {
					t.Fatalf("problems %q, want one on %s", got, tc.want)
				}
				if strings.Contains(got[0], "u:p") {
					t.Errorf("the problem quotes the userinfo: %q", got[0])
				}
				return
			}
			l, err := load(t, nil, vars)
			if err != nil {
				t.Fatal(err)
			}
			if got := l.Config.TracingEndpoint.String(); got != tc.want {
				t.Errorf("endpoint %q, want %q", got, tc.want)
			}
		})
	}
}

func TestOTLPClientPath(t *testing.T) {
	for _, tc := range []struct{ base, want string }{
		{"http://127.0.0.1:4318", "v1/traces"},
		{"https://collector.example/otlp", "otlp/v1/traces"},
	} {
		t.Run(tc.base, func(t *testing.T) {
			l, err := load(t, nil, map[string]string{"AGENT_GATEWAY_TRACING_OTLP_ENDPOINT": tc.base})
			if err != nil {
				t.Fatal(err)
			}
			c := newOTLPClient(l.Config.TracingEndpoint)
			if got := strings.Join(c.segments, "/"); got != tc.want {
				t.Errorf("segments %q, want %q", got, tc.want)
			}
		})
	}
}

// BenchmarkAnonymousToolCallTraced is BenchmarkAnonymousToolCall with
// tracing on: every call unsampled (sample_ratio 0: the spans are
// started but not recorded) and every call sampled and exported to a
// loopback collector that discards them. With tracing off nothing is
// installed; compare BenchmarkAnonymousToolCall before and after tracing
// existed (docs/observability.md).
func BenchmarkAnonymousToolCallTraced(b *testing.B) {
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer collector.Close()
	emu, d := benchEmulator(b)
	for _, ratio := range []float64{0, 1} {
		b.Run("sample_ratio="+strconv.FormatFloat(ratio, 'g', -1, 64), func(b *testing.B) {
			benchAnonymousCall(b, emu, d, func(cfg *Config) {
				cfg.TracingEndpoint, _ = url.Parse(collector.URL)
				cfg.TracingSampleRatio = ratio
			})
		})
	}
}
