package admin

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agent-gateway/agent-gateway/store"
	"github.com/agent-gateway/agent-gateway/store/audit"
)

// AuditKey returns the public key of the audit signing key in the
// configured data_dir (server's loader), or an error naming why not.
type AuditKey func(loadArgs []string, stderr io.Writer) (ed25519.PublicKey, error)

// auditUsage is the usage of `admin audit` (docs/audit.md).
const auditUsage = `usage: agent-gateway admin audit <command> [flags]

commands:
  verify       check every chain and checkpoint of the audit record; names the first altered,
               missing or reordered record (--export FILE: check an export offline)
  list         list records by subject, client, tool, repository, time or outcome
  export       write the audit record as JSON lines (--format jsonl), verifiable offline
  purge        delete the records before a time, up to a signed checkpoint each chain keeps
               (what audit.retention does on schedule)
  public-key   print the public key that signs this gateway's checkpoints
`

// runAudit runs `admin audit <command>`: its own flags, and the store
// only when the command reads it (an offline verify reads a file).
func runAudit(ctx context.Context, args []string, out, errOut io.Writer, target Target) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(out, auditUsage)
		if len(args) == 0 {
			return &UsageError{Msg: "admin audit: name a command"}
		}
		return nil
	}
	name := args[0]
	fs := flag.NewFlagSet("agent-gateway admin audit "+name, flag.ContinueOnError)
	configFile := fs.String("config", "", "YAML configuration file (for database.url and data_dir)")
	dataDir := fs.String("data-dir", "", "data directory (data_dir)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	var keys multiFlag
	var exportFile, format *string
	var listFilter func() (audit.Filter, int, error)
	var before *string
	switch name {
	case "purge":
		before = fs.String("before", "", "delete records before this time (RFC 3339, or a duration such as 2160h meaning that long ago)")
	case "list":
		listFilter = auditListFlags(fs)
	case "verify":
		fs.Var(&keys, "public-key", "trust checkpoints signed by this public key (hex, as public-key prints it); repeatable; default: the key in data_dir")
		exportFile = fs.String("export", "", "verify this export file (admin audit export) instead of the store")
	case "export":
		format = fs.String("format", "jsonl", "output format: jsonl")
	case "public-key":
	default:
		return &UsageError{Msg: fmt.Sprintf("admin audit: unknown command %q\n\n%s", name, auditUsage)}
	}
	if err := ParseFlags(fs, args[1:], out, errOut); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("admin audit %s: %w", name, err)
	}
	if fs.NArg() > 0 {
		return &UsageError{Msg: fmt.Sprintf("admin audit %s: unexpected argument %q", name, fs.Arg(0))}
	}
	var loadArgs []string
	if *configFile != "" {
		loadArgs = append(loadArgs, "--config", *configFile)
	}
	if *dataDir != "" {
		loadArgs = append(loadArgs, "--data-dir", *dataDir)
	}
	fail := func(err error) error { return fmt.Errorf("admin audit %s: %w", name, err) }
	switch name {
	case "public-key":
		pub, err := target.AuditKey(loadArgs, errOut)
		if err != nil {
			return fail(err)
		}
		fmt.Fprintln(out, hex.EncodeToString(pub))
		return nil
	case "list":
		f, limit, err := listFilter()
		if err != nil {
			var ue *UsageError
			if errors.As(err, &ue) {
				return &UsageError{Msg: "admin audit list: " + ue.Msg}
			}
			return err
		}
		st, err := target.OpenStore(ctx, loadArgs, errOut)
		if err != nil {
			return err
		}
		defer st.Close()
		if err := listAuditRecords(ctx, &adminRun{st: st, out: out, json: *asJSON}, errOut, f, limit); err != nil {
			return fail(err)
		}
		return nil
	case "purge":
		cutoff, err := auditTime("before", *before)
		if err != nil || cutoff.IsZero() {
			return &UsageError{Msg: "admin audit purge: --before: want an RFC 3339 time or a positive duration such as 2160h"}
		}
		st, err := target.OpenStore(ctx, loadArgs, errOut)
		if err != nil {
			return err
		}
		defer st.Close()
		res, err := st.PurgeAuditRecords(ctx, store.AuditPurgePolicy{Before: cutoff})
		if err != nil {
			return fail(err)
		}
		a := &adminRun{st: st, out: out, json: *asJSON}
		return a.print(field{"before", cutoff}, field{"ran", res.Ran},
			field{"audit_records", res.Deleted["audit_records"]}, field{"audit_checkpoints", res.Deleted["audit_checkpoints"]})
	case "export":
		if *format != "jsonl" {
			return &UsageError{Msg: fmt.Sprintf("admin audit export: --format %q: want jsonl", *format)}
		}
		st, err := target.OpenStore(ctx, loadArgs, errOut)
		if err != nil {
			return err
		}
		defer st.Close()
		if err := audit.Export(ctx, st, out); err != nil {
			return fail(err)
		}
		return nil
	}
	// verify
	var trusted []ed25519.PublicKey
	for _, k := range keys {
		pub, err := audit.ParsePublicKey(k)
		if err != nil {
			return &UsageError{Msg: "admin audit verify: --public-key: " + err.Error()}
		}
		trusted = append(trusted, pub)
	}
	if len(trusted) == 0 {
		pub, err := target.AuditKey(loadArgs, errOut)
		if err != nil {
			return fail(fmt.Errorf("%w (give --public-key to verify without the data directory)", err))
		}
		trusted = append(trusted, pub)
	}
	var rep audit.Report
	if *exportFile != "" {
		f, err := os.Open(*exportFile)
		if err != nil {
			return fail(err)
		}
		defer f.Close()
		src, err := audit.ReadExport(f)
		if err != nil {
			return fail(err)
		}
		if rep, err = audit.Verify(ctx, src, trusted); err != nil {
			return fail(err)
		}
	} else {
		st, err := target.OpenStore(ctx, loadArgs, errOut)
		if err != nil {
			return err
		}
		defer st.Close()
		if rep, err = audit.Verify(ctx, st, trusted); err != nil {
			return fail(err)
		}
	}
	printReport(out, rep, *asJSON)
	if !rep.OK() {
		return fail(errors.New("the audit record does not verify"))
	}
	return nil
}

// printReport prints one line per chain, or the report as JSON.
func printReport(out io.Writer, rep audit.Report, asJSON bool) {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
		return
	}
	for _, c := range rep.Chains {
		status := "ok"
		if c.Problem != nil {
			status = "FAILED: " + c.Problem.String()
		}
		purged := ""
		if c.Purged > 0 {
			purged = fmt.Sprintf("purged 1-%d\t", c.Purged)
		}
		fmt.Fprintf(out, "%s\trecords %d\tcheckpoints %d\t%s%s\n", c.Writer, c.Records, c.Checkpoints, purged, status)
	}
	if len(rep.Chains) == 0 {
		fmt.Fprintln(out, "no audit records")
	}
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
