// Package admin is the `agent-gateway admin` command line: the only
// writer of the allowlist, consents and tokens
// (docs/architecture.md#documents-contract). It runs once per
// invocation against the store the gateway uses, never at request time, so
// it lives apart from the server's wiring and the request handlers.
package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/web"
)

// UsageError is a command line the admin CLI refuses before touching the
// store; Main exits 2 on it.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// adminCommand is one `agent-gateway admin` subcommand: it declares its
// flags on fs and returns the action to run once they are parsed.
type adminCommand struct {
	name    string
	summary string
	setup   func(fs *flag.FlagSet) func(ctx context.Context, a *adminRun) error
}

// adminEarlierNames maps a command's earlier name to its name now. The
// earlier names stay accepted so that operators' scripts keep working, and
// the usage shows each beside the name that replaced it.
var adminEarlierNames = map[string]string{
	"create-grant": "create-consent",
	"list-grants":  "list-consents",
	"revoke-grant": "revoke-consent",
}

// adminRun is what an action works with: the store, the output, and the
// scopes the gateway's tools check.
type adminRun struct {
	st     store.Store
	out    io.Writer
	json   bool
	scopes []string
}

// adminCommands is the whole admin surface. There is no model-facing write:
// the allowlist, consents and tokens change only here
// (docs/architecture.md#documents-contract).
var adminCommands = []adminCommand{
	{"create-account", "create an account (projects belong to one; the default account is used otherwise)", adminCreateAccount},
	{"create-project", "create a project, the tenant boundary of the documents toolset", adminCreateProject},
	{"list-projects", "list projects", adminListProjects},
	{"add-member", "allow an OIDC subject to hold consents for a project", adminAddMember},
	{"link-repository", "link a GitHub repository to a project through an App installation", adminLinkRepository},
	{"list-repositories", "list a project's linked repositories", adminListRepositories},
	{"revoke-repository", "unlink a repository and revoke its document sources", adminRevokeRepository},
	{"add-document-source", "allowlist one document of a linked repository at a commit (or tracking a branch)", adminAddDocumentSource},
	{"list-document-sources", "list a project's document sources", adminListDocumentSources},
	{"revoke-document-source", "revoke a document source", adminRevokeDocumentSource},
	{"issue-legacy-token", "issue a legacy static project token (memory/task only; prints it once)", adminIssueLegacyToken},
	{"revoke-legacy-token", "revoke a legacy project token", adminRevokeLegacyToken},
	{"create-consent", "record an OAuth consent for a project member and print an access token once", adminCreateConsent},
	{"issue-access-token", "issue another access token under an active consent (prints it once)", adminIssueAccessToken},
	{"list-consents", "list a project's OAuth consents", adminListConsents},
	{"revoke-consent", "revoke an OAuth consent and every token issued under it", adminRevokeConsent},
	{"list-clients", "list registered OAuth clients (--unused: those that never obtained a token)", adminListClients},
	{"delete-client", "delete an OAuth client registration and revoke its consents", adminDeleteClient},
}

func adminUsage() string {
	var b strings.Builder
	b.WriteString("usage: agent-gateway admin <command> [flags]\n\ncommands:\n")
	for _, c := range adminCommands {
		summary := c.summary
		for was, now := range adminEarlierNames {
			if now == c.name {
				summary += " (was " + was + ")"
			}
		}
		fmt.Fprintf(&b, "  %-26s %s\n", c.name, summary)
	}
	fmt.Fprintf(&b, "  %-26s %s\n", "audit list|verify|export|public-key|purge", "list, check, export, name the key of or purge the audit record (docs/audit.md)")
	b.WriteString("\nEvery command also takes --config FILE, --data-dir DIR and --json; the store is the one\n" +
		"the gateway uses (database.url, or SQLite in data_dir). Run \"agent-gateway admin <command> -h\" for its flags.\n")
	return b.String()
}

// OpenStore opens the store the gateway is configured with, given the
// --config and --data-dir arguments the command line named (the server
// package's loader; admin does not import it, which imports admin).
type OpenStore func(ctx context.Context, loadArgs []string, stderr io.Writer) (store.Store, error)

// Target is the gateway the admin commands administer, as the server
// package describes it (admin does not import it, which imports admin).
type Target struct {
	// OpenStore opens its store.
	OpenStore OpenStore
	// Scopes are the scopes its tools check, derived from the tools'
	// definitions; create-consent notes any other scope it is given, which
	// a consent stores but no tool checks.
	Scopes []string
	// AuditKey reads the audit signing key's public half (admin audit).
	AuditKey AuditKey
}

// Run runs one admin command against the target's store, writing its
// result to out and flag errors to errOut.
func Run(ctx context.Context, args []string, out, errOut io.Writer, target Target) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(out, adminUsage())
		if len(args) == 0 {
			return &UsageError{Msg: "admin: name a command"}
		}
		return nil
	}
	if args[0] == "audit" {
		return runAudit(ctx, args[1:], out, errOut, target)
	}
	var cmd *adminCommand
	for i := range adminCommands {
		if name := adminCommands[i].name; name == args[0] || name == adminEarlierNames[args[0]] {
			cmd = &adminCommands[i]
		}
	}
	if cmd == nil {
		return &UsageError{Msg: fmt.Sprintf("admin: unknown command %q\n\n%s", args[0], adminUsage())}
	}
	fs := flag.NewFlagSet("agent-gateway admin "+cmd.name, flag.ContinueOnError)
	configFile := fs.String("config", "", "YAML configuration file (for database.url and data_dir)")
	dataDir := fs.String("data-dir", "", "data directory (data_dir)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	action := cmd.setup(fs)
	if err := ParseFlags(fs, args[1:], out, errOut); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("admin %s: %w", cmd.name, err)
	}
	if fs.NArg() > 0 {
		return &UsageError{Msg: fmt.Sprintf("admin %s: unexpected argument %q", cmd.name, fs.Arg(0))}
	}
	var loadArgs []string
	if *configFile != "" {
		loadArgs = append(loadArgs, "--config", *configFile)
	}
	if *dataDir != "" {
		loadArgs = append(loadArgs, "--data-dir", *dataDir)
	}
	st, err := target.OpenStore(ctx, loadArgs, errOut)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := action(ctx, &adminRun{st: st, out: out, json: *asJSON, scopes: target.Scopes}); err != nil {
		var ue *UsageError
		if errors.As(err, &ue) {
			return &UsageError{Msg: "admin " + cmd.name + ": " + ue.Msg}
		}
		return fmt.Errorf("admin %s: %w", cmd.name, err)
	}
	return nil
}

// required refuses empty required flags, naming them all at once.
func required(flags map[string]*string) error {
	var missing []string
	for name, v := range flags {
		if *v == "" {
			missing = append(missing, "--"+name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return &UsageError{Msg: "missing " + strings.Join(missing, ", ")}
	}
	return nil
}

// field is one printed member: its JSON key and value.
type field struct {
	key   string
	value any
}

// print writes one record: "key  value" lines for people, or one JSON
// object with --json.
func (a *adminRun) print(fields ...field) error {
	if a.json {
		obj := make(map[string]any, len(fields))
		for _, f := range fields {
			obj[f.key] = f.value
		}
		return a.writeJSON(obj)
	}
	tw := tabwriter.NewWriter(a.out, 0, 0, 2, ' ', 0)
	for _, f := range fields {
		fmt.Fprintf(tw, "%s\t%s\n", f.key, web.Visible(human(f.value)))
	}
	return tw.Flush()
}

// writeJSON writes v as one line of JSON in which every character a
// terminal would hide or reorder (web.Hidden: bidirectional controls,
// zero-width characters, C1 controls and DEL, which encoding/json writes
// raw) is a \u escape: the same JSON value, but an operator reading the
// output sees a client name's U+202E as \u202e, not text turned around.
func (a *adminRun) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = a.out.Write(append(visibleJSON(b), '\n'))
	return err
}

// visibleJSON escapes web.Hidden characters in encoded JSON. Outside
// strings JSON is ASCII, so every such character is inside a string, where
// \uXXXX (a surrogate pair above U+FFFF) stands for it exactly.
func visibleJSON(b []byte) []byte {
	if !bytes.ContainsFunc(b, web.Hidden) {
		return b
	}
	out := make([]byte, 0, len(b)+32)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		switch {
		case web.Hidden(r) && r > 0xFFFF:
			hi, lo := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, hi, lo)
		case web.Hidden(r):
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}

// printList writes records: a JSON array with --json, else blocks
// separated by blank lines.
// records renders each item of a list with its field function.
func records[T any](items []T, fields func(T) []field) [][]field {
	out := make([][]field, 0, len(items))
	for _, it := range items {
		out = append(out, fields(it))
	}
	return out
}

func (a *adminRun) printList(records [][]field) error {
	if a.json {
		arr := make([]map[string]any, 0, len(records))
		for _, fields := range records {
			obj := make(map[string]any, len(fields))
			for _, f := range fields {
				obj[f.key] = f.value
			}
			arr = append(arr, obj)
		}
		return a.writeJSON(arr)
	}
	if len(records) == 0 {
		_, err := fmt.Fprintln(a.out, "(none)")
		return err
	}
	for i, fields := range records {
		if i > 0 {
			fmt.Fprintln(a.out)
		}
		if err := a.print(fields...); err != nil {
			return err
		}
	}
	return nil
}

func human(v any) string {
	switch v := v.(type) {
	case nil:
		return "-"
	case *string:
		if v == nil {
			return "-"
		}
		return *v
	case *time.Time:
		if v == nil {
			return "-"
		}
		return v.UTC().Format(time.RFC3339)
	case time.Time:
		return v.UTC().Format(time.RFC3339)
	case []string:
		return strings.Join(v, " ")
	}
	return fmt.Sprint(v)
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// project checks that a project exists, so every command names a missing
// one the same way.
func (a *adminRun) project(ctx context.Context, id string) (store.Project, error) {
	p, err := a.st.GetProject(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return p, fmt.Errorf("project %q does not exist (create it with admin create-project)", id)
	}
	return p, err
}

// ParseFlags parses args with fs for any subcommand. Asked for with -h or
// --help, the usage goes to out (it is the answer: flag.ErrHelp, exit 0);
// a bad flag is a *UsageError holding the error and the usage, which the
// caller prints on errOut with exit 2.
func ParseFlags(fs *flag.FlagSet, args []string, out, errOut io.Writer) error {
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	defer fs.SetOutput(errOut)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		_, _ = out.Write(buf.Bytes())
		return err
	case err != nil:
		return &UsageError{Msg: strings.TrimSuffix(buf.String(), "\n")}
	}
	return nil
}
