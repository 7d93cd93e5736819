package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestRedactRedisError: whatever is wrong with a Redis URL, the error
// names the problem and never the URL's credentials.
func TestRedactRedisError(t *testing.T) {
	for _, raw := range []string{
		"redis://:SECRET@127.0.0.1:notaport/15",
		"redis://user:SECRET@127.0.0.1:6379/notadb",
		"redis://user:SECRET@127.0.0.1:6379/0?dial_timeout=SECRET",
		"rediss://:SECRET@[::1:6379/0",
		"redis://:SECRET%zz@127.0.0.1:6379/0",
		"redis://SECRET@127.0.0.1:x/0",
	} {
		t.Run(raw, func(t *testing.T) {
			_, err := redis.ParseURL(raw)
			if err == nil {
				t.Fatal("parsed")
			}
			msg := redactRedisError(raw, err)
			if msg == "" || strings.Contains(msg, "SECRET") {
				t.Fatalf("%q (from %q)", msg, err)
			}
		})
	}
	if got := redactRedisError("redis://h:1/0", errors.New("plain")); got != "plain" {
		t.Fatalf("%q", got)
	}
}

// TestRedisLogIsJSON: a go-redis log line becomes one JSON record.
func TestRedisLogIsJSON(t *testing.T) {
	var buf bytes.Buffer
	redisLog{slog.New(slog.NewJSONHandler(&buf, nil))}.Printf(t.Context(), "redis: connection pool: failed to dial after %d attempts: %v", 5, errors.New("refused"))
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("%q: %v", buf.String(), err)
	}
	if line["source"] != "go-redis" || line["level"] != "WARN" || !strings.Contains(line["msg"].(string), "failed to dial after 5 attempts") {
		t.Fatalf("%v", line)
	}
}
