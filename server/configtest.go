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

// demoPreflight is what `demo` does before it builds or starts anything,
// in both builds: --help prints the flags (usage on stdout, flag.ErrHelp),
// a configuration Load refuses is reported, and --config-test checks the
// configuration, prints it and the settings the demo replaces, and is
// done. done is false when the demo should start.
func demoPreflight(args []string, std Stdio) (done bool, err error) {
	loaded, err := Load(LoadOptions{Command: "demo", Args: args, Stdout: std.Out, Stderr: std.Err})
	if err != nil {
		return true, err
	}
	if !loaded.ConfigTest {
		return false, nil
	}
	if err := printConfig(std.Out, &loaded.Config); err != nil {
		return true, err
	}
	fmt.Fprintln(std.Out, "the demo replaces forgejo.origin, github.api_origin, github.app_id, github.private_key_file and oidc.* with its emulators when it starts, and data_dir (when left at its default) with a temporary directory")
	return true, nil
}
