package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/spoolhq/spool/store"
)

// Check implements store.Admin: SQLite's integrity and foreign-key checks, both full-text
// indexes against their content, and every session's counters against its rows.
//
// It works while other processes write: the reads run on the reader pool (a snapshot, never
// blocked in WAL mode), and the full-text checks, which SQLite runs as a write statement, go
// through the writer's busy retry. A damaged file is reported as problems, not as an error. On a
// read-only database the full-text checks cannot run and are skipped (see SkippedChecks).
func (db *DB) Check(ctx context.Context) ([]string, error) {
	var problems []string
	damaged := func(what string, err error) bool {
		if err != nil && (isCorrupt(err) || errors.Is(err, store.ErrDamaged)) {
			problems = append(problems, what+": "+err.Error())
			return true
		}
		return false
	}
	if !db.readOnly {
		// Rows another process appended and has not indexed yet would otherwise count as
		// missing from the index.
		if err := db.ensureIndexed(ctx); err != nil && !damaged("index", err) {
			return nil, fmt.Errorf("index pending messages: %w", err)
		}
	}
	q := db.read()
	lines, err := queryStrings(ctx, q, "PRAGMA integrity_check")
	if err != nil && !damaged("integrity", err) {
		return nil, fmt.Errorf("integrity check: %w", err)
	}
	for _, l := range lines {
		if l != "ok" {
			problems = append(problems, "integrity: "+l)
		}
	}
	fk, err := queryStrings(ctx, q, "SELECT \"table\" || ' row ' || rowid || ' -> ' || parent FROM pragma_foreign_key_check")
	if err != nil && !damaged("foreign key", err) {
		return nil, fmt.Errorf("foreign key check: %w", err)
	}
	for _, l := range fk {
		problems = append(problems, "foreign key: "+l)
	}
	if !db.readOnly {
		for _, t := range []string{"messages_fts", "messages_trigram"} {
			// rank 1 compares the index with its content table, not just its own structure.
			var bad error
			err := db.writeAnyway(ctx, routineBudget, func(tx *sql.Tx) error {
				_, bad = tx.ExecContext(ctx, "INSERT INTO "+t+"("+t+", rank) VALUES ('integrity-check', 1)")
				return bad // busy: retried; anything else rolls back and is reported below
			})
			switch {
			case bad != nil && !isBusy(bad):
				problems = append(problems, t+": "+bad.Error())
			case err != nil && !damaged(t, err):
				return nil, fmt.Errorf("check %s: %w", t, err)
			}
		}
	}
	counts, err := queryStrings(ctx, q, `SELECT s.id || ': message_count ' || s.message_count || ', active rows ' || count(m.id)
		FROM sessions s LEFT JOIN messages m ON m.session_id = s.id AND m.active = 1
		GROUP BY s.id HAVING s.message_count <> count(m.id)`)
	if err != nil && !damaged("counters", err) {
		return nil, fmt.Errorf("counter check: %w", err)
	}
	for _, l := range counts {
		problems = append(problems, "counters: "+l)
	}
	return problems, nil
}

// SkippedChecks names the checks Check cannot run on this handle (the full-text index checks
// on a read-only database), for the caller to say so.
func (db *DB) SkippedChecks() []string {
	if db.readOnly {
		return []string{"full-text indexes (the database is read-only)"}
	}
	return nil
}
