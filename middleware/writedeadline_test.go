package middleware

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// serveWith runs h behind a server whose WriteTimeout is timeout, as the
// gateway's http.Server has it.
func serveWith(t *testing.T, timeout time.Duration, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.WriteTimeout = timeout
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// TestWriteDeadline: a handler that works longer than the write timeout
// before writing is answered in full (the timeout is not a total
// deadline), while the same handler without the middleware is cut; a
// client that stops reading is still cut off; an answer with no explicit
// write gets its final flush.
func TestWriteDeadline(t *testing.T) {
	const timeout = 300 * time.Millisecond
	slow := func(body string, work time.Duration) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(work)
			w.Header().Set("Content-Type", "text/plain")
			if body != "" {
				_, _ = io.WriteString(w, body)
			}
		})
	}
	get := func(url string) (string, error) {
		resp, err := http.Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	cases := []struct {
		name    string
		h       http.Handler
		want    string
		wantErr bool
	}{
		{"work longer than the timeout, then write", WriteDeadline(timeout)(slow("whole page", 3*timeout)), "whole page", false},
		{"work in several writes, each within the timeout", WriteDeadline(timeout)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for i := 0; i < 5; i++ {
				time.Sleep(timeout / 2)
				_, _ = io.WriteString(w, "part ")
				http.NewResponseController(w).Flush()
			}
		})), "part part part part part ", false},
		{"no write at all after long work", WriteDeadline(timeout)(slow("", 3*timeout)), "", false},
		{"without the middleware the timeout is a total deadline", slow("whole page", 3*timeout), "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := serveWith(t, timeout, tc.h)
			got, err := get(srv.URL)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %q, want the connection cut", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}

	t.Run("a client that stops reading is cut off", func(t *testing.T) {
		errc := make(chan error, 1)
		srv := serveWith(t, timeout, WriteDeadline(timeout)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			chunk := bytes.Repeat([]byte("x"), 1<<20)
			for i := 0; i < 256; i++ { // far more than the socket buffers hold
				if _, err := w.Write(chunk); err != nil {
					errc <- err
					return
				}
			}
			errc <- errors.New("256 MiB written to a client that reads nothing")
		})))
		conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_, _ = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		select {
		case err := <-errc:
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Fatalf("write ended with %v, want a timeout", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the write never timed out")
		}
	})
}

func TestWriteDeadlinePanicsOnZero(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a zero timeout")
		}
	}()
	WriteDeadline(0)
}
