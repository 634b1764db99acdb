package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/fts"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one schema version: its SQL, then an optional Go step in the same transaction
// for what SQL cannot do (classifying scripts, for instance).
type migration struct {
	version int
	name    string
	sql     string
	after   func(ctx context.Context, tx *sql.Tx) error
}

// searchCopiesSchema is the version of migrations/NNNN_search_copies.sql.
const searchCopiesSchema = 6

// searchStemsSchema is the version of migrations/NNNN_search_stems.sql.
const searchStemsSchema = 14

// stateTablesSchema is the version of migrations/NNNN_state_tables.sql.
const stateTablesSchema = 15

// goSteps attaches Go code to a schema version.
var goSteps = map[int]func(ctx context.Context, tx *sql.Tx) error{
	2:                  backfillCJK,
	searchCopiesSchema: relinkAndReindex,
	searchStemsSchema:  stemAndReindex,
	stateTablesSchema:  recoverResponseIDs,
}

func loadMigrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration file %q is not named NNNN_name.sql", e.Name())
		}
		b, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b), after: goSteps[v]})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration versions must run 1..n without gaps; %s is out of place", m.name)
		}
	}
	return ms, nil
}

// SchemaVersion is the schema version this build writes.
func SchemaVersion() int {
	ms, err := loadMigrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

// migrate brings the schema to the newest version, one transaction per version. Several
// processes may open a new database at once: each version is re-checked inside its write lock.
func (db *DB) migrate(ctx context.Context) error {
	return db.migrateTo(ctx, -1)
}

// migrateTo stops after version target (-1: all); tests use it to build older databases.
func (db *DB) migrateTo(ctx context.Context, target int) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	var current int
	if err := db.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if current > len(ms) {
		return fmt.Errorf("database schema version %d is newer than this spool (%d): upgrade spool", current, len(ms))
	}
	for _, m := range ms {
		if m.version <= current || (target >= 0 && m.version > target) {
			continue
		}
		err := db.write(ctx, db.opts.WriteBudget, func(tx *sql.Tx) error {
			var v int
			if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
				return err
			}
			if v >= m.version {
				return nil // another process got here first
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return err
			}
			if m.after != nil {
				if err := m.after(ctx, tx); err != nil {
					return err
				}
			}
			_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version=%d", m.version))
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate to schema %s: %w", m.name, err)
		}
	}
	return nil
}

// backfillCJK flags rows written before the search indexes existed. It indexes nothing: schema 6
// re-indexes every row with its projection (rows above fts_state.upto are pending, and any
// build indexes pending rows before it searches).
func backfillCJK(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, "SELECT id, content FROM messages")
	if err != nil {
		return err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		var content string
		if err := rows.Scan(&id, &content); err != nil {
			rows.Close()
			return err
		}
		if fts.HasCJK(content) {
			ids = append(ids, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := tx.ExecContext(ctx, "UPDATE messages SET cjk = 1 WHERE id = ?", id); err != nil {
			return err
		}
	}
	return nil
}

// stemAndReindex fills stem_text (fts.RowStems) on every row the word index holds, then
// indexes every row anew.
func stemAndReindex(ctx context.Context, tx *sql.Tx) error {
	type row struct {
		id   int64
		stem string
	}
	var all []row
	rows, err := tx.QueryContext(ctx, "SELECT id, role, content, coalesce(call_text, '') FROM messages WHERE copy_of IS NULL")
	if err != nil {
		return err
	}
	for rows.Next() {
		var id int64
		var role, content, calls string
		if err := rows.Scan(&id, &role, &content, &calls); err != nil {
			rows.Close()
			return err
		}
		if st := fts.RowStems(role, content, calls); st != "" {
			all = append(all, row{id, st})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	stmt, err := tx.PrepareContext(ctx, "UPDATE messages SET stem_text = ? WHERE id = ?")
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, r := range all {
		if _, err := stmt.ExecContext(ctx, r.stem, r.id); err != nil {
			return err
		}
	}
	return indexPending(ctx, tx, -1)
}

// relinkAndReindex fills call_text and links the compaction copies already stored (schema 6
// records them as they are made; older rows are matched by linkStoredCopies); the schema leaves
// every row to be indexed anew.
func relinkAndReindex(ctx context.Context, tx *sql.Tx) error {
	type calls struct {
		id   int64
		json string
	}
	var all []calls
	rows, err := tx.QueryContext(ctx, "SELECT id, tool_calls FROM messages WHERE tool_calls IS NOT NULL")
	if err != nil {
		return err
	}
	for rows.Next() {
		var c calls
		if err := rows.Scan(&c.id, &c.json); err != nil {
			rows.Close()
			return err
		}
		all = append(all, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, c := range all {
		tcs, err := store.DecodeToolCalls(c.json)
		if err != nil {
			continue // unreadable calls load as none; they index as nothing
		}
		if _, err := tx.ExecContext(ctx, "UPDATE messages SET call_text = ? WHERE id = ?", fts.CallsText(tcs), c.id); err != nil {
			return err
		}
	}
	sids, err := column[string](ctx, tx, "SELECT DISTINCT session_id FROM messages WHERE active = 0 AND compacted = 1")
	if err != nil {
		return err
	}
	for _, sid := range sids {
		if err := linkStoredCopies(ctx, tx, sid); err != nil {
			return fmt.Errorf("link copies in %s: %w", sid, err)
		}
	}
	// The rows are indexed by the stems schema's step (searchStemsSchema), which makes the
	// word index again with the column this build writes.
	return nil
}
