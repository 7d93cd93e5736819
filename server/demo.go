package server

import (
	"context"
	"errors"
)

func runDemo(ctx context.Context, args []string, std Stdio) error {
	return errors.New("demo: not wired yet")
}
