package middleware

import (
	"context"
	"fmt"
	"log/slog"
	"unicode/utf8"
)

// MaxLoggedField is the most bytes of one caller-sent value (a JSON-RPC
// method, a tool name, a path, an HTTP method) the access log writes: a
// 1,040,000-byte method once grew the log by a megabyte per request. A longer
// value is cut, and its full length logged beside it.
const MaxLoggedField = 128

// CappedString is the attribute key=v with v cut to limit bytes (on a
// UTF-8 boundary), followed, when it was cut, by key_bytes with its full
// length, so an operator still sees how big the value was.
func CappedString(key, v string, limit int) []slog.Attr {
	if len(v) <= limit {
		return []slog.Attr{slog.String(key, v)}
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return []slog.Attr{slog.String(key, v[:cut]+"…"), slog.Int(key+"_bytes", len(v))}
}

// CapHandler wraps a slog.Handler so that no attribute value and no
// message it writes is longer than limit bytes, whoever logs it (library
// lines, errors quoting what a caller sent): the backstop behind the
// access log's own per-field cap. Values are turned into text first, so an
// error or a Stringer is capped too.
func CapHandler(h slog.Handler, limit int) slog.Handler {
	if limit <= 0 {
		panic("middleware: CapHandler limit must be positive")
	}
	return capHandler{h: h, limit: limit}
}

type capHandler struct {
	h     slog.Handler
	limit int
}

func (c capHandler) Enabled(ctx context.Context, l slog.Level) bool { return c.h.Enabled(ctx, l) }

func (c capHandler) Handle(ctx context.Context, r slog.Record) error {
	msg := r.Message
	if len(msg) > c.limit {
		msg = CappedString("", msg, c.limit)[0].Value.String()
	}
	out := slog.NewRecord(r.Time, r.Level, msg, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(c.capAttr(a)...)
		return true
	})
	return c.h.Handle(ctx, out)
}

func (c capHandler) WithAttrs(as []slog.Attr) slog.Handler {
	var capped []slog.Attr
	for _, a := range as {
		capped = append(capped, c.capAttr(a)...)
	}
	return capHandler{h: c.h.WithAttrs(capped), limit: c.limit}
}

func (c capHandler) WithGroup(name string) slog.Handler {
	return capHandler{h: c.h.WithGroup(name), limit: c.limit}
}

// capAttr caps one attribute, recursing into groups.
func (c capHandler) capAttr(a slog.Attr) []slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindGroup:
		var inner []any
		for _, g := range v.Group() {
			for _, x := range c.capAttr(g) {
				inner = append(inner, x)
			}
		}
		return []slog.Attr{slog.Group(a.Key, inner...)}
	case slog.KindString:
		return CappedString(a.Key, v.String(), c.limit)
	case slog.KindAny:
		s := fmt.Sprint(v.Any())
		if len(s) > c.limit {
			return CappedString(a.Key, s, c.limit)
		}
	}
	return []slog.Attr{{Key: a.Key, Value: v}}
}
