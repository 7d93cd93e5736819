package gatewaytest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"time"
)

// ReadyLine reads the line a helper process announces itself with on its
// stdout (an address, a JSON ready record): at most limit bytes, waiting at
// most within. What the process writes after it is read and dropped in the
// background, so a chatty helper never blocks on a full pipe, and stdout is
// closed at its end. The line comes back without its newline.
//
// A helper that exits, or closes its stdout, before a whole line is an
// error at once, not a hang; one that stays silent is an error after
// within, and the caller, which owns the process, stops it: that ends the
// background read too.
func ReadyLine(stdout io.ReadCloser, limit int64, within time.Duration) ([]byte, error) {
	type result struct {
		line []byte
		err  error
	}
	got := make(chan result, 1)
	go func() {
		defer stdout.Close()
		r := bufio.NewReader(io.LimitReader(stdout, limit))
		line, err := r.ReadBytes('\n')
		if err != nil {
			err = fmt.Errorf("no whole line in the first %d bytes: %q, %w", limit, line, err)
		}
		got <- result{bytes.TrimSuffix(line, []byte("\n")), err}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case g := <-got:
		return g.line, g.err
	case <-time.After(within):
		return nil, fmt.Errorf("no line within %s", within)
	}
}
