package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/dbcopy"
)

// The PostgreSQL side of store/dbcopy: a snapshot is one REPEATABLE READ, READ ONLY
// transaction; a load is one transaction (TRUNCATE for Replace is transactional here too).

var (
	_ dbcopy.Source = (*DB)(nil)
	_ dbcopy.Target = (*DB)(nil)
)

// copySkipTables hold no data of their own: the schema version, locks that die with their
// holders.
var copySkipTables = map[string]bool{"spool_schema": true, "compression_locks": true}

// copyDerived are the columns the writer computes from the row (the search indexes' inputs).
var copyDerived = map[string]bool{"messages.tsv": true, "messages.cjk_text": true}

// maxParams is PostgreSQL's limit of bind parameters in one statement.
const maxParams = 65535

type copyReader struct{ tx pgx.Tx }

// Snapshot implements dbcopy.Source.
func (db *DB) Snapshot(ctx context.Context, fn func(dbcopy.Reader) error) error {
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("%s: begin snapshot: %w", Redact(db.url), err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	return fn(copyReader{tx: tx})
}

// Load implements dbcopy.Target.
func (db *DB) Load(ctx context.Context, fn func(dbcopy.Writer) error) error {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("%s: begin: %w", Redact(db.url), err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := fn(&copyWriter{copyReader{tx: tx}}); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func quoteIdent(s string) string { return pgx.Identifier{s}.Sanitize() }

func (r copyReader) Tables(ctx context.Context) ([]dbcopy.Table, error) {
	rows, err := r.tx.Query(ctx, `SELECT table_name::text FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var out []dbcopy.Table
	for _, n := range names {
		if copySkipTables[n] {
			continue
		}
		cols, err := r.columns(ctx, n)
		if err != nil {
			return nil, err
		}
		out = append(out, dbcopy.Table{Name: n, Columns: cols})
	}
	return out, nil
}

func (r copyReader) columns(ctx context.Context, table string) ([]dbcopy.Column, error) {
	rows, err := r.tx.Query(ctx, `SELECT column_name::text, data_type::text FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`, table)
	if err != nil {
		return nil, err
	}
	var cols []dbcopy.Column
	var name, typ string
	_, err = pgx.ForEachRow(rows, []any{&name, &typ}, func() error {
		if copyDerived[table+"."+name] {
			return nil
		}
		kind := dbcopy.KindText
		switch typ {
		case "boolean":
			kind = dbcopy.KindBool
		case "smallint", "integer", "bigint":
			kind = dbcopy.KindInt
		case "real", "double precision", "numeric":
			kind = dbcopy.KindFloat
		case "bytea":
			kind = dbcopy.KindBytes
		}
		cols = append(cols, dbcopy.Column{Name: name, Kind: kind})
		return nil
	})
	return cols, err
}

func (r copyReader) Count(ctx context.Context, table string) (int64, error) {
	var n int64
	err := r.tx.QueryRow(ctx, "SELECT count(*) FROM "+quoteIdent(table)).Scan(&n)
	return n, err
}

// primaryKey lists the key columns of table in key order.
func (r copyReader) primaryKey(ctx context.Context, table string) ([]string, error) {
	rows, err := r.tx.Query(ctx, `SELECT a.attname::text FROM pg_index i
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
		WHERE i.indrelid = $1::regclass AND i.indisprimary
		ORDER BY array_position(i.indkey::int2[], a.attnum)`, quoteIdent(table))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

func (r copyReader) Scan(ctx context.Context, table string, cols []string, fn func([]any) error) error {
	key, err := r.primaryKey(ctx, table)
	if err != nil {
		return err
	}
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = quoteIdent(c)
	}
	order := "ctid"
	if len(key) > 0 {
		for i := range key {
			key[i] = quoteIdent(key[i])
		}
		order = strings.Join(key, ", ")
	}
	rows, err := r.tx.Query(ctx, "SELECT "+strings.Join(quoted, ", ")+" FROM "+quoteIdent(table)+" ORDER BY "+order)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return err
		}
		for i, v := range vals {
			switch x := v.(type) {
			case int32:
				vals[i] = int64(x)
			case int16:
				vals[i] = int64(x)
			case float32:
				vals[i] = float64(x)
			}
		}
		if err := fn(vals); err != nil {
			return err
		}
	}
	return rows.Err()
}

type copyWriter struct{ copyReader }

// Clear implements dbcopy.Writer.
func (w *copyWriter) Clear(ctx context.Context) error {
	tables, err := w.Tables(ctx)
	if err != nil {
		return err
	}
	names := []string{"compression_locks"}
	for _, t := range tables {
		names = append(names, quoteIdent(t.Name))
	}
	_, err = w.tx.Exec(ctx, "TRUNCATE "+strings.Join(names, ", "))
	return err
}

// Insert implements dbcopy.Writer: multi-row INSERTs with the ids given (OVERRIDING SYSTEM
// VALUE), values converted to the target's column types; messages get their index columns
// computed as the writer computes them.
func (w *copyWriter) Insert(ctx context.Context, table string, cols []string, rows [][]any) error {
	all, err := w.columns(ctx, table)
	if err != nil {
		return err
	}
	kinds := make([]dbcopy.Kind, len(cols))
	quoted := make([]string, 0, len(cols)+2)
	for i, c := range cols {
		j := slices.IndexFunc(all, func(x dbcopy.Column) bool { return x.Name == c })
		if j < 0 {
			return fmt.Errorf("no column %s.%s", table, c)
		}
		kinds[i] = all[j].Kind
		quoted = append(quoted, quoteIdent(c))
	}
	isMsg := table == "messages"
	role, content, name, calls := slices.Index(cols, "role"), slices.Index(cols, "content"),
		slices.Index(cols, "tool_name"), slices.Index(cols, "tool_calls")
	if isMsg {
		if role < 0 || content < 0 || name < 0 || calls < 0 {
			return fmt.Errorf("messages without role, content, tool_name or tool_calls")
		}
		quoted = append(quoted, "tsv", "cjk_text")
	}
	width := len(quoted)
	per := maxParams / width
	for len(rows) > 0 {
		chunk := rows[:min(per, len(rows))]
		rows = rows[len(chunk):]
		args := make([]any, 0, len(chunk)*width)
		tuples := make([]string, len(chunk))
		for ri, row := range chunk {
			ph := make([]string, width)
			for i, v := range row {
				args = append(args, toKind(v, kinds[i]))
				ph[i] = fmt.Sprintf("$%d", len(args))
			}
			if isMsg {
				m := store.Message{}
				m.Role, _ = row[role].(string)
				m.Content, _ = row[content].(string)
				m.ToolName, _ = row[name].(string)
				m.Content = cleanNUL(store.CleanText(m.Content))
				var c *string
				if s, ok := row[calls].(string); ok {
					c = &s
				}
				tsv, cjk := rowIndex(m, c)
				args = append(args, tsv, cjk)
				ph[width-2] = fmt.Sprintf("$%d::tsvector", len(args)-1)
				ph[width-1] = fmt.Sprintf("$%d", len(args))
			}
			tuples[ri] = "(" + strings.Join(ph, ", ") + ")"
		}
		q := "INSERT INTO " + quoteIdent(table) + " (" + strings.Join(quoted, ", ") + ") OVERRIDING SYSTEM VALUE VALUES " +
			strings.Join(tuples, ", ")
		if _, err := w.tx.Exec(ctx, q, args...); err != nil {
			return err
		}
	}
	return nil
}

// toKind converts a value read from another backend to kind.
func toKind(v any, kind dbcopy.Kind) any {
	switch x := v.(type) {
	case int64:
		switch kind {
		case dbcopy.KindBool:
			return x != 0
		case dbcopy.KindFloat:
			return float64(x)
		}
	case bool:
		if kind == dbcopy.KindInt {
			if x {
				return int64(1)
			}
			return int64(0)
		}
	case string:
		if kind == dbcopy.KindBytes {
			return []byte(x)
		}
		return dbcopy.CleanText(x)
	case []byte:
		if kind == dbcopy.KindText {
			return dbcopy.CleanText(string(x))
		}
	}
	return v
}

// SetColumn implements dbcopy.Writer.
func (w *copyWriter) SetColumn(ctx context.Context, table, key, col string, pairs [][2]any) error {
	q := "UPDATE " + quoteIdent(table) + " SET " + quoteIdent(col) + " = $1 WHERE " + quoteIdent(key) + " = $2"
	b := &pgx.Batch{}
	for _, p := range pairs {
		b.Queue(q, p[1], p[0])
	}
	return w.tx.SendBatch(ctx, b).Close()
}

// Finish implements dbcopy.Writer: identity sequences continue after the copied ids (the search
// columns were computed row by row, and the GIN indexes took them as they were inserted).
func (w *copyWriter) Finish(ctx context.Context) error {
	rows, err := w.tx.Query(ctx, `SELECT table_name::text, column_name::text FROM information_schema.columns
		WHERE table_schema = current_schema() AND is_identity = 'YES'`)
	if err != nil {
		return err
	}
	var idents [][2]string
	var t, c string
	if _, err := pgx.ForEachRow(rows, []any{&t, &c}, func() error {
		idents = append(idents, [2]string{t, c})
		return nil
	}); err != nil {
		return err
	}
	for _, id := range idents {
		q := fmt.Sprintf(`SELECT setval(pg_get_serial_sequence($1, $2), coalesce((SELECT max(%s) FROM %s), 0) + 1, false)`,
			quoteIdent(id[1]), quoteIdent(id[0]))
		if _, err := w.tx.Exec(ctx, q, quoteIdent(id[0]), id[1]); err != nil {
			return fmt.Errorf("sequence of %s.%s: %w", id[0], id[1], err)
		}
	}
	return nil
}
