package server

import "io"

// nopWriteCloser lets the stdio transport use the process's stdout without
// closing it.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
