package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
)

// redisLog routes go-redis's own log lines (a pool that cannot dial, a
// connection dropped) into the gateway's JSON log at warn level; go-redis
// otherwise writes plain-text lines to stderr, breaking a JSON log.
type redisLog struct{ l *slog.Logger }

// Printf implements go-redis's internal.Logging.
func (r redisLog) Printf(ctx context.Context, format string, v ...any) {
	msg := strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: ")
	r.l.LogAttrs(ctx, slog.LevelWarn, "redis client: "+msg, slog.String("source", "go-redis"))
}

// setRedisLogger installs the JSON logger in go-redis, which holds one
// logger per process.
var setRedisLogger sync.Once

// redactRedisError is the text of a ratelimit.redis_url parse error without
// the URL's credentials. url.Parse quotes the whole URL in its errors
// (`parse "redis://:SECRET@…": invalid port`), and the URL may carry a
// password, so the quoted URL is dropped and any userinfo still in the
// text is replaced, like database.url's errors.
func redactRedisError(raw string, err error) string {
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		msg = ue.Err.Error()
	}
	if _, rest, ok := strings.Cut(raw, "://"); ok {
		host := rest
		if i := strings.IndexAny(host, "/?#"); i >= 0 {
			host = host[:i]
		}
		if i := strings.LastIndex(host, "@"); i >= 0 {
			if userinfo := host[:i]; userinfo != "" {
				msg = strings.ReplaceAll(msg, userinfo, "[redacted]")
				if _, pw, ok := strings.Cut(userinfo, ":"); ok && pw != "" {
					msg = strings.ReplaceAll(msg, pw, "[redacted]")
				}
			}
		}
	}
	return msg
}
