package sqlq

import (
	"strconv"
	"strings"
	"sync"

	"github.com/spoolhq/spool/store"
)

// Dialect is every spelling the shared SQL needs that differs between the backends.
type Dialect struct {
	// Name names the dialect in errors and tests.
	Name string
	// numbered rebinds "?" to "$1", "$2" … (PostgreSQL).
	numbered bool
	// binary follows a text column ordered by its bytes (SQLite's default collation).
	binary string
	// floorDiv divides two integer expressions, rounding down.
	floorDiv func(a, b string) string
	// Text makes s storable in a text column (PostgreSQL text cannot hold NUL).
	Text func(s string) string
	// Ident makes an identifier (model, task) storable as the backend stores identifiers.
	Ident func(s string) string
	// NoLimit is the LIMIT argument that means no limit.
	NoLimit any
}

// SQLite is the dialect of store/sqlite.
var SQLite = Dialect{
	Name:     "sqlite",
	floorDiv: func(a, b string) string { return a + " / " + b }, // the stored times are not negative
	Text:     same,
	Ident:    same,
	NoLimit:  int64(-1),
}

// Postgres is the dialect of store/postgres.
var Postgres = Dialect{
	Name:     "postgres",
	numbered: true,
	binary:   ` COLLATE "C"`,
	floorDiv: func(a, b string) string { return "floor(" + a + "::numeric / " + b + ")::bigint" },
	Text:     cleanNUL,
	Ident:    store.CleanIdent,
	NoLimit:  nil,
}

func same(s string) string { return s }

// cleanNUL replaces NUL characters, which PostgreSQL text cannot hold.
func cleanNUL(s string) string {
	if strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// Binary is col ordered by its bytes.
func (d *Dialect) Binary(col string) string { return col + d.binary }

// FloorDiv is a / b rounded down, both integer expressions.
func (d *Dialect) FloorDiv(a, b string) string { return d.floorDiv(a, b) }

// rebound caches Rebind's results; queries are fixed strings (see the package doc), so it stays
// small.
var rebound sync.Map

// Rebind is query with its "?" placeholders in the dialect's spelling. Question marks inside
// quoted strings are kept. It allocates only the first time it sees a query.
func (d *Dialect) Rebind(query string) string {
	if !d.numbered || strings.IndexByte(query, '?') < 0 {
		return query
	}
	if q, ok := rebound.Load(query); ok {
		return q.(string)
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n, quoted := 0, false
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'':
			quoted = !quoted
		case c == '?' && !quoted:
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	q := b.String()
	rebound.Store(query, q)
	return q
}
