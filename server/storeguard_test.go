package server

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/handlers/oauth"
	"github.com/agent-gateway/agent-gateway/middleware"
	"github.com/agent-gateway/agent-gateway/store"
)

// failingSources is a documents.Sources whose reads fail with err,
// counting the calls that reached it.
type failingSources struct {
	err   error
	calls int
}

func (f *failingSources) GetDocumentSource(context.Context, string, string) (store.DocumentSource, error) {
	f.calls++
	return store.DocumentSource{}, f.err
}

func (f *failingSources) ListDocumentSources(context.Context, string, bool) ([]store.DocumentSource, error) {
	f.calls++
	return nil, f.err
}

// TestStoreGuard: a store read that fails is the store's unavailability
// and opens the breaker, so the next read fails at once without reaching
// the store; the store's answers (a missing row, a refused input) pass
// through unchanged and open nothing; a failing write is named but opens
// nothing either (a full disk does not stop reads).
func TestStoreGuard(t *testing.T) {
	ctx := context.Background()
	t.Run("failure", func(t *testing.T) {
		b := middleware.NewBreaker(time.Hour, nil)
		f := &failingSources{err: errors.New("dial tcp 127.0.0.1:5432: connection refused")}
		s := guardedSources{storeGuard{b}, f}
		for i := range 2 {
			_, err := s.ListDocumentSources(ctx, "p", false)
			var de *middleware.DependencyError
			if !errors.As(err, &de) || de.Part != middleware.PartStore {
				t.Fatalf("read %d: %v, want the store's unavailability", i, err)
			}
		}
		if f.calls != 1 || !b.Open() {
			t.Fatalf("%d reads reached the store (breaker open: %v), want 1 and the breaker open", f.calls, b.Open())
		}
	})
	for _, answer := range []error{store.ErrNotFound, fmt.Errorf("source_id: %w", store.ErrInvalid)} {
		t.Run(answer.Error(), func(t *testing.T) {
			b := middleware.NewBreaker(time.Hour, nil)
			f := &failingSources{err: answer}
			_, err := guardedSources{storeGuard{b}, f}.GetDocumentSource(ctx, "p", "s")
			if !errors.Is(err, answer) || errors.Is(err, middleware.ErrUnavailable) || b.Open() {
				t.Fatalf("%v (breaker open: %v), want the answer as it is", err, b.Open())
			}
		})
	}
	t.Run("write", func(t *testing.T) {
		b := middleware.NewBreaker(time.Hour, nil)
		c := guardedCatalog{storeGuard{b}, failingCatalog{errors.New("sqlite: disk I/O error")}}
		if _, err := c.CreateWorkflow(ctx, store.NewWorkflow{}); !errors.Is(err, middleware.ErrUnavailable) || b.Open() {
			t.Fatalf("%v (breaker open: %v), want the store named and the breaker closed", err, b.Open())
		}
	})
	// While reads have found the store down, a registration fails at once
	// without reaching it.
	t.Run("write while the store is down", func(t *testing.T) {
		b := middleware.NewBreaker(time.Hour, nil)
		f := &failingSources{err: errors.New("dial tcp 127.0.0.1:5432: connection refused")}
		_, _ = guardedSources{storeGuard{b}, f}.ListDocumentSources(ctx, "p", false)
		reg := &countingRegistrar{}
		_, _, err := guardedOAuthStore{Store: reg, guard: storeGuard{b}}.RegisterClientCapped(ctx, "c", nil, 0)
		if !errors.Is(err, middleware.ErrBreakerOpen) || !errors.Is(err, middleware.ErrUnavailable) || reg.calls != 0 {
			t.Fatalf("%v after %d calls, want the store's unavailability without a call", err, reg.calls)
		}
	})
}

// countingRegistrar is an oauth.Store whose registrations are counted;
// nothing else of it is called.
type countingRegistrar struct {
	oauth.Store
	calls int
}

func (c *countingRegistrar) RegisterClientCapped(context.Context, string, []string, int) (store.Client, int64, error) {
	c.calls++
	return store.Client{}, 0, nil
}

// failingCatalog is an instructions.Store whose every call fails with err.
type failingCatalog struct{ err error }

func (f failingCatalog) ListProfiles(context.Context, string, string) ([]store.CatalogProfile, error) {
	return nil, f.err
}

func (f failingCatalog) CatalogPlan(context.Context, string, string) (store.CatalogPlan, error) {
	return store.CatalogPlan{}, f.err
}

func (f failingCatalog) CreateWorkflow(context.Context, store.NewWorkflow) (store.Workflow, error) {
	return store.Workflow{}, f.err
}

func (f failingCatalog) GetWorkflow(context.Context, string, string) (store.Workflow, error) {
	return store.Workflow{}, f.err
}

// TestOAuthStoreGuarded: while the store's breaker is cooling, every call
// of the authorization server's store — reads and writes alike, whichever
// endpoint makes it — fails at once as the store's unavailability without
// reaching the store (here a nil one: a call that went through would
// panic). A method added to oauth.Store and left unguarded fails this.
func TestOAuthStoreGuarded(t *testing.T) {
	b := middleware.NewBreaker(time.Hour, nil)
	_ = b.Do(func() error { return errors.New("dial tcp 127.0.0.1:5432: connection refused") }, nil)
	guarded := reflect.ValueOf(guardedOAuthStore{guard: storeGuard{b}})
	ctxType := reflect.TypeFor[context.Context]()
	iface := reflect.TypeFor[oauth.Store]()
	for i := range iface.NumMethod() {
		name := iface.Method(i).Name
		t.Run(name, func(t *testing.T) {
			m := guarded.MethodByName(name)
			args := make([]reflect.Value, m.Type().NumIn())
			for j := range args {
				if in := m.Type().In(j); in == ctxType {
					args[j] = reflect.ValueOf(context.Background())
				} else {
					args[j] = reflect.Zero(in)
				}
			}
			var out []reflect.Value
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("reached the store while the breaker is open: %v", r)
					}
				}()
				if m.Type().IsVariadic() {
					out = m.CallSlice(args)
				} else {
					out = m.Call(args)
				}
			}()
			err, _ := out[len(out)-1].Interface().(error)
			if !errors.Is(err, middleware.ErrBreakerOpen) || !errors.Is(err, middleware.ErrUnavailable) {
				t.Fatalf("%v, want the store's unavailability at once", err)
			}
		})
	}
}
