package githubemu

import (
	"net/http"
	"testing"
	"time"
)

func TestHoldRequest(t *testing.T) {
	e, _ := start(t)
	h := e.HoldRequest("/repos/octo/docs/contents/README.md")
	get := func() <-chan int {
		done := make(chan int, 1)
		go func() {
			resp, err := http.Get(e.URL() + "/repos/octo/docs/contents/README.md")
			if err != nil {
				done <- 0
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}()
		return done
	}
	first := get()
	select {
	case <-h.Reached():
	case <-time.After(10 * time.Second):
		t.Fatal("the request never reached the hold")
	}
	select {
	case <-first:
		t.Fatal("the held request was answered before its release")
	case <-time.After(100 * time.Millisecond):
	}
	// The next request to the held path is answered at once.
	if status := <-get(); status != http.StatusUnauthorized {
		t.Fatalf("second request: %d (held?)", status)
	}
	h.Release()
	if status := <-first; status != http.StatusUnauthorized {
		t.Fatalf("released request: %d", status)
	}
	h.Release() // twice is fine
}
