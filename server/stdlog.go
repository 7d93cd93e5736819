package server

import (
	"context"
	"log"
	"log/slog"
	"strings"
)

// routeStdLog sends what the standard library writes to the default "log"
// logger into the gateway's JSON log, at warn level, without any quoted
// text. net/http's client writes there, and one of its lines quotes the
// peer: "Unsolicited response received on idle HTTP channel starting with
// %q", the bytes an upstream sent past a complete response. Those are
// upstream bytes, which the gateway never logs
// (docs/architecture.md#middleware-chain; found by the hostile-upstream test
// TestHostileForgejoUpstream in test/e2e); they would also have been a
// plain-text line in a JSON log.
func routeStdLog(l *slog.Logger) {
	log.SetFlags(0)
	log.SetPrefix("")
	log.SetOutput(stdLogWriter{l})
}

// stdLogWriter turns each standard-library log line into one slog record.
type stdLogWriter struct{ l *slog.Logger }

func (w stdLogWriter) Write(p []byte) (int, error) {
	w.l.Log(context.Background(), slog.LevelWarn, stdLogMessage(string(p)), slog.String("source", "go-stdlib"))
	return len(p), nil
}

// stdLogMessage keeps a standard-library log line up to its first quote:
// the library quotes what it got from a peer (%q), and that part is
// withheld.
func stdLogMessage(line string) string {
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "Unsolicited response received on idle HTTP channel") {
		return "an upstream sent bytes after a complete response; the connection was closed (the bytes are not logged)"
	}
	if i := strings.IndexAny(line, "\"`"); i >= 0 {
		return strings.TrimSpace(line[:i]) + " [quoted text withheld]"
	}
	return line
}
