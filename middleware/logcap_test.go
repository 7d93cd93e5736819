package middleware

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCappedString(t *testing.T) {
	cases := []struct {
		name, in, want string
		length         int // 0: no _bytes attribute
	}{
		{"empty", "", "", 0},
		{"at the limit", strings.Repeat("a", 8), strings.Repeat("a", 8), 0},
		{"one over", strings.Repeat("a", 9), strings.Repeat("a", 8) + "…", 9},
		{"cut inside a rune backs off to its start", "abcdefgé", "abcdefg…", 9},
		{"huge", strings.Repeat("m", 1_040_000), strings.Repeat("m", 8) + "…", 1_040_000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := CappedString("k", c.in, 8)
			if got[0].Value.String() != c.want {
				t.Fatalf("value %q, want %q", got[0].Value.String(), c.want)
			}
			if c.length == 0 && len(got) != 1 || c.length != 0 && (len(got) != 2 || got[1].Key != "k_bytes" || got[1].Value.Int64() != int64(c.length)) {
				t.Fatalf("attrs %v", got)
			}
		})
	}
}

// TestCapHandler: strings, errors, values in groups and pre-bound
// attributes and the message are all capped; short values pass as they are.
func TestCapHandler(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(CapHandler(slog.NewJSONHandler(&buf, nil), 16)).With("bound", strings.Repeat("b", 40))
	long := strings.Repeat("x", 100)
	l.Info(strings.Repeat("m", 40), "s", long, "err", errors.New(long), "n", 7, "short", "ok", slog.Group("g", "inner", long))
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if len(buf.Bytes()) > 400 {
		t.Fatalf("line of %d bytes: %s", buf.Len(), buf.Bytes())
	}
	for _, k := range []string{"s_bytes", "err_bytes", "bound_bytes"} {
		if line[k] == nil {
			t.Errorf("no %s in %s", k, buf.Bytes())
		}
	}
	if line["n"] != float64(7) || line["short"] != "ok" || line["g"].(map[string]any)["inner_bytes"] != float64(100) {
		t.Errorf("line %s", buf.Bytes())
	}
}

// TestAccessLogCapsCallerValues: a 1,040,000-byte JSON-RPC method, a long
// path and a long HTTP method make an access line of bounded size, on a
// refusal as on success.
func TestAccessLogCapsCallerValues(t *testing.T) {
	for _, status := range []int{http.StatusOK, http.StatusBadRequest, http.StatusTooManyRequests} {
		var buf bytes.Buffer
		h := AccessLog(slog.New(slog.NewJSONHandler(&buf, nil)))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			RecordFromContext(r.Context()).SetCall(Call{Method: strings.Repeat("m", 1_040_000), Tool: strings.Repeat("t", 500)})
			w.WriteHeader(status)
		}))
		r, _ := newReq(http.MethodPost, "/"+strings.Repeat("p", 5000), nil)
		r.Method = strings.Repeat("M", 300)
		h.ServeHTTP(httptest.NewRecorder(), r)
		if buf.Len() > 1200 {
			t.Fatalf("status %d: access line of %d bytes", status, buf.Len())
		}
		var line map[string]any
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line["rpc_method_bytes"] != float64(1_040_000) || line["path_bytes"] != float64(5001) || line["method_bytes"] != float64(300) || line["tool_bytes"] != float64(500) {
			t.Fatalf("lengths not logged: %s", buf.Bytes())
		}
	}
}
