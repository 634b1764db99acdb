//go:build !sqlite_cgo

package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"unsafe"

	"modernc.org/libc"
	"modernc.org/libc/sys/types"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/spoolhq/spool/store"
)

// rawReader runs the hot reads (transcripts, listings, search) on read-only connections of its
// own, driven through the SQLite C API (modernc.org/sqlite's translation of it) instead of
// database/sql. A resume reads thousands of rows; on the standard workload's 20 largest sessions
// this path takes 3.0 ms of CPU a load where database/sql took 5.6, with a quarter of the
// allocations. Each column is read with one call and copied once into a shared chunk, where the
// driver takes SQLite's connection mutex on every call, boxes every value in an interface and
// allocates every string on its own; and the small columns need not be packed into one string
// by SQL, which was a quarter of the query's cost. It only reads: an error here can lose
// nothing, and the caller falls back to database/sql.
type rawReader struct {
	path  string
	slots chan struct{} // bounds the open connections
	mu    sync.Mutex
	idle  []*rawConn
	shut  bool
}

// rawConn is one connection, used by one goroutine at a time (it is opened without SQLite's
// mutex for that reason).
type rawConn struct {
	tls     *libc.TLS
	db      uintptr
	stmts   map[string]uintptr
	scratch []byte  // C text is copied here to be compared without allocating
	out     uintptr // C memory for the out-parameter of open and prepare
}

func newRawReader(path string, conns int) *rawReader {
	return &rawReader{path: path, slots: make(chan struct{}, conns)}
}

var errReaderClosed = errors.New("raw reader is closed")

func (t *rawReader) acquire(ctx context.Context) (*rawConn, error) {
	select {
	case t.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	t.mu.Lock()
	if t.shut {
		t.mu.Unlock()
		<-t.slots
		return nil, errReaderClosed
	}
	if n := len(t.idle); n > 0 {
		c := t.idle[n-1]
		t.idle = t.idle[:n-1]
		t.mu.Unlock()
		return c, nil
	}
	t.mu.Unlock()
	c, err := openRawConn(t.path)
	if err != nil {
		<-t.slots
		return nil, err
	}
	return c, nil
}

// release returns c to the pool; a connection that failed is closed instead, so a broken one is
// never reused.
func (t *rawReader) release(c *rawConn, failed bool) {
	t.mu.Lock()
	if t.shut || failed {
		t.mu.Unlock()
		c.close()
	} else {
		t.idle = append(t.idle, c)
		t.mu.Unlock()
	}
	<-t.slots
}

// close closes the idle connections; one in use is closed when it is released.
func (t *rawReader) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.shut = true
	for _, c := range t.idle {
		c.close()
	}
	t.idle = nil
}

func openRawConn(path string) (*rawConn, error) {
	c := &rawConn{tls: libc.NewTLS(), stmts: map[string]uintptr{}, scratch: make([]byte, 64)}
	name, err := libc.CString("file:" + (&url.URL{Path: path}).EscapedPath())
	if err != nil {
		c.tls.Close()
		return nil, err
	}
	if c.out = libc.Xmalloc(c.tls, types.Size_t(unsafe.Sizeof(uintptr(0)))); c.out == 0 {
		libc.Xfree(c.tls, name)
		c.tls.Close()
		return nil, errors.New("open raw reader: out of memory")
	}
	rc := sqlite3.Xsqlite3_open_v2(c.tls, name, c.out, sqlite3.SQLITE_OPEN_READWRITE|sqlite3.SQLITE_OPEN_NOMUTEX|sqlite3.SQLITE_OPEN_URI, 0)
	libc.Xfree(c.tls, name)
	c.db = c.outValue()
	if rc != sqlite3.SQLITE_OK {
		err := c.err(rc)
		c.close()
		return nil, fmt.Errorf("open raw reader: %w", err)
	}
	for _, p := range []string{
		"PRAGMA query_only = 1",
		fmt.Sprintf("PRAGMA busy_timeout = %d", readBusyTimeoutMS),
		"PRAGMA " + cachePragma,
		"PRAGMA " + mmapPragma,
	} {
		if err := c.exec(p); err != nil {
			c.close()
			return nil, fmt.Errorf("open raw reader: %s: %w", p, err)
		}
	}
	return c, nil
}

func (c *rawConn) close() {
	for _, s := range c.stmts {
		sqlite3.Xsqlite3_finalize(c.tls, s)
	}
	if c.db != 0 {
		sqlite3.Xsqlite3_close_v2(c.tls, c.db)
	}
	libc.Xfree(c.tls, c.out)
	c.tls.Close()
}

func (c *rawConn) err(rc int32) error {
	msg := libc.GoString(sqlite3.Xsqlite3_errstr(c.tls, rc))
	if c.db != 0 {
		msg = libc.GoString(sqlite3.Xsqlite3_errmsg(c.tls, c.db))
	}
	return &rawError{msg: msg, code: int(rc)}
}

// rawError is what SQLite's C API told the raw reader; its result code classifies it like the
// driver's own errors (see sqliteCode).
type rawError struct {
	msg  string
	code int
}

func (e *rawError) Error() string { return fmt.Sprintf("sqlite: %s (%d)", e.msg, e.code) }

func (c *rawConn) exec(query string) error {
	q, err := libc.CString(query)
	if err != nil {
		return err
	}
	defer libc.Xfree(c.tls, q)
	if rc := sqlite3.Xsqlite3_exec(c.tls, c.db, q, 0, 0, 0); rc != sqlite3.SQLITE_OK {
		return c.err(rc)
	}
	return nil
}

// maxStmts bounds a connection's prepared statements. The store's query texts are a small fixed
// set, except that a CJK search adds a clause per short term; past the bound they are all
// finalized and prepared again as needed.
const maxStmts = 256

// stmt returns the connection's prepared statement for query, preparing it once. No statement of
// c is running when it is called (c serves one query at a time).
func (c *rawConn) stmt(query string) (uintptr, error) {
	if s, ok := c.stmts[query]; ok {
		return s, nil
	}
	if len(c.stmts) >= maxStmts {
		for q, s := range c.stmts {
			sqlite3.Xsqlite3_finalize(c.tls, s)
			delete(c.stmts, q)
		}
	}
	q, err := libc.CString(query)
	if err != nil {
		return 0, err
	}
	defer libc.Xfree(c.tls, q)
	if rc := sqlite3.Xsqlite3_prepare_v2(c.tls, c.db, q, -1, c.out, 0); rc != sqlite3.SQLITE_OK {
		return 0, c.err(rc)
	}
	s := c.outValue()
	c.stmts[query] = s
	return s, nil
}

// outValue reads the word SQLite wrote at c.out.
func (c *rawConn) outValue() uintptr {
	return *(*uintptr)(unsafe.Pointer(unsafe.SliceData(cmem(c.out, int(unsafe.Sizeof(uintptr(0)))))))
}

// cmem views n bytes of C memory at p: memory SQLite allocated, outside the Go heap, valid until
// SQLite reuses it. (Reading the address through &p rather than converting it is what keeps vet
// from taking it for a Go pointer hidden in an integer, which it is not.)
func cmem(p uintptr, n int) []byte {
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), n)
}

// bind binds args to s's parameters in order: strings (copied by SQLite, SQLITE_TRANSIENT),
// integers, floats, booleans and nil.
func (c *rawConn) bind(s uintptr, args []any) error {
	for i, a := range args {
		n := int32(i + 1)
		var rc int32
		switch v := a.(type) {
		case string:
			p, err := libc.CString(v)
			if err != nil {
				return err
			}
			rc = sqlite3.Xsqlite3_bind_text(c.tls, s, n, p, int32(len(v)), ^uintptr(0))
			libc.Xfree(c.tls, p)
		case int:
			rc = sqlite3.Xsqlite3_bind_int64(c.tls, s, n, int64(v))
		case int64:
			rc = sqlite3.Xsqlite3_bind_int64(c.tls, s, n, v)
		case float64:
			rc = sqlite3.Xsqlite3_bind_double(c.tls, s, n, v)
		case bool:
			var b int64
			if v {
				b = 1
			}
			rc = sqlite3.Xsqlite3_bind_int64(c.tls, s, n, b)
		case nil:
			rc = sqlite3.Xsqlite3_bind_null(c.tls, s, n)
		default:
			return fmt.Errorf("cannot bind %T", a)
		}
		if rc != sqlite3.SQLITE_OK {
			return c.err(rc)
		}
	}
	return nil
}

// each runs query with args on a pooled connection and calls row for each result row; the row's
// texts stay valid after row returns.
func (t *rawReader) each(ctx context.Context, query string, args []any, row func(*rowReader) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	c, err := t.acquire(ctx)
	if err != nil {
		return err
	}
	defer func() { t.release(c, err != nil && ctx.Err() == nil) }()
	return c.each(ctx, query, args, row)
}

// each is rawReader.each on c.
func (c *rawConn) each(ctx context.Context, query string, args []any, row func(*rowReader) error) error {
	s, err := c.stmt(query)
	if err != nil {
		return err
	}
	defer sqlite3.Xsqlite3_reset(c.tls, s)
	if err := c.bind(s, args); err != nil {
		return err
	}
	r := rowReader{c: c, s: s}
	for i := 0; ; i++ {
		if i%256 == 255 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		switch rc := sqlite3.Xsqlite3_step(c.tls, s); rc {
		case sqlite3.SQLITE_ROW:
			if err := row(&r); err != nil {
				return err
			}
		case sqlite3.SQLITE_DONE:
			return nil
		default:
			return c.err(rc)
		}
	}
}

// query is each for callers that read rows with Scan, as they read database/sql rows.
func (t *rawReader) query(ctx context.Context, query string, args []any, row func(rowScanner) error) error {
	return t.each(ctx, query, args, func(r *rowReader) error { return row(r) })
}

// The columns of a transcript row, in the order rowReader.message reads them.
const rawMessageCols = `m.content, m.role, m.id, m.timestamp, m.active, m.compacted, m.summary,
	m.token_count, m.tool_call_id, m.tool_name, m.finish_reason, m.tool_calls, m.api_content,
	m.reasoning, m.reasoning_details`

// load reads the session's rows matching where, in id order.
func (t *rawReader) load(ctx context.Context, sessionID, where string) ([]store.Message, error) {
	var ms []store.Message
	// Sizing the slice first saves growing (and copying) it a dozen times for a long
	// transcript. The session's count of active rows is exact for the model's view and a lower
	// bound for the others. A few more make room for the turn the loader is about to add
	// (else its first append copies the whole transcript).
	err := t.each(ctx, "SELECT message_count FROM sessions WHERE id = ?1", []any{sessionID}, func(r *rowReader) error {
		ms = make([]store.Message, 0, min(max(r.int(0), 0)+turnRoom, 1<<20))
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = t.each(ctx, "SELECT "+rawMessageCols+" FROM messages m WHERE m.session_id = ?1 AND "+where+" ORDER BY m.id",
		[]any{sessionID}, func(r *rowReader) error {
			ms = append(ms, r.message(sessionID))
			return nil
		})
	if err != nil {
		return nil, err
	}
	return ms, nil
}

// loadActive reads the session's active history like load(ctx, sessionID, "m.active = 1"),
// through hc (see historyCache): in one read transaction it reads the session's counters and,
// when hc's entry for the session is proven current, only the active rows from the entry's last
// on; otherwise all of them, which it stores in hc. found is false when the session does not
// exist.
func (t *rawReader) loadActive(ctx context.Context, sessionID string, hc *historyCache) (ms []store.Message, found bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	c, err := t.acquire(ctx)
	if err != nil {
		return nil, false, err
	}
	failed := false
	defer func() { t.release(c, failed) }()
	if err := c.each(ctx, "BEGIN", nil, func(*rowReader) error { return nil }); err != nil {
		failed = ctx.Err() == nil
		return nil, false, err
	}
	defer func() {
		if cerr := c.each(ctx, "COMMIT", nil, func(*rowReader) error { return nil }); cerr != nil {
			failed = true // closed on release: never reused inside a transaction
			if err == nil {
				err = cerr
			}
		}
	}()
	defer func() {
		if err != nil && ctx.Err() == nil {
			failed = true
		}
	}()
	var count int
	var changes int64
	err = c.each(ctx, "SELECT message_count, history_changes FROM sessions WHERE id = ?1", []any{sessionID}, func(r *rowReader) error {
		found, count, changes = true, r.int(0), sqlite3.Xsqlite3_column_int64(r.c.tls, r.s, 1)
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if !found {
		hc.drop(sessionID)
		return nil, false, nil
	}
	const query = "SELECT " + rawMessageCols + " FROM messages m WHERE m.session_id = ?1 AND m.active = 1 AND m.id >= ?2 ORDER BY m.id"
	if e := hc.get(sessionID); e != nil && e.changes == changes && len(e.msgs) > 0 {
		last := e.msgs[len(e.msgs)-1].ID
		var added []store.Message
		err := c.each(ctx, query, []any{sessionID, last}, func(r *rowReader) error {
			added = append(added, r.message(sessionID))
			return nil
		})
		if err != nil {
			return nil, false, err
		}
		if len(added) > 0 && added[0].ID == last && len(e.msgs)+len(added)-1 == count {
			hc.extended.Add(1)
			if len(added) == 1 {
				return callerCopy(e.msgs), true, nil
			}
			ms := make([]store.Message, 0, len(e.msgs)+len(added)-1)
			ms = append(append(ms, e.msgs...), added[1:]...)
			hc.put(sessionID, changes, ms)
			return callerCopy(ms), true, nil
		}
	}
	hc.loaded.Add(1)
	ms = make([]store.Message, 0, min(max(count, 0), 1<<20))
	err = c.each(ctx, query, []any{sessionID, 0}, func(r *rowReader) error {
		ms = append(ms, r.message(sessionID))
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	hc.put(sessionID, changes, ms)
	return callerCopy(ms), true, nil
}

// rowReader copies the current row's text into large shared chunks, so a transcript costs a few
// allocations instead of several per row; the strings of one load share them.
type rowReader struct {
	c        *rawConn
	s        uintptr
	buf      []byte
	interned map[string]string // roles, tool names and finish reasons repeat on every row
}

const (
	chunkSize   = 64 << 10
	firstChunk  = 1 << 10
	ownAllocMin = chunkSize / 4 // longer texts get their own allocation
)

func (r *rowReader) message(sessionID string) store.Message {
	tls, s := r.c.tls, r.s
	flags := func(i int32) bool { return sqlite3.Xsqlite3_column_int64(tls, s, i) != 0 }
	m := store.Message{
		SessionID:    sessionID,
		Content:      r.text(0),
		Role:         r.intern(1),
		ID:           sqlite3.Xsqlite3_column_int64(tls, s, 2),
		Timestamp:    fromMicros(sqlite3.Xsqlite3_column_int64(tls, s, 3)),
		Active:       flags(4),
		Compacted:    flags(5),
		Summary:      flags(6),
		TokenCount:   int(sqlite3.Xsqlite3_column_int64(tls, s, 7)),
		ToolCallID:   r.text(8),
		ToolName:     r.intern(9),
		FinishReason: r.intern(10),
		APIContent:   r.text(12),
		Reasoning:    r.text(13),
	}
	if calls := r.text(11); calls != "" {
		// Stored by us as a JSON array; a row that somehow is not loads as no calls rather than
		// failing the whole transcript (as the database/sql path does).
		m.ToolCalls, _ = store.DecodeToolCalls(calls)
	}
	if n := r.textLen(14); n > 0 {
		// The caller may modify a RawMessage, so it gets its own memory.
		b := make([]byte, n)
		r.copyTo(b, 14)
		m.ReasoningDetails = json.RawMessage(b)
	}
	return m
}

// copyTo copies column i's text (len(dst) bytes) into dst.
func (r *rowReader) copyTo(dst []byte, i int32) {
	copy(dst, cmem(sqlite3.Xsqlite3_column_text(r.c.tls, r.s, i), len(dst)))
}

// textLen is the length of column i's text, 0 for NULL. column_text comes first, as SQLite
// documents: the length is that of the text the value converts to.
func (r *rowReader) textLen(i int32) int {
	if sqlite3.Xsqlite3_column_text(r.c.tls, r.s, i) == 0 {
		return 0
	}
	return int(sqlite3.Xsqlite3_column_bytes(r.c.tls, r.s, i))
}

// text returns column i as a string sharing the reader's chunks ("" for NULL).
func (r *rowReader) text(i int32) string {
	n := r.textLen(i)
	if n == 0 {
		return ""
	}
	if n >= ownAllocMin {
		b := make([]byte, n)
		r.copyTo(b, i)
		return unsafe.String(unsafe.SliceData(b), n)
	}
	if len(r.buf)+n > cap(r.buf) {
		// Chunks double from firstChunk up to chunkSize: a short transcript (a gateway turn
		// loads one every turn) does not cost a whole chunk, a long one still a few.
		r.buf = make([]byte, 0, max(min(2*cap(r.buf), chunkSize), firstChunk, n))
	}
	start := len(r.buf)
	r.buf = r.buf[:start+n]
	dst := r.buf[start : start+n : start+n]
	r.copyTo(dst, i)
	// The bytes are never written again: later texts go after them or into a new chunk.
	return unsafe.String(unsafe.SliceData(dst), n)
}

// intern returns column i as a string shared by every row with the same value.
func (r *rowReader) intern(i int32) string {
	n := r.textLen(i)
	if n == 0 {
		return ""
	}
	if n > len(r.c.scratch) {
		return r.text(i)
	}
	tmp := r.c.scratch[:n]
	r.copyTo(tmp, i)
	if v, ok := r.interned[string(tmp)]; ok {
		return v
	}
	v := string(tmp)
	if r.interned == nil {
		r.interned = map[string]string{}
	}
	r.interned[v] = v
	return v
}

func (r *rowReader) int(i int32) int { return int(sqlite3.Xsqlite3_column_int64(r.c.tls, r.s, i)) }

func (r *rowReader) null(i int32) bool {
	return sqlite3.Xsqlite3_column_type(r.c.tls, r.s, i) == sqlite3.SQLITE_NULL
}

// Scan reads the row into dest like database/sql's Rows.Scan, for the destination types the
// store's readers use; NULL into a plain type is an error, as there.
func (r *rowReader) Scan(dest ...any) error {
	tls, s := r.c.tls, r.s
	for j, d := range dest {
		i := int32(j)
		switch d := d.(type) {
		case *sql.NullString:
			*d = sql.NullString{}
			if !r.null(i) {
				*d = sql.NullString{String: r.text(i), Valid: true}
			}
			continue
		case *sql.NullInt64:
			*d = sql.NullInt64{}
			if !r.null(i) {
				*d = sql.NullInt64{Int64: sqlite3.Xsqlite3_column_int64(tls, s, i), Valid: true}
			}
			continue
		case **string:
			*d = nil
			if !r.null(i) {
				v := r.text(i)
				*d = &v
			}
			continue
		}
		if r.null(i) {
			return fmt.Errorf("column %d is NULL, which does not scan into %T", j, d)
		}
		switch d := d.(type) {
		case *string:
			*d = r.text(i)
		case *int64:
			*d = sqlite3.Xsqlite3_column_int64(tls, s, i)
		case *int:
			*d = r.int(i)
		case *float64:
			*d = sqlite3.Xsqlite3_column_double(tls, s, i)
		case *bool:
			*d = sqlite3.Xsqlite3_column_int64(tls, s, i) != 0
		default:
			return fmt.Errorf("column %d: cannot scan into %T", j, d)
		}
	}
	return nil
}
