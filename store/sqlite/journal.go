package sqlite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// applyJournalMode decides between WAL and the rollback journal. The one rule never broken: a
// file whose header says WAL stays WAL, because switching a live WAL database back while another
// process has it open loses that process's view of the database.
func (db *DB) applyJournalMode(ctx context.Context) (string, error) {
	headerWAL, err := fileHeaderWAL(db.path)
	if err != nil {
		return "", fmt.Errorf("read header: %w", err)
	}
	if headerWAL {
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
	var got string
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		err = db.w.QueryRowContext(ctx, "PRAGMA journal_mode="+want).Scan(&got)
		if err == nil || !isBusy(err) {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		return "", fmt.Errorf("set journal_mode=%s: %w", want, err)
	}
	return strings.ToLower(got), nil
}

// fileHeaderWAL reports whether the database header's read/write versions say WAL (2).
func fileHeaderWAL(path string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	var h [20]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return false, nil // new or empty file
		}
		return false, err
	}
	return h[18] == 2 && h[19] == 2, nil
}
