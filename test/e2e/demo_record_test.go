package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-gateway/agent-gateway/test/emurecord"
	"github.com/agent-gateway/agent-gateway/test/gatewaytest"
)

// TestDemoEmulatorRecordsBounded runs the demo binary, reads its emulated
// Forgejo's and GitHub's URLs from the banner, and sends each more
// requests than its request record keeps: first many (more than
// emurecord.MaxRequests, small), then fewer with 16 KiB headers (a quarter
// more than emurecord.MaxHeadBytes in all) and, to Forgejo, which keeps
// bodies, bodies of a quarter more than emurecord.MaxBodyBytes in all. After each phase the emulator's record
// route (emurecord.Path) must tell that it saw every request, kept fewer,
// within every bound, and that the newest it kept is the last one sent;
// after the second, that the bytes, not the count, dropped requests.
func TestDemoEmulatorRecordsBounded(t *testing.T) {
	banner := startDemoBanner(t, gatewaytest.FreeAddr(t))
	origin := func(label string) string {
		re := regexp.MustCompile(`^\s+` + label + `\s+(http://\S+)`)
		for _, line := range banner {
			if m := re.FindStringSubmatch(line); m != nil {
				return m[1]
			}
		}
		t.Fatalf("the banner names no %s:\n%s", label, strings.Join(banner, "\n"))
		return ""
	}
	const workers = 4
	// The large requests' headers and bodies come to a quarter more than
	// their bounds.
	const largeHeader = 16 << 10
	const large = 5 * emurecord.MaxHeadBytes / 4 / largeHeader
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	t.Cleanup(client.CloseIdleConnections)
	for _, e := range []recordLoad{
		{name: "forgejo", origin: origin("emulated Forgejo"), method: "POST",
			path: "/api/v1/repos/demo/gateway/agent-work-grants/1/issues", bodies: true},
		{name: "github", origin: origin("emulated GitHub"), method: "GET",
			path: "/repos/demo/handbook/contents/README.md"},
	} {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			before := e.stats(t, client)
			for _, ph := range []struct {
				name         string
				n            int
				header, body int
			}{
				{"many", emurecord.MaxRequests + 100, 0, 0},
				{"large", large, largeHeader, 5 * emurecord.MaxBodyBytes / 4 / large},
			} {
				last := e.send(t, client, workers, ph.name, ph.n, ph.header, ph.body)
				s := e.stats(t, client)
				t.Logf("after %d %s requests (%s): %+v", ph.n, ph.name, time.Since(start).Round(time.Millisecond), s)
				if s.Seen-before.Seen != ph.n {
					t.Fatalf("the record saw %d requests, %d were sent", s.Seen-before.Seen, ph.n)
				}
				if s.Kept > emurecord.MaxRequests || s.KeptHeadBytes > emurecord.MaxHeadBytes || s.KeptBodyBytes > emurecord.MaxBodyBytes {
					t.Fatalf("the record is over a bound (%d requests, %d head bytes, %d body bytes): %+v",
						emurecord.MaxRequests, emurecord.MaxHeadBytes, emurecord.MaxBodyBytes, s)
				}
				if s.Kept >= s.Seen || s.Newest != last {
					t.Fatalf("the record dropped nothing or not the oldest (the last sent was %q): %+v", last, s)
				}
				if ph.name == "large" && s.Kept >= ph.n {
					t.Fatalf("%d requests of %d header bytes kept: the bytes bound nothing", s.Kept, ph.header)
				}
				before = s
			}
		})
	}
}

// recordLoad is one emulator the test loads: every request is method on
// path, with a query that numbers it, and a body when the emulator records
// bodies.
type recordLoad struct {
	name, origin, method, path string
	bodies                     bool
}

// stats asks the emulator's record route what its record holds.
func (e recordLoad) stats(t *testing.T, client *http.Client) emurecord.Stats {
	t.Helper()
	s, err := emurecord.Get(client, e.origin)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// send makes n requests with an X-Pad header of header bytes and bodies of
// body bytes (when the emulator keeps bodies), from workers goroutines over
// kept-alive connections, then the last one alone, and returns how the
// record names that last one.
func (e recordLoad) send(t *testing.T, client *http.Client, workers int, phase string, n, header, body int) string {
	t.Helper()
	pad := strings.Repeat("h", header)
	var payload []byte
	if e.bodies {
		payload = bytes.Repeat([]byte("b"), body)
	}
	target := func(i int) string { return fmt.Sprintf("%s?load=%s-%d", e.path, phase, i) }
	one := func(i int) error {
		req, err := http.NewRequest(e.method, e.origin+target(i), bytes.NewReader(payload))
		if err != nil {
			return err
		}
		if pad != "" {
			req.Header.Set("X-Pad", pad)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode >= 500 {
			err = fmt.Errorf("%s %s: %s", e.method, target(i), resp.Status)
		}
		return err
	}
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := one(i); err != nil {
					errs <- err
					for range next { // drain, so the producer ends
					}
					return
				}
			}
		}()
	}
	for i := range n - 1 {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if err := one(n - 1); err != nil {
		t.Fatal(err)
	}
	return e.method + " " + target(n-1)
}
