package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/dbcopy"
	"github.com/spoolhq/spool/store/fts"
)

// The SQLite side of store/dbcopy: a snapshot is one read transaction (WAL keeps it consistent
// while writers go on), a load is one write transaction.

var (
	_ dbcopy.Source = (*DB)(nil)
	_ dbcopy.Target = (*DB)(nil)
)

// copySkipTables hold no data of their own: index state, locks that die with their holders.
var copySkipTables = map[string]bool{"fts_state": true, "meta": true, "compression_locks": true}

// copyDerived are the columns the writer computes from the row (search index inputs) or keeps
// for itself (the history cache's change counter, which only needs to move).
var copyDerived = map[string]bool{"messages.cjk": true, "messages.call_text": true, "messages.stem_text": true, "sessions.history_changes": true}

// copyLoadBudget is how long a load waits for a target another process holds locked.
const copyLoadBudget = 2 * time.Minute

type copyQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

type copyReader struct{ q copyQuerier }

// Snapshot implements dbcopy.Source: a deferred transaction on a reader connection (the pool's
// transactions begin IMMEDIATE, which a query-only connection refuses), whose first read fixes
// the snapshot.
func (db *DB) Snapshot(ctx context.Context, fn func(dbcopy.Reader) error) error {
	conn, err := db.r.Conn(ctx)
	if err != nil {
		return fmt.Errorf("%s: snapshot: %w", db.path, err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN DEFERRED"); err != nil {
		return fmt.Errorf("%s: begin snapshot: %w", db.path, err)
	}
	defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK") }()
	return fn(copyReader{q: conn})
}

// Load implements dbcopy.Target.
func (db *DB) Load(ctx context.Context, fn func(dbcopy.Writer) error) error {
	err := db.write(ctx, copyLoadBudget, func(tx *sql.Tx) error {
		return fn(&copyWriter{copyReader: copyReader{q: tx}, tx: tx, stmts: map[string]*sql.Stmt{}})
	})
	if err == nil {
		db.pending.Store(0)
	}
	return err
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func (r copyReader) Tables(ctx context.Context) ([]dbcopy.Table, error) {
	rows, err := r.q.QueryContext(ctx, `SELECT name FROM pragma_table_list
		WHERE schema = 'main' AND type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		return nil, err
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, err
		}
		if !copySkipTables[n] {
			tables = append(tables, n)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []dbcopy.Table
	for _, name := range tables {
		cols, _, err := r.columns(ctx, name)
		if err != nil {
			return nil, err
		}
		out = append(out, dbcopy.Table{Name: name, Columns: cols})
	}
	return out, nil
}

// columns lists a table's data columns and its key columns in key order.
func (r copyReader) columns(ctx context.Context, table string) ([]dbcopy.Column, []string, error) {
	rows, err := r.q.QueryContext(ctx, `SELECT name, upper(type), pk FROM pragma_table_info(?) ORDER BY cid`, table)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var cols []dbcopy.Column
	type pk struct {
		name string
		at   int
	}
	var pks []pk
	for rows.Next() {
		var name, typ string
		var at int
		if err := rows.Scan(&name, &typ, &at); err != nil {
			return nil, nil, err
		}
		if at > 0 {
			pks = append(pks, pk{name, at})
		}
		if copyDerived[table+"."+name] {
			continue
		}
		kind := dbcopy.KindText
		switch {
		case strings.Contains(typ, "INT"):
			kind = dbcopy.KindInt
		case strings.Contains(typ, "REAL"), strings.Contains(typ, "FLOA"), strings.Contains(typ, "DOUB"):
			kind = dbcopy.KindFloat
		case strings.Contains(typ, "BLOB"):
			kind = dbcopy.KindBytes
		}
		cols = append(cols, dbcopy.Column{Name: name, Kind: kind})
	}
	slices.SortFunc(pks, func(a, b pk) int { return a.at - b.at })
	key := make([]string, len(pks))
	for i, p := range pks {
		key[i] = p.name
	}
	return cols, key, rows.Err()
}

func (r copyReader) Count(ctx context.Context, table string) (int64, error) {
	var n int64
	err := r.q.QueryRowContext(ctx, "SELECT count(*) FROM "+quoteIdent(table)).Scan(&n)
	return n, err
}

func (r copyReader) Scan(ctx context.Context, table string, cols []string, fn func([]any) error) error {
	all, key, err := r.columns(ctx, table)
	if err != nil {
		return err
	}
	kinds := make([]dbcopy.Kind, len(cols))
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = quoteIdent(c)
		kinds[i] = dbcopy.KindText
		if j := slices.IndexFunc(all, func(x dbcopy.Column) bool { return x.Name == c }); j >= 0 {
			kinds[i] = all[j].Kind
		}
	}
	order := "rowid"
	if len(key) > 0 {
		for i := range key {
			key[i] = quoteIdent(key[i])
		}
		order = strings.Join(key, ", ")
	}
	rows, err := r.q.QueryContext(ctx, "SELECT "+strings.Join(quoted, ", ")+" FROM "+quoteIdent(table)+" ORDER BY "+order)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, v := range vals {
			vals[i] = copyValue(v, kinds[i])
		}
		if err := fn(vals); err != nil {
			return err
		}
	}
	return rows.Err()
}

// copyValue gives v the Go type of kind (SQLite columns may hold a value of another type).
func copyValue(v any, kind dbcopy.Kind) any {
	switch x := v.(type) {
	case []byte:
		if kind == dbcopy.KindText {
			return string(x)
		}
	case string:
		if kind == dbcopy.KindBytes {
			return []byte(x)
		}
	case int64:
		if kind == dbcopy.KindFloat {
			return float64(x)
		}
	case bool:
		if x {
			return int64(1)
		}
		return int64(0)
	case time.Time:
		return x.UnixMicro()
	}
	return v
}

type copyWriter struct {
	copyReader
	tx    *sql.Tx
	stmts map[string]*sql.Stmt
}

// Clear implements dbcopy.Writer: every data table emptied, the search indexes with them.
func (w *copyWriter) Clear(ctx context.Context) error {
	tables, err := w.Tables(ctx)
	if err != nil {
		return err
	}
	for _, q := range []string{
		"INSERT INTO messages_fts(messages_fts) VALUES ('delete-all')",
		"INSERT INTO messages_trigram(messages_trigram) VALUES ('delete-all')",
		"UPDATE fts_state SET upto = 0",
		"DELETE FROM compression_locks",
	} {
		if _, err := w.tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	// Children first: the tables that refer to sessions, then messages, sessions, prompts.
	slices.SortStableFunc(tables, func(a, b dbcopy.Table) int { return clearRank(a.Name) - clearRank(b.Name) })
	for _, t := range tables {
		if _, err := w.tx.ExecContext(ctx, "DELETE FROM "+quoteIdent(t.Name)); err != nil {
			return fmt.Errorf("empty %s: %w", t.Name, err)
		}
	}
	return nil
}

func clearRank(name string) int {
	switch name {
	case "messages":
		return 1
	case "sessions":
		return 2
	case "system_prompts":
		return 3
	}
	return 0
}

// Insert implements dbcopy.Writer. Messages get their index inputs (cjk flag, call text)
// computed as the writer computes them.
func (w *copyWriter) Insert(ctx context.Context, table string, cols []string, rows [][]any) error {
	isMsg := table == "messages"
	content, calls, role := slices.Index(cols, "content"), slices.Index(cols, "tool_calls"), slices.Index(cols, "role")
	if isMsg && (content < 0 || calls < 0) {
		return fmt.Errorf("messages without content or tool_calls")
	}
	st, ok := w.stmts[table]
	if !ok {
		quoted := make([]string, 0, len(cols)+2)
		for _, c := range cols {
			quoted = append(quoted, quoteIdent(c))
		}
		if isMsg {
			quoted = append(quoted, "cjk", "call_text", "stem_text")
		}
		q := "INSERT INTO " + quoteIdent(table) + " (" + strings.Join(quoted, ", ") + ") VALUES (" +
			strings.TrimSuffix(strings.Repeat("?, ", len(quoted)), ", ") + ")"
		var err error
		if st, err = w.tx.PrepareContext(ctx, q); err != nil {
			return err
		}
		w.stmts[table] = st
	}
	args := make([]any, 0, len(cols)+2)
	for _, row := range rows {
		args = args[:0]
		for _, v := range row {
			if b, ok := v.(bool); ok {
				v = copyValue(b, dbcopy.KindInt)
			}
			args = append(args, v)
		}
		if isMsg {
			c, _ := row[content].(string)
			var callText, stemText any
			ct := ""
			if s, ok := row[calls].(string); ok && s != "" {
				if tcs, err := store.DecodeToolCalls(s); err == nil && len(tcs) > 0 {
					ct = fts.CallsText(tcs)
					callText = ct
				}
			}
			r := ""
			if role >= 0 {
				r, _ = row[role].(string)
			}
			if st := fts.RowStems(r, c, ct); st != "" {
				stemText = st
			}
			args = append(args, fts.HasCJK(c), callText, stemText)
		}
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

// SetColumn implements dbcopy.Writer.
func (w *copyWriter) SetColumn(ctx context.Context, table, key, col string, pairs [][2]any) error {
	q := "UPDATE " + quoteIdent(table) + " SET " + quoteIdent(col) + " = ? WHERE " + quoteIdent(key) + " = ?"
	for _, p := range pairs {
		if _, err := w.tx.ExecContext(ctx, q, p[1], p[0]); err != nil {
			return err
		}
	}
	return nil
}

// Finish implements dbcopy.Writer: the search indexes are rebuilt from every row, in one
// segment, inside the copy's transaction.
func (w *copyWriter) Finish(ctx context.Context) error {
	for _, st := range w.stmts {
		_ = st.Close()
	}
	for _, q := range []string{
		"INSERT INTO messages_fts(messages_fts) VALUES ('delete-all')",
		"INSERT INTO messages_trigram(messages_trigram) VALUES ('delete-all')",
		"UPDATE fts_state SET upto = 0",
	} {
		if _, err := w.tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return indexPending(ctx, w.tx, -1)
}
