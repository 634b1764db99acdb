package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/store"
)

// progressMinLines is the size from which import and export show a progress bar: small files
// finish before a bar would be read.
const progressMinLines = 2000

// progress returns a callback that drives a bar on stderr once n reaches progressMinLines, and
// a function that finishes it. total < 0 draws an open-ended counter. Without a terminal on
// stderr both do nothing.
func (a *app) progress(desc string, total int64) (update func(n int), done func()) {
	if !isTerminal(a.stderr) {
		return func(int) {}, func() {}
	}
	var bar *progressbar.ProgressBar
	update = func(n int) {
		if bar == nil {
			if n < progressMinLines {
				return
			}
			bar = progressbar.NewOptions64(total,
				progressbar.OptionSetDescription(desc),
				progressbar.OptionSetWriter(a.stderr),
				progressbar.OptionSetWidth(30),
				progressbar.OptionShowCount(),
				progressbar.OptionShowIts(),
				progressbar.OptionSetItsString("lines"),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionClearOnFinish(),
				progressbar.OptionSpinnerType(14),
			)
		}
		_ = bar.Set(n)
	}
	done = func() {
		if bar != nil {
			_ = bar.Finish()
			_ = bar.Clear()
		}
	}
	return update, done
}

func (a *app) sessionsExportCommand() *cobra.Command {
	var (
		out  string
		tree bool
	)
	cmd := &cobra.Command{
		Use:   "export [ID...] [--tree] -o FILE",
		Short: "Write sessions as JSONL (all sessions when no ID is given)",
		Long: "Write sessions and every one of their messages (archived rows included) as JSONL.\n" +
			"With --tree each session brings its branches and compression continuations, recursively.\n" +
			"-o - writes to stdout. The file is written to a temporary name and renamed when complete.",
		Args: args(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if out == "" {
				return &usageError{errors.New("-o FILE is required (use -o - for stdout)")}
			}
			ctx := cmd.Context()
			st, err := a.openStore(ctx)
			if err != nil {
				return err
			}
			var ids []string
			for _, ref := range argv {
				s, err := a.resolve(ctx, st, ref)
				if err != nil {
					return err
				}
				ids = append(ids, s.ID)
			}
			total := int64(-1)
			if len(ids) == 0 {
				if stats, err := st.Stats(ctx); err == nil {
					total = int64(1 + stats.Sessions + stats.Messages)
				}
			}
			var lines int
			update, done := a.progress("export", total)
			count := func(n int) { lines = n; update(n) }

			if out == "-" {
				err = store.Export(ctx, st, a.stdout, ids, tree, count)
				done()
				return err
			}
			err = writeAtomic(out, func(w io.Writer) error { return store.Export(ctx, st, w, ids, tree, count) })
			done()
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(map[string]any{"file": out, "lines": lines})
			}
			fmt.Fprintf(a.stdout, "Exported %d lines to %s.\n", lines, out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "file to write (- for stdout)")
	cmd.Flags().BoolVar(&tree, "tree", false, "include each session's branches and continuations, recursively")
	return cmd
}

// writeAtomic writes a private file (mode 0600) under a temporary name and renames it into place,
// so a failed or interrupted export never leaves a truncated file behind.
func writeAtomic(path string, fn func(io.Writer) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("create %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op after the rename
	if err := fn(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func (a *app) sessionsImportCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "import FILE",
		Short: "Import sessions from a JSONL export (existing sessions are skipped)",
		Long: "Import sessions written by 'spool sessions export'. The whole file is checked first:\n" +
			"a malformed line aborts the import before anything is stored. Sessions whose id already\n" +
			"exists are skipped, never overwritten. FILE - reads stdin.",
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			name := argv[0]
			var r io.Reader
			var total int64 = -1
			if name == "-" {
				r = a.stdin
				name = "stdin"
			} else {
				f, err := os.Open(name)
				if err != nil {
					return fmt.Errorf("import: %w", pathError(err))
				}
				defer f.Close()
				if fi, err := f.Stat(); err == nil && fi.IsDir() {
					return fmt.Errorf("import: %s is a directory", name)
				}
				if isTerminal(a.stderr) {
					if n, err := countLines(f); err == nil {
						total = n
					}
				}
				r = f
			}
			st, err := a.openStore(ctx)
			if err != nil {
				return err
			}
			update, done := a.progress("import", total)
			res, err := store.Import(ctx, st, r, update)
			done()
			if err != nil {
				var le *store.ImportLineError
				if errors.As(err, &le) {
					return fmt.Errorf("import %s: %s; nothing was imported", name, le.Error())
				}
				if res.Sessions > 0 {
					return fmt.Errorf("import %s: %w (%d sessions were imported before the error)", name, err, res.Sessions)
				}
				return fmt.Errorf("import %s: %w", name, err)
			}
			if res.Skipped == nil {
				res.Skipped = []string{}
			}
			if res.Orphaned == nil {
				res.Orphaned = []string{}
			}
			if a.json {
				return a.printJSON(res)
			}
			fmt.Fprintf(a.stdout, "Imported %d sessions (%d messages) from %s.\n", res.Sessions, res.Messages, name)
			if len(res.Skipped) > 0 {
				fmt.Fprintf(a.stdout, "Skipped %d already present: %s\n", len(res.Skipped), listIDs(res.Skipped))
			}
			if len(res.Orphaned) > 0 {
				fmt.Fprintf(a.stdout, "Imported without their parent (not in the file or the database): %s\n", listIDs(res.Orphaned))
			}
			return nil
		},
	}
}

// countLines counts the lines of f and rewinds it.
func countLines(f *os.File) (int64, error) {
	buf := make([]byte, 1<<20)
	var n int64
	for {
		k, err := f.Read(buf)
		n += int64(bytes.Count(buf[:k], []byte{'\n'}))
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	_, err := f.Seek(0, io.SeekStart)
	return n, err
}

func listIDs(ids []string) string {
	if len(ids) > 10 {
		return strings.Join(ids[:10], ", ") + fmt.Sprintf(" and %d more", len(ids)-10)
	}
	return strings.Join(ids, ", ")
}

// pathError drops the operation from an *os.PathError: "open x: no such file" reads better than
// "open x: open x: ...".
func pathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
