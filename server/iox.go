package server

import (
	"fmt"
	"io"
	"os"
)

// nopWriteCloser lets the stdio transport use the process's stdout without
// closing it.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// The bounds of the files the process reads at start: a secret or token
// is a line, a config file a page or two. A path pointed at /dev/zero or a
// huge file is refused, not read into memory.
const (
	maxSecretFileBytes = 64 << 10
	maxConfigFileBytes = 1 << 20
)

// readFileBounded reads the file at path, refusing one over limit bytes.
// The error names the file and the bound, never its content.
func readFileBounded(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%s: over %d bytes", path, limit)
	}
	return b, nil
}
