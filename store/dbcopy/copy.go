package dbcopy

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Kind is how a column's values are compared and converted between backends.
type Kind int

// Column kinds. SQLite stores booleans as integers; a target converts a value to its own kind.
const (
	KindText Kind = iota
	KindInt
	KindFloat
	KindBool
	KindBytes
)

// Column is one column of a table that carries data.
type Column struct {
	Name string
	Kind Kind
}

// Table is one table that carries data, with the columns a copy moves.
type Table struct {
	Name    string
	Columns []Column
}

// Reader reads a database's data tables.
type Reader interface {
	// Tables lists the tables that carry data and, of each, the columns that do (derived ones
	// such as search index columns left out).
	Tables(ctx context.Context) ([]Table, error)
	// Count returns how many rows table holds.
	Count(ctx context.Context, table string) (int64, error)
	// Scan calls fn with the values of cols of every row of table, in key order. Values are
	// int64, float64, bool, string, []byte or nil, and fn may keep them.
	Scan(ctx context.Context, table string, cols []string, fn func(vals []any) error) error
}

// Source is a backend to copy from.
type Source interface {
	// Snapshot runs fn on one consistent, read-only view of the database.
	Snapshot(ctx context.Context, fn func(Reader) error) error
}

// Writer writes a database inside the transaction of Target.Load. Its Reader methods see the
// transaction's own writes.
type Writer interface {
	Reader
	// Clear deletes the rows of every data table (and what is derived from them).
	Clear(ctx context.Context) error
	// Insert stores rows (values in the order of cols) in table, ids as given.
	Insert(ctx context.Context, table string, cols []string, rows [][]any) error
	// SetColumn sets col to pair[1] in the row of table whose key column equals pair[0].
	SetColumn(ctx context.Context, table, key, col string, pairs [][2]any) error
	// Finish rebuilds what the backend derives from the rows: search indexes, id sequences.
	Finish(ctx context.Context) error
}

// Target is a backend to copy into.
type Target interface {
	// Load runs fn in one write transaction, committed when fn returns nil. fn may run again
	// if the backend retries the transaction.
	Load(ctx context.Context, fn func(Writer) error) error
}

// Options tune a copy.
type Options struct {
	// Replace lets the copy empty a target that holds data (in the same transaction, so a
	// failed copy leaves the old contents). Without it a non-empty target is refused.
	Replace bool
	// Progress, when set, is called after every batch with the table, the rows copied so far
	// and the table's size in the source.
	Progress func(table string, done, total int64)
	// BatchRows and BatchBytes bound one batch of rows (defaults 500 rows, 4 MiB of values).
	BatchRows, BatchBytes int
}

// TableReport is what was copied of one table, verified on the target.
type TableReport struct {
	Name     string
	Rows     int64
	Checksum string
}

// Report is the outcome of a copy.
type Report struct {
	Tables []TableReport
	// Skipped names the source's tables that the target has no table for; each was empty.
	Skipped []string
}

// Rows is the number of rows copied into table (0 when it was not copied).
func (r Report) Rows(table string) int64 {
	for _, t := range r.Tables {
		if t.Name == table {
			return t.Rows
		}
	}
	return 0
}

// NotEmptyError refuses a target that holds data.
type NotEmptyError struct {
	Table string
	Rows  int64
}

func (e *NotEmptyError) Error() string {
	return fmt.Sprintf("the target is not empty (%s holds %d rows); use --replace to overwrite it", e.Table, e.Rows)
}

// MismatchError is a verification failure: the target does not hold what was read.
type MismatchError struct {
	Table                string
	SourceRows, DestRows int64
	SourceSum, DestSum   string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("verification failed on %s: the source has %d rows (checksum %s), the target %d (checksum %s)",
		e.Table, e.SourceRows, e.SourceSum, e.DestRows, e.DestSum)
}

// order is the insert order of the tables other tables refer to; the rest follow by name.
var order = []string{"system_prompts", "sessions", "messages"}

// released are the columns of the lease tables a copy clears: leases are copied released.
var released = map[string]bool{"holder": true, "acquired_at": true, "expires_at": true}

// Copy copies every data table of src into dst and verifies it, all in one transaction on dst.
func Copy(ctx context.Context, src Source, dst Target, o Options) (Report, error) {
	if o.BatchRows <= 0 {
		o.BatchRows = 500
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = 4 << 20
	}
	var rep Report
	err := src.Snapshot(ctx, func(r Reader) error {
		stabs, err := r.Tables(ctx)
		if err != nil {
			return fmt.Errorf("read the source's tables: %w", err)
		}
		return dst.Load(ctx, func(w Writer) error {
			rep = Report{}
			return copyAll(ctx, r, w, stabs, o, &rep)
		})
	})
	if err != nil {
		return Report{}, err
	}
	return rep, nil
}

type step struct {
	table Table // the source's table, with the columns to copy
	total int64
}

func copyAll(ctx context.Context, r Reader, w Writer, stabs []Table, o Options, rep *Report) error {
	dtabs, err := w.Tables(ctx)
	if err != nil {
		return fmt.Errorf("read the target's tables: %w", err)
	}
	dst := map[string]Table{}
	for _, t := range dtabs {
		dst[t.Name] = t
	}
	slices.SortStableFunc(stabs, func(a, b Table) int { return rank(a.Name) - rank(b.Name) })
	var plan []step
	for _, st := range stabs {
		dt, ok := dst[st.Name]
		if !ok {
			n, err := r.Count(ctx, st.Name)
			if err != nil {
				return fmt.Errorf("count %s: %w", st.Name, err)
			}
			if n > 0 {
				return fmt.Errorf("the source's table %s (%d rows) has no counterpart on the target", st.Name, n)
			}
			rep.Skipped = append(rep.Skipped, st.Name)
			continue
		}
		for _, c := range st.Columns {
			if !slices.ContainsFunc(dt.Columns, func(d Column) bool { return d.Name == c.Name }) {
				return fmt.Errorf("the source's column %s.%s has no counterpart on the target", st.Name, c.Name)
			}
		}
		plan = append(plan, step{table: st})
	}
	for _, t := range dtabs {
		n, err := w.Count(ctx, t.Name)
		if err != nil {
			return fmt.Errorf("count the target's %s: %w", t.Name, err)
		}
		if n > 0 && !o.Replace {
			return &NotEmptyError{Table: t.Name, Rows: n}
		}
		if n > 0 {
			if err := w.Clear(ctx); err != nil {
				return fmt.Errorf("empty the target: %w", err)
			}
			break
		}
	}
	sums := map[string]*checksum{}
	for _, s := range plan {
		// Each table is counted (for progress) just before it is copied.
		if s.total, err = r.Count(ctx, s.table.Name); err != nil {
			return fmt.Errorf("count %s: %w", s.table.Name, err)
		}
		sum, err := copyTable(ctx, r, w, s, o)
		if err != nil {
			return fmt.Errorf("copy %s: %w", s.table.Name, err)
		}
		sums[s.table.Name] = sum
	}
	if err := w.Finish(ctx); err != nil {
		return fmt.Errorf("rebuild the target's indexes: %w", err)
	}
	for _, s := range plan {
		got, err := tableSum(ctx, w, s.table)
		if err != nil {
			return fmt.Errorf("verify %s: %w", s.table.Name, err)
		}
		want := sums[s.table.Name]
		if got.rows != want.rows || got.String() != want.String() {
			return &MismatchError{Table: s.table.Name, SourceRows: want.rows, DestRows: got.rows,
				SourceSum: want.String(), DestSum: got.String()}
		}
		rep.Tables = append(rep.Tables, TableReport{Name: s.table.Name, Rows: want.rows, Checksum: want.String()})
	}
	return nil
}

func rank(name string) int {
	if i := slices.Index(order, name); i >= 0 {
		return i
	}
	return len(order)
}

func names(t Table) []string {
	out := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		out[i] = c.Name
	}
	return out
}

// copyTable streams one table in batches. Sessions are inserted without their parent link,
// which is set afterwards (a parent may sort after its child); leases are inserted released.
func copyTable(ctx context.Context, r Reader, w Writer, s step, o Options) (*checksum, error) {
	t := s.table
	cols := names(t)
	parent := -1
	if t.Name == "sessions" {
		parent = slices.Index(cols, "parent_session_id")
	}
	sum := &checksum{}
	var batch [][]any
	size := 0
	var done int64
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := w.Insert(ctx, t.Name, cols, batch); err != nil {
			return err
		}
		done += int64(len(batch))
		batch, size = batch[:0], 0
		if o.Progress != nil {
			o.Progress(t.Name, done, s.total)
		}
		return nil
	}
	err := r.Scan(ctx, t.Name, cols, func(vals []any) error {
		if t.Name == "turn_leases" || t.Name == "named_leases" {
			for i, c := range cols {
				if released[c] {
					vals[i] = nil
				}
			}
		}
		if err := sum.add(vals); err != nil {
			return err
		}
		if parent >= 0 {
			vals = slices.Clone(vals)
			vals[parent] = nil
		}
		batch = append(batch, vals)
		size += rowSize(vals)
		if len(batch) >= o.BatchRows || size >= o.BatchBytes {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil || parent < 0 {
		return sum, err
	}
	var pairs [][2]any
	err = r.Scan(ctx, t.Name, []string{"id", "parent_session_id"}, func(vals []any) error {
		if vals[1] == nil {
			return nil
		}
		pairs = append(pairs, [2]any{vals[0], vals[1]})
		if len(pairs) < o.BatchRows {
			return nil
		}
		err := w.SetColumn(ctx, t.Name, "id", "parent_session_id", pairs)
		pairs = pairs[:0]
		return err
	})
	if err == nil && len(pairs) > 0 {
		err = w.SetColumn(ctx, t.Name, "id", "parent_session_id", pairs)
	}
	return sum, err
}

func tableSum(ctx context.Context, r Reader, t Table) (*checksum, error) {
	sum := &checksum{}
	err := r.Scan(ctx, t.Name, names(t), func(vals []any) error { return sum.add(vals) })
	return sum, err
}

func rowSize(vals []any) int {
	n := 0
	for _, v := range vals {
		switch x := v.(type) {
		case string:
			n += len(x)
		case []byte:
			n += len(x)
		default:
			n += 8
		}
	}
	return n
}

// ErrUnsupported is returned for a value of a type no backend stores.
var ErrUnsupported = errors.New("unsupported value type")
