package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// tokenStore answers GetToken only; the embedded nil Store panics on
// anything else, so the test proves which method the decorator called.
type tokenStore struct {
	Store
	err error
	got string
}

func (s *tokenStore) GetToken(_ context.Context, hash string) (TokenRecord, error) {
	s.got = hash
	return TokenRecord{}, s.err
}

func TestTraced(t *testing.T) {
	cases := []struct {
		name      string
		parent    bool
		err       error
		wantSpans int
		wantClass string
	}{
		{"inside a call", true, nil, 1, ""},
		{"not found is a class, not a failure", true, fmt.Errorf("token: %w", ErrNotFound), 1, "not_found"},
		{"other errors by class only", true, errors.New("sqlite: disk I/O error near hash-secret"), 1, "error"},
		{"no span outside a call", false, nil, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			inner := &tokenStore{err: tc.err}
			st := Traced(inner, tp.Tracer("test"), "sqlite")
			ctx := context.Background()
			if tc.parent {
				c, s := tp.Tracer("test").Start(ctx, "call")
				defer s.End()
				ctx = c
			}
			if _, err := st.GetToken(ctx, "hash-secret"); !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v passed through", err, tc.err)
			}
			if inner.got != "hash-secret" {
				t.Fatal("the argument did not reach the store")
			}
			spans := rec.Ended()
			if len(spans) != tc.wantSpans {
				t.Fatalf("%d spans, want %d", len(spans), tc.wantSpans)
			}
			if tc.wantSpans == 0 {
				return
			}
			s := spans[0]
			attrs := map[string]string{}
			for _, kv := range s.Attributes() {
				attrs[string(kv.Key)] = kv.Value.String()
			}
			if s.Name() != "store.GetToken" || attrs["db.system"] != "sqlite" || attrs["db.operation.name"] != "GetToken" || attrs["error.type"] != tc.wantClass {
				t.Errorf("span %q attributes %v", s.Name(), attrs)
			}
			texts := []string{s.Name(), s.Status().Description}
			for _, v := range attrs {
				texts = append(texts, v)
			}
			for _, v := range texts {
				if strings.Contains(v, "hash-secret") {
					t.Errorf("the span carries the argument or the error message: %q", v)
				}
			}
		})
	}
}
