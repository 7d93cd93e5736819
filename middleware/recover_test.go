package middleware

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRecover(t *testing.T) {
	cases := []struct {
		name  string
		panic any
	}{
		{"string", "boom SECRET-PANIC-TEXT"},
		{"error", errors.New("boom SECRET-PANIC-TEXT")},
		{"runtime error", nil}, // a real runtime panic below
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logBuf bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&logBuf, nil))
			h := RequestID(Recover(log)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				if tc.panic == nil {
					var s []byte
					_ = s[len(r.URL.Path)] // a runtime panic: index out of range
				}
				panic(tc.panic)
			})))
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Header.Set(RequestIDHeader, "rid-42")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusInternalServerError {
				t.Fatalf("status = %d, want 500", w.Code)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			e := errorBody(t, w.Body.String())
			if e["code"] != "internal_error" || e["message"] != "internal error" {
				t.Errorf("error = %v", e)
			}
			if strings.Contains(w.Body.String(), "SECRET-PANIC-TEXT") || strings.Contains(w.Body.String(), "goroutine") {
				t.Errorf("response leaks the panic: %s", w.Body.String())
			}
			logged := logBuf.String()
			if !strings.Contains(logged, `"request_id":"rid-42"`) || !strings.Contains(logged, `"stack"`) {
				t.Errorf("log lacks request ID or stack: %s", logged)
			}
		})
	}
}

func TestRecoverReraisesAbortHandler(t *testing.T) {
	var logBuf bytes.Buffer
	h := Recover(slog.New(slog.NewJSONHandler(&logBuf, nil)))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic(http.ErrAbortHandler)
	}))
	w := httptest.NewRecorder()
	got := func() (p any) {
		defer func() { p = recover() }()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		return nil
	}()
	if got != http.ErrAbortHandler {
		t.Fatalf("recovered %v, want http.ErrAbortHandler re-raised", got)
	}
	if w.Body.Len() != 0 || logBuf.Len() != 0 {
		t.Fatalf("abort wrote a response %q or a log %q", w.Body.String(), logBuf.String())
	}
}

func TestRecoverPassesThrough(t *testing.T) {
	w := httptest.NewRecorder()
	Recover(slog.New(slog.DiscardHandler))(ok).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	if w.Code != http.StatusOK || w.Body.String() != "ok" {
		t.Fatalf("got %d %q", w.Code, w.Body.String())
	}
}

// TestRecoverAfterWriteAborts: a panic after the response began cannot
// send a second status; the connection is aborted instead.
func TestRecoverAfterWriteAborts(t *testing.T) {
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	h := AccessLog(log)(Recover(log)(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("partial"))
		panic("late")
	})))
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req = req.WithContext(WithRecord(req.Context(), &Record{}))
	defer func() {
		if p := recover(); p != http.ErrAbortHandler {
			t.Fatalf("recovered %v, want http.ErrAbortHandler", p)
		}
	}()
	h.ServeHTTP(httptest.NewRecorder(), req)
	t.Fatal("no abort")
}
