package upstream

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

func jsonType(ct string) bool { return ct == "application/json" }

// TestExchange pins each outcome of the one exchange: what reaches the
// upstream, and which neutral error each failure is.
func TestExchange(t *testing.T) {
	noLeaks(t)
	type seen struct {
		method, auth, accept, version, ctype, body string
		getBody, close                             bool
	}
	var got seen
	srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = seen{r.Method, r.Header.Get("Authorization"), r.Header.Get("Accept"), r.Header.Get("X-Api-Version"),
			r.Header.Get("Content-Type"), string(b), r.GetBody != nil, r.Close}
		switch r.URL.Path {
		case "/ok":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, " {\"a\":1} \n")
		case "/created":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"a":2}`)
		case "/refused":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, strings.Repeat("e", 100))
		case "/html":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html>")
		case "/big":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `"`+strings.Repeat("b", 64)+`"`)
		case "/bightml":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, strings.Repeat("h", 64))
		case "/bad":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"a":"x"}`)
		}
	})
	c := clientFor(t, srv.URL, nil)
	base := Exchange{MaxBody: 32, IsJSON: jsonType}
	with := func(f func(x *Exchange)) Exchange { x := base; f(&x); return x }
	refuseBad := func(b []byte) error {
		if strings.Contains(string(b), `"x"`) {
			return errors.New("x is refused")
		}
		return nil
	}

	t.Run("success trims and sends the credential and headers", func(t *testing.T) {
		a, err := c.Exchange(t.Context(), with(func(x *Exchange) {
			x.Segments = []string{"ok"}
			x.Credential = Credential{Token: "tok"}
			x.Header = http.Header{"X-Api-Version": {"v9"}}
		}))
		if err != nil || a.Status != 200 || string(a.Body) != `{"a":1}` {
			t.Fatalf("Exchange = %+v, %v", a, err)
		}
		if got.method != "GET" || got.auth != "Bearer tok" || got.accept != "application/json" || got.version != "v9" {
			t.Fatalf("upstream saw %+v", got)
		}
	})
	t.Run("a closing exchange asks for Connection: close, others keep the connection", func(t *testing.T) {
		for _, closing := range []bool{false, true} {
			if _, err := c.Exchange(t.Context(), with(func(x *Exchange) { x.Segments, x.Close = []string{"ok"}, closing })); err != nil {
				t.Fatal(err)
			}
			if got.close != closing {
				t.Fatalf("Close %v: the upstream saw Connection: close = %v", closing, got.close)
			}
		}
	})
	t.Run("payload is sent once as JSON", func(t *testing.T) {
		v, a, err := ExchangeJSON[struct{ A int }](t.Context(), c, with(func(x *Exchange) {
			x.Method, x.Segments, x.Payload, x.Success = http.MethodPost, []string{"created"}, []byte(`{"p":1}`), []int{201}
		}))
		if err != nil || a.Status != 201 || v.A != 2 {
			t.Fatalf("ExchangeJSON = %+v, %+v, %v", v, a, err)
		}
		if got.method != "POST" || got.ctype != "application/json" || got.body != `{"p":1}` || got.auth != "" {
			t.Fatalf("upstream saw %+v", got)
		}
	})
	for _, tc := range []struct {
		name  string
		x     Exchange
		check func(t *testing.T, err error)
	}{
		{"status outside success keeps header and a bounded body", with(func(x *Exchange) { x.Segments, x.ErrorBody = []string{"refused"}, 200 }),
			func(t *testing.T, err error) {
				var se *StatusError
				if !errors.As(err, &se) || se.Status != 403 || se.Header.Get("Retry-After") != "7" || len(se.Body) != 100 {
					t.Fatalf("err = %#v", err)
				}
			}},
		{"error body over its bound is not kept", with(func(x *Exchange) { x.Segments, x.ErrorBody = []string{"refused"}, 10 }),
			func(t *testing.T, err error) {
				var se *StatusError
				if !errors.As(err, &se) || se.Body != nil {
					t.Fatalf("err = %#v", err)
				}
			}},
		{"error body unread by default", with(func(x *Exchange) { x.Segments = []string{"refused"} }),
			func(t *testing.T, err error) {
				var se *StatusError
				if !errors.As(err, &se) || se.Body != nil {
					t.Fatalf("err = %#v", err)
				}
			}},
		{"media type", with(func(x *Exchange) { x.Segments = []string{"html"} }), wantStage(StageMediaType, 0)},
		{"over MaxBody", with(func(x *Exchange) { x.Segments = []string{"big"} }), wantStage(StageBody, KindTooLarge)},
		{"declared over MaxBody", with(func(x *Exchange) { x.Segments, x.RefuseDeclared = []string{"big"}, true }), wantStage(StageBody, KindTooLarge)},
		{"declared over MaxBody before the media type", with(func(x *Exchange) { x.Segments, x.RefuseDeclared = []string{"bightml"}, true }), wantStage(StageBody, KindTooLarge)},
		{"check refuses", with(func(x *Exchange) { x.Segments, x.Check = []string{"bad"}, refuseBad }), wantStage(StageCheck, 0)},
		{"bad path segment is never sent", with(func(x *Exchange) { x.Segments = []string{".."} }),
			func(t *testing.T, err error) { wantKind(t, err, KindRequest) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Exchange(t.Context(), tc.x)
			tc.check(t, err)
		})
	}
	t.Run("decode", func(t *testing.T) {
		_, _, err := ExchangeJSON[struct{ A int }](t.Context(), c, with(func(x *Exchange) { x.Segments = []string{"bad"} }))
		wantStage(StageDecode, 0)(t, err)
	})
}

func wantStage(stage Stage, kind Kind) func(t *testing.T, err error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var ae *AnswerError
		if !errors.As(err, &ae) || ae.Stage != stage || ae.Status != http.StatusOK {
			t.Fatalf("err = %#v, want an AnswerError at stage %d", err, stage)
		}
		if kind != 0 {
			wantKind(t, ae.Err, kind)
		}
	}
}

// TestCredentialTransport: the credential is attached only by the
// transport, from the request's context, on a clone; a request without one
// carries no Authorization whatever its caller set, and a request for
// another origin is refused before it is sent.
func TestCredentialTransport(t *testing.T) {
	noLeaks(t)
	var auth []string
	srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) { auth = append(auth, r.Header.Get("Authorization")) })
	c := clientFor(t, srv.URL, nil)
	send := func(t *testing.T, req *http.Request) error {
		t.Helper()
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}

	req, _ := c.NewRequest(WithCredential(t.Context(), Credential{Username: "bot", Password: "pw"}), http.MethodGet, nil, nil, "x")
	if err := send(t, req); err != nil {
		t.Fatal(err)
	}
	if req.Header.Get("Authorization") != "" {
		t.Fatal("the caller's request was changed: the transport must attach the credential to a clone")
	}
	req, _ = c.NewRequest(t.Context(), http.MethodGet, nil, nil, "x")
	req.Header.Set("Authorization", "Bearer smuggled")
	if err := send(t, req); err != nil {
		t.Fatal(err)
	}
	inner, _ := c.NewRequest(WithCredential(t.Context(), Credential{Token: "outer"}), http.MethodGet, nil, nil, "x")
	req = inner.WithContext(WithCredential(inner.Context(), Credential{}))
	if err := send(t, req); err != nil {
		t.Fatal(err)
	}
	if len(auth) != 3 || !strings.HasPrefix(auth[0], "Basic ") || auth[1] != "" || auth[2] != "" {
		t.Fatalf("upstream saw Authorization %q, want Basic, none, none", auth)
	}

	// The transport checks the origin itself, not only Do.
	tr := &credentialTransport{origin: c.origin, base: http.DefaultTransport}
	other, _ := http.NewRequestWithContext(WithCredential(t.Context(), Credential{Token: "tok"}), http.MethodGet, "http://127.0.0.1:1/x", nil)
	if _, err := tr.RoundTrip(other); err == nil {
		t.Fatal("the transport sent a credentialed request to another origin")
	} else {
		wantKind(t, err, KindRequest)
	}
	if srv.n.Load() != 3 {
		t.Fatalf("%d requests reached the upstream, want 3", srv.n.Load())
	}
}
