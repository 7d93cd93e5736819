package server

import "io"

// nopCloser and nopWriteCloser let the stdio transport use the process's
// streams without closing them.
type nopCloser struct{ io.Reader }

func (nopCloser) Close() error { return nil }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
