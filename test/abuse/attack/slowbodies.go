// Package attack holds the hostile callers of the abuse run (test/abuse)
// and of the hostile-load end-to-end tests: each is bounded in count and
// time, talks only to the loopback address it is given, and stops by
// itself.
package attack

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SlowBodies describes the slow-body attack of the hostile-load run: Conns
// connections from Source each declare a Size-byte body to Path, send all of
// it but the last Withhold bytes (ten when zero; Size sends none), and stall
// until Hold has passed or the gateway answers or closes.
type SlowBodies struct {
	Addr   string // host:port of the gateway, on loopback
	Source string // loopback source address, e.g. 127.0.0.66 ("" for any)
	Path   string
	Conns  int
	Size   int
	Hold   time.Duration
	Header http.Header // extra request headers (a Content-Type replaces JSON)
	// Withhold is how many bytes at the end of the body are never sent.
	Withhold int
}

// SlowBodyResult says how the gateway dealt with the connections.
type SlowBodyResult struct {
	// Answered counts the responses by status; RetryAfter those carrying
	// Retry-After.
	Answered   map[int]int
	RetryAfter int
	// Closed connections were closed by the gateway without an answer;
	// Held were still open, unanswered, when Hold passed; DialFailed were
	// never opened.
	Closed, Held, DialFailed int
}

// Run performs the attack and waits for every connection to end.
func (a SlowBodies) Run(ctx context.Context) SlowBodyResult {
	ctx, cancel := context.WithTimeout(ctx, a.Hold)
	defer cancel()
	res := SlowBodyResult{Answered: map[int]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range a.Conns {
		wg.Go(func() {
			status, retry, outcome := a.one(ctx)
			mu.Lock()
			defer mu.Unlock()
			switch outcome {
			case "answered":
				res.Answered[status]++
				if retry {
					res.RetryAfter++
				}
			case "closed":
				res.Closed++
			case "held":
				res.Held++
			default:
				res.DialFailed++
			}
		})
	}
	wg.Wait()
	return res
}

func (a SlowBodies) one(ctx context.Context) (int, bool, string) {
	d := net.Dialer{Timeout: 5 * time.Second}
	if a.Source != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(a.Source)}
	}
	conn, err := d.DialContext(ctx, "tcp", a.Addr)
	if err != nil {
		return 0, false, "dial"
	}
	defer conn.Close()
	var head strings.Builder
	head.WriteString("POST " + a.Path + " HTTP/1.1\r\nHost: " + a.Addr + "\r\n")
	if a.Header.Get("Content-Type") == "" {
		head.WriteString("Content-Type: application/json\r\n")
	}
	head.WriteString("Accept: application/json, text/event-stream\r\nContent-Length: " + strconv.Itoa(a.Size) + "\r\n")
	for k, vs := range a.Header {
		for _, v := range vs {
			head.WriteString(k + ": " + v + "\r\n")
		}
	}
	head.WriteString("\r\n")
	type answer struct {
		status int
		retry  bool
		err    error
	}
	answers := make(chan answer, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			answers <- answer{err: err}
			return
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		answers <- answer{status: resp.StatusCode, retry: resp.Header.Get("Retry-After") != ""}
	}()
	go func() {
		if _, err := io.WriteString(conn, head.String()); err != nil {
			return
		}
		chunk := make([]byte, 32<<10)
		for i := range chunk {
			chunk[i] = ' '
		}
		withhold := a.Withhold
		if withhold == 0 {
			withhold = 10
		}
		for left := a.Size - withhold; left > 0 && ctx.Err() == nil; {
			n := min(left, len(chunk))
			if _, err := conn.Write(chunk[:n]); err != nil {
				return
			}
			left -= n
		}
	}()
	select {
	case ans := <-answers:
		if ans.err != nil {
			return 0, false, "closed"
		}
		return ans.status, ans.retry, "answered"
	case <-ctx.Done():
		return 0, false, "held"
	}
}
