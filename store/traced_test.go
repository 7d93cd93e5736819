package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
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

// untracedMethods are the Store methods Traced passes through without a
// span, on purpose: readiness probes and shutdown are no part of a call.
var untracedMethods = map[string]bool{"Ping": true, "ProbeWrite": true, "PoolStats": true, "Close": true}

// TestTracedCoversEveryMethod walks the Store interface by reflection and
// calls each method of Traced inside a recording span. The inner store is
// itself Traced over a store that panics on every call, so each call shows
// both whether the outer layer started exactly one span named
// store.<Method>, and whether it handed that span's context on (the inner
// layer's span must be its child). A method traced under the wrong name,
// passed through untraced, or given the caller's context instead of the
// span's fails here; Ping, ProbeWrite, PoolStats and Close (readiness and metrics) must start none.
func TestTracedCoversEveryMethod(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	inner := Traced(struct{ Store }{}, tp.Tracer("inner"), "inner")
	st := reflect.ValueOf(Traced(inner, tp.Tracer("outer"), "sqlite"))
	storeType := reflect.TypeFor[Store]()
	if storeType.NumMethod() < 10 {
		t.Fatalf("Store has %d methods: the walk reads the wrong type", storeType.NumMethod())
	}
	for i := range storeType.NumMethod() {
		m := storeType.Method(i)
		t.Run(m.Name, func(t *testing.T) {
			ctx, root := tp.Tracer("test").Start(context.Background(), "call")
			defer root.End()
			before := len(rec.Started())
			callWithZeroArgs(ctx, st.MethodByName(m.Name))
			var spans []sdktrace.ReadWriteSpan
			for _, s := range rec.Started()[before:] {
				if s.SpanContext().TraceID() == root.SpanContext().TraceID() {
					spans = append(spans, s)
				}
			}
			if untracedMethods[m.Name] {
				if len(spans) != 0 {
					t.Fatalf("%s started %d spans, want none", m.Name, len(spans))
				}
				return
			}
			want := "store." + m.Name
			if len(spans) != 2 {
				t.Fatalf("%d spans (outer and inner layer), want 2 named %s: %v", len(spans), want, spanNames(spans))
			}
			outer, in := spans[0], spans[1]
			if outer.Name() != want || in.Name() != want {
				t.Fatalf("spans %v, want both %s", spanNames(spans), want)
			}
			if outer.Parent().SpanID() != root.SpanContext().SpanID() {
				t.Errorf("the span is not a child of the call's span")
			}
			if in.Parent().SpanID() != outer.SpanContext().SpanID() {
				t.Errorf("the store was not called with the span's context")
			}
			attrs := map[string]string{}
			for _, kv := range outer.Attributes() {
				attrs[string(kv.Key)] = kv.Value.String()
			}
			if attrs["db.operation.name"] != m.Name || attrs["db.system"] != "sqlite" {
				t.Errorf("attributes %v", attrs)
			}
		})
	}
}

// callWithZeroArgs calls a Store method with ctx and zero values for the
// rest, recovering the innermost store's panic.
func callWithZeroArgs(ctx context.Context, method reflect.Value) {
	defer func() { _ = recover() }()
	mt := method.Type()
	in := []reflect.Value{}
	n := mt.NumIn()
	if mt.IsVariadic() {
		n-- // no variadic values
	}
	for i := range n {
		if i == 0 && mt.In(0) == reflect.TypeFor[context.Context]() {
			in = append(in, reflect.ValueOf(ctx))
			continue
		}
		in = append(in, reflect.Zero(mt.In(i)))
	}
	method.Call(in)
}

func spanNames(spans []sdktrace.ReadWriteSpan) []string {
	var names []string
	for _, s := range spans {
		names = append(names, s.Name())
	}
	return names
}
