package sqlite

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// applyJournalMode decides between WAL and the rollback journal. The one rule never broken: a
// file whose header says WAL stays WAL, because switching a live WAL database back while another
// process has it open loses that process's view of the database.
func (db *DB) applyJournalMode(ctx context.Context) (string, error) {
	// Asked of SQLite rather than read from the file: opening and closing the file ourselves
	// would drop every POSIX lock this process holds on it, SQLite's included.
	current, err := db.journalPragma(ctx, "journal_mode")
	if err != nil {
		return "", fmt.Errorf("read journal mode: %w", err)
	}
	if db.mem != nil {
		return current, nil // memdb keeps its rollback journal in memory; it has no WAL
	}
	if current == "wal" {
		if db.opts.JournalMode == "delete" {
			db.log.Error("spool: database is in WAL mode; refusing to switch a possibly live WAL database to delete. Stop every spool process first, then switch it offline.",
				"path", db.path)
		}
		return db.setJournal(ctx, "wal")
	}
	if db.opts.JournalMode == "delete" {
		return db.setJournal(ctx, "delete")
	}
	if fs, unsafe := walUnsafeFS(db.path); unsafe {
		db.log.Warn("spool: WAL is unsafe on this filesystem; using the rollback journal", "path", db.path, "fs", fs)
		return db.setJournal(ctx, "delete")
	}
	mode, err := db.setJournal(ctx, "wal")
	if err != nil {
		return "", err
	}
	if mode != "wal" {
		// Some filesystems refuse WAL silently: trust the row the pragma returned.
		db.log.Warn("spool: SQLite refused WAL mode; using the rollback journal", "path", db.path, "mode", mode)
	}
	return mode, nil
}

func (db *DB) setJournal(ctx context.Context, want string) (string, error) {
	got, err := db.journalPragma(ctx, "journal_mode="+want)
	if err != nil {
		return "", fmt.Errorf("set journal_mode=%s: %w", want, err)
	}
	return got, nil
}

// journalPragma runs PRAGMA p and returns its row in lower case, retrying while the database is
// locked (another process may be switching or recovering it).
func (db *DB) journalPragma(ctx context.Context, p string) (string, error) {
	var got string
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		err = db.w.QueryRowContext(ctx, "PRAGMA "+p).Scan(&got)
		if err == nil || !isBusy(err) {
			break
		}
		time.Sleep(time.Second)
	}
	return strings.ToLower(got), err
}
