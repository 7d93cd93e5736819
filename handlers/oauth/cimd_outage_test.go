package oauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/httprate"

	"github.com/agent-gateway/agent-gateway/middleware"
)

// downCounter is a rate counter whose store does not answer (Redis
// unreachable).
type downCounter struct{}

var errRedisDown = errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")

func (downCounter) Config(int, time.Duration)                          {}
func (downCounter) Increment(string, time.Time) error                  { return errRedisDown }
func (downCounter) IncrementBy(string, time.Time, int) error           { return errRedisDown }
func (downCounter) Get(string, time.Time, time.Time) (int, int, error) { return 0, 0, errRedisDown }

// TestClientMetadataBudgetStoreDown: with the fetch rates' counters
// failing, a lookup that would fetch is refused — fail closed, nothing
// fetched — as the budget store's unavailability, not as a spent rate: the
// token endpoint's answer is 503 temporarily_unavailable naming the budget
// store with Retry-After: 1, never 429 "too many client metadata
// documents", and the lookup is observed as budget_store_unavailable.
func TestClientMetadataBudgetStoreDown(t *testing.T) {
	srv, fetches := anyDocumentServer(t)
	var results []string
	f := newMetadataFetcher(ClientMetadataConfig{
		Hosts: []string{"127.0.0.1"}, AllowLoopback: true, Ports: []int{srv.Listener.Addr().(*net.TCPAddr).Port},
		RootCAs:          srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs,
		FetchesPerMinute: 3, TotalFetchesPerMinute: 5,
		Observe: func(r string) { results = append(results, r) },
	}, nil, func(string) httprate.LimitCounter { return downCounter{} })
	ctx := context.WithValue(context.Background(), fetchAddressKey{}, "203.0.113.1")
	_, err := f.get(ctx, fmt.Sprintf("%s/client.json", srv.URL))
	if err == nil || errors.Is(err, errMetadataRate) || !errors.Is(err, middleware.ErrUnavailable) {
		t.Fatalf("lookup with the budget store down: %v, want the budget store's unavailability", err)
	}
	if n := fetches.Load(); n != 0 {
		t.Fatalf("%d fetches with the budget store down, want none", n)
	}
	if len(results) != 1 || results[0] != lookupBudgetStoreDown {
		t.Fatalf("observed %v, want [%s]", results, lookupBudgetStoreDown)
	}
	w := httptest.NewRecorder()
	if !writeMetadataRefusal(w, err) {
		t.Fatal("the refusal was not written")
	}
	body := w.Body.String()
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" ||
		!strings.Contains(body, `"temporarily_unavailable"`) || !strings.Contains(body, "the budget store is unavailable") || strings.Contains(body, "Too many") {
		t.Fatalf("answer %d (Retry-After %q): %s", w.Code, w.Header().Get("Retry-After"), body)
	}
}
