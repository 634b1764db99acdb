package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/store/dbcopy"
	"github.com/spoolhq/spool/store/postgres"
	"github.com/spoolhq/spool/store/sqlite"
)

func (a *app) dbCopyCommand() *cobra.Command {
	var to string
	var replace bool
	cmd := &cobra.Command{
		Use:   "copy --to URL|PATH",
		Short: "Copy the whole store to another database (PostgreSQL URL or SQLite file), verified",
		Long: `Copy every session, message (ids, order, timestamps), lineage, system prompt, usage record,
route and idempotency key of the configured database to another one: a PostgreSQL URL
(postgres://…) or a SQLite file (a path, or sqlite:PATH). The search index is rebuilt on the
target. Turn and named leases are copied released; compression locks are not copied.

The copy is all-or-nothing: it reads one snapshot of the source and writes one transaction on
the target, checked by row counts and checksums before it commits. Interrupted, it leaves the
target as it was; run it again. A target that holds data is refused unless --replace, which
empties it in the same transaction. The source is only read.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if to == "" {
				return usageErr("db copy: --to is required (a postgres:// URL or a SQLite file path)")
			}
			return a.dbCopy(cmd.Context(), to, replace)
		},
	}
	f := cmd.Flags()
	f.StringVar(&to, "to", "", "the target: postgres://… or a SQLite file path (sqlite:PATH)")
	f.BoolVar(&replace, "replace", false, "empty a target that holds data (in the copy's transaction)")
	return cmd
}

// copyTarget is an open target database.
type copyTarget interface {
	dbcopy.Target
	Close() error
}

func (a *app) dbCopy(ctx context.Context, to string, replace bool) error {
	cfg, err := a.config()
	if err != nil {
		return err
	}
	st, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	src, ok := st.(dbcopy.Source)
	if !ok {
		return fmt.Errorf("db copy: the configured store cannot be copied")
	}
	name, path, isPG, err := parseCopyTarget(to)
	if err != nil {
		return err
	}
	if isPG && cfg.Database.URL != "" && postgres.Redact(cfg.Database.URL) == name {
		return fmt.Errorf("db copy: the target %s is the configured database", name)
	}
	if !isPG && cfg.Database.URL == "" && sameFile(cfg.Database.Path, path) {
		return fmt.Errorf("db copy: the target %s is the configured database", path)
	}
	var dst copyTarget
	if isPG {
		db, err := postgres.Open(ctx, to, postgres.Options{Logger: storeLogger(a.stderr)})
		if err != nil {
			return fmt.Errorf("db copy: %w", err)
		}
		dst = db
	} else {
		if _, err := os.Stat(filepath.Dir(path)); err != nil {
			return fmt.Errorf("db copy: the target's directory %s does not exist", filepath.Dir(path))
		}
		db, err := sqlite.Open(ctx, path, sqlite.Options{Logger: storeLogger(a.stderr)})
		if err != nil {
			return fmt.Errorf("db copy: %w", err)
		}
		dst = db
	}
	defer dst.Close()

	var update func(int)
	done := func() {}
	current := ""
	rep, err := dbcopy.Copy(ctx, src, dst, dbcopy.Options{
		Replace: replace,
		Progress: func(table string, n, total int64) {
			if table != current {
				done()
				current = table
				update, done = a.progress("copy "+table, total)
			}
			update(int(n))
		},
	})
	done()
	if err != nil {
		var ne *dbcopy.NotEmptyError
		if errors.As(err, &ne) {
			return fmt.Errorf("db copy: %s: %w", name, err)
		}
		return fmt.Errorf("db copy to %s: %w (the target is unchanged)", name, err)
	}
	if a.json {
		tables := []map[string]any{}
		for _, t := range rep.Tables {
			tables = append(tables, map[string]any{"table": t.Name, "rows": t.Rows, "checksum": t.Checksum})
		}
		return a.printJSON(map[string]any{"from": databaseName(cfg), "to": name, "verified": true,
			"tables": tables, "skipped": nonNil(rep.Skipped)})
	}
	printCopyReport(a.stdout, databaseName(cfg), name, rep)
	return nil
}

func printCopyReport(w io.Writer, from, to string, rep dbcopy.Report) {
	fmt.Fprintf(w, "copied %s to %s\n", from, to)
	for _, t := range rep.Tables {
		fmt.Fprintf(w, "  %-18s %10d rows  checksum %s\n", t.Name, t.Rows, t.Checksum[:12])
	}
	fmt.Fprintf(w, "verified: %d sessions, %d messages; every table's row count and checksum match the source\n",
		rep.Rows("sessions"), rep.Rows("messages"))
}

// parseCopyTarget reads --to: a PostgreSQL URL, or a SQLite file (a path or sqlite:PATH). name
// is how messages show it (no password).
func parseCopyTarget(to string) (name, path string, isPG bool, err error) {
	switch {
	case postgres.IsURL(to):
		return postgres.Redact(to), "", true, nil
	case strings.HasPrefix(to, "sqlite:"):
		path = strings.TrimPrefix(strings.TrimPrefix(to, "sqlite:"), "//")
	case strings.Contains(to, "://"):
		return "", "", false, fmt.Errorf("db copy: unsupported target %s: want a postgres:// URL or a SQLite file path",
			postgres.Redact(to))
	default:
		path = to
	}
	if path == "" {
		return "", "", false, errors.New("db copy: the SQLite target has no path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", "", false, fmt.Errorf("db copy: %w", err)
	}
	return abs, abs, false, nil
}

func sameFile(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	if err1 != nil || err2 != nil {
		aa, _ := filepath.Abs(a)
		return aa == b
	}
	return os.SameFile(fa, fb)
}

func usageErr(msg string) error { return &usageError{errors.New(msg)} }
