package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// stmtCache keeps prepared statements of the hot paths: modernc.org/sqlite parses and plans
// every statement it is handed, which costs as much as a small insert. DB keeps one cache for the
// append path on the writer's single connection and one for the reads on the reader pool.
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func (c *stmtCache) get(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.m[query]; ok {
		return s, nil
	}
	s, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	c.m[query] = s
	return s, nil
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.m {
		s.Close()
	}
	c.m = nil
}

// writerStatements are prepared when the database opens: preparing on the writer's only
// connection while a transaction holds it would wait forever.
var writerStatements = []string{bumpSessionSQL, insertMessageSQL, insertMessagesBulkSQL}

func (db *DB) prepareWriter(ctx context.Context) error {
	for _, q := range writerStatements {
		if _, err := db.wstmts.get(ctx, db.w, q); err != nil {
			return fmt.Errorf("prepare %.40q: %w", q, err)
		}
	}
	return nil
}

// txStmt binds a statement prepared by prepareWriter to tx.
func (db *DB) txStmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	db.wstmts.mu.Lock()
	s, ok := db.wstmts.m[query]
	db.wstmts.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("statement %.40q was not prepared when the database opened", query)
	}
	return tx.StmtContext(ctx, s), nil
}
