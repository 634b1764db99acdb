package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/store"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
	// after is a Go step run in the same transaction, for what SQL cannot do.
	after func(ctx context.Context, tx pgx.Tx) error
}

// goSteps attaches Go code to a schema version.
var goSteps = map[int]func(ctx context.Context, tx pgx.Tx) error{
	14: reindexWords,       // 0014_search_stems.sql
	15: recoverResponseIDs, // 0015_state_tables.sql
}

// migrationLock is the key of the transaction-scoped advisory lock every migration takes, so
// replicas starting together apply each version once.
const migrationLock = 0x73706f6f6c // "spool"

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

// migrate brings the schema to the newest version, one transaction per version, each under the
// advisory lock and re-checked inside it. Migrations are forward-only.
func (db *DB) migrate(ctx context.Context) error {
	return db.migrateTo(ctx, -1)
}

func (db *DB) migrateTo(ctx context.Context, target int) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	for _, m := range ms {
		if target >= 0 && m.version > target {
			break
		}
		err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLock)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS spool_schema (
				version integer PRIMARY KEY, name text NOT NULL,
				applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
				return err
			}
			var current int
			if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM spool_schema").Scan(&current); err != nil {
				return err
			}
			if current > len(ms) {
				return fmt.Errorf("database schema version %d is newer than this spool (%d): upgrade spool", current, len(ms))
			}
			if current >= m.version {
				return nil // applied earlier, or by another replica while we waited
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			if m.after != nil {
				if err := m.after(ctx, tx); err != nil {
					return err
				}
			}
			_, err := tx.Exec(ctx, "INSERT INTO spool_schema (version, name) VALUES ($1, $2)", m.version, m.name)
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate to schema %s: %w", m.name, err)
		}
	}
	return nil
}

// Version reports the schema version the database is at.
func (db *DB) Version(ctx context.Context) (int, error) {
	var v int
	err := db.pool.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM spool_schema").Scan(&v)
	return v, err
}

// reindexBatch is how many rows reindexWords reads and rewrites at a time.
const reindexBatch = 1000

// reindexWords recomputes every row's word index (tsv) with this build's writer (rowIndex),
// in batches by id.
func reindexWords(ctx context.Context, tx pgx.Tx) error {
	var after int64
	for {
		rows, err := tx.Query(ctx, `SELECT id, role, content, coalesce(tool_name, ''), tool_calls FROM messages
			WHERE id > $1 ORDER BY id LIMIT $2`, after, reindexBatch)
		if err != nil {
			return err
		}
		var ids []int64
		var tsvs []string
		var id int64
		var m store.Message
		var calls *string
		_, err = pgx.ForEachRow(rows, []any{&id, &m.Role, &m.Content, &m.ToolName, &calls}, func() error {
			tsv, _ := rowIndex(m, calls)
			ids, tsvs = append(ids, id), append(tsvs, tsv.literal())
			return nil
		})
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE messages m SET tsv = u.tsv::tsvector
			FROM unnest($1::bigint[], $2::text[]) AS u(id, tsv) WHERE m.id = u.id`, ids, tsvs); err != nil {
			return err
		}
		after = ids[len(ids)-1]
	}
}
