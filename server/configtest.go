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
	if half := c.halfConfiguredApp(); half != "" {
		fmt.Fprintln(w, "warning:", half)
	}
	return nil
}

// halfConfiguredApp says what is missing when one of the GitHub App's two
// settings is set without the other; "" when both or neither are. The
// gateway starts so (the documents toolset answers provider_unconfigured)
// and logs it; --config-test prints it.
func (c *Config) halfConfiguredApp() string {
	const effect = "the GitHub App is half configured, and every document read answers provider_unconfigured"
	switch {
	case c.GitHubAppID != 0 && c.GitHubAppKeyFile == "":
		return "github.app_id (HEYAIRA_GITHUB_APP_ID, AGENT_GATEWAY_GITHUB_APP_ID) is set but github.private_key_file (HEYAIRA_GITHUB_APP_PRIVATE_KEY_FILE, AGENT_GATEWAY_GITHUB_PRIVATE_KEY_FILE) is not: " + effect
	case c.GitHubAppID == 0 && c.GitHubAppKeyFile != "":
		return "github.private_key_file is set but github.app_id (HEYAIRA_GITHUB_APP_ID, AGENT_GATEWAY_GITHUB_APP_ID) is not: " + effect
	}
	return ""
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
