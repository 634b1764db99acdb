package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/term"

	"github.com/spoolhq/spool/config"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/postgres"
	"github.com/spoolhq/spool/store/sqlite"
	"github.com/spoolhq/spool/tools/mcp"
)

// app is the state one spool invocation shares between its commands.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	home string // --home
	json bool   // --json

	cfg    *config.Config
	st     store.Backend
	closer io.Closer
	exit   int // status for a command that succeeded but found problems (db check)

	mcp       *mcp.Manager // the MCP servers, started once per process (closeMCP)
	mcpWarned bool

	// retryNote, when set, shows a provider retry's notice in place (the chat's spinner line)
	// instead of printing it as a line of its own.
	retryNote atomic.Pointer[func(note string)]
}

// config loads the configuration once per invocation.
func (a *app) config() (config.Config, error) {
	if a.cfg != nil {
		return *a.cfg, nil
	}
	cfg, err := config.Load(a.home)
	if err != nil {
		return config.Config{}, err
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(a.stderr, "spool: warning: %s\n", oneLine(w))
	}
	a.cfg = &cfg
	return cfg, nil
}

// openStore opens the configured store once per invocation; it is the only place a command
// gets one.
func (a *app) openStore(ctx context.Context) (store.Backend, error) {
	if a.st != nil {
		return a.st, nil
	}
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	if cfg.Database.URL != "" {
		db, err := postgres.Open(ctx, cfg.Database.URL, postgres.Options{Logger: storeLogger(a.stderr), WriteBudget: cfg.Database.WriteTimeout})
		if err != nil {
			return nil, fmt.Errorf("open database: %w", err)
		}
		a.st, a.closer = db, db
		return db, nil
	}
	db, err := openSQLite(ctx, cfg, storeLogger(a.stderr))
	if err != nil {
		return nil, err
	}
	a.st, a.closer = db, db
	return db, nil
}

// databaseName names the configured database for messages: the SQLite file, or the
// PostgreSQL URL without its password.
func databaseName(cfg config.Config) string {
	if cfg.Database.URL != "" {
		return postgres.Redact(cfg.Database.URL)
	}
	return cfg.Database.Path
}

// storeLogger is what the store may say on stderr during a command: warnings and errors only,
// one "spool: warning: ..." line each (no timestamps, pids or hosts; routine events such as
// taking a dead holder's lease stay quiet).
func storeLogger(w io.Writer) *slog.Logger {
	return slog.New(&lineHandler{w: w})
}

type lineHandler struct {
	w     io.Writer
	attrs []slog.Attr
}

func (h *lineHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	msg := strings.TrimPrefix(r.Message, "spool: ")
	b.WriteString("spool: warning: " + msg)
	add := func(a slog.Attr) bool {
		if a.Key != "err" && a.Key != "path" {
			return true
		}
		fmt.Fprintf(&b, " (%s)", a.Value.String())
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	_, err := fmt.Fprintln(h.w, oneLine(b.String()))
	return err
}

func (h *lineHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &lineHandler{w: h.w, attrs: append(slices.Clone(h.attrs), as...)}
}

func (h *lineHandler) WithGroup(string) slog.Handler { return h }

// openSQLite opens the SQLite store cfg describes, creating its directory (mode 0700) first.
func openSQLite(ctx context.Context, cfg config.Config, log *slog.Logger) (*sqlite.DB, error) {
	path := cfg.Database.Path
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create database directory: %w", err)
	}
	db, err := sqlite.Open(ctx, path, sqlite.Options{
		Synchronous: strings.ToUpper(cfg.Database.Synchronous),
		JournalMode: cfg.Database.JournalMode,
		WriteBudget: cfg.Database.WriteTimeout,
		Logger:      log,
	})
	if err != nil {
		if strings.Contains(err.Error(), path) {
			return nil, err // "open <path>: ..."
		}
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	return db, nil
}

// closeStore closes the store and returns what went wrong doing so.
func (a *app) closeStore() error {
	if a.closer == nil {
		return nil
	}
	err := a.closer.Close()
	a.st, a.closer = nil, nil
	if err != nil {
		return fmt.Errorf("close database: %w", err)
	}
	return nil
}

// resolve finds a session by id, title or unique id prefix, with errors fit for a person.
func (a *app) resolve(ctx context.Context, st store.Sessions, ref string) (store.Session, error) {
	if strings.TrimSpace(ref) == "" {
		return store.Session{}, errors.New("empty session reference")
	}
	s, err := st.ResolveSession(ctx, ref)
	if err == nil {
		return s, nil
	}
	var amb *store.AmbiguousError
	switch {
	case errors.As(err, &amb):
		return store.Session{}, fmt.Errorf("session %s (give more of the id)", amb.Error())
	case errors.Is(err, store.ErrNotFound):
		return store.Session{}, fmt.Errorf("session %q not found", ref)
	}
	return store.Session{}, fmt.Errorf("find session %q: %w", ref, err)
}

// printJSON writes v as indented JSON on stdout.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// isTerminal reports whether f is a terminal.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}

// colour reports whether stdout takes ANSI styling: a terminal, and NO_COLOR unset.
func (a *app) colour() bool {
	if w, ok := a.stdout.(*tuiWriter); ok {
		return w.colour
	}
	return isTerminal(a.stdout) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// confirm asks a yes/no question on a terminal. Without a terminal on stdin there is no one to
// ask, and a destructive default is wrong: it fails with a one-line error naming --yes.
func (a *app) confirm(question string) (bool, error) {
	if !isTerminal(a.stdin) {
		// Nobody can answer: a script must say so itself rather than delete by default.
		return false, errors.New("stdin is not a terminal, so nobody can confirm: pass --yes")
	}
	fmt.Fprintf(a.stderr, "%s [y/N] ", question)
	line, err := bufio.NewReader(a.stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}

// formatTime renders t for people, in local time; zero is "-".
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04")
}

// jsonTime is t in RFC 3339 for scripts, or nil when zero.
func jsonTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// truncate shortens s to n runes on one line, marking a cut with "...". Control characters and
// escape sequences are shown as escapes (see visible): what it shortens is often stored text.
func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(visible(s)), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 3 {
		return string(r[:n])
	}
	return string(r[:n-3]) + "..."
}
