package server

import (
	"fmt"
	"io"
)

// printConfig prints the effective configuration for --config-test: every
// setting in table order, each as its row shows it, every secret replaced
// by whether it is set.
func printConfig(w io.Writer, c *Config) error {
	fmt.Fprintln(w, "configuration OK")
	for _, s := range settings {
		fmt.Fprintf(w, "  %-28s %s\n", s.key, s.printed(c))
	}
	return nil
}
