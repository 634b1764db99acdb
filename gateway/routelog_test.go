package gateway

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
)

// rotatingRunner answers each turn from a continuation session it creates, as a rotating
// compaction does.
type rotatingRunner struct{ st Store }

func (r rotatingRunner) Run(ctx context.Context, sid, input string, _ agent.RunOptions) (agent.Result, error) {
	tip, err := r.st.CreateSession(ctx, store.NewSession{ParentID: sid, Relation: store.RelationCompression, Source: Source})
	if err != nil {
		return agent.Result{}, err
	}
	return agent.Result{SessionID: tip.ID, Reply: "continued"}, nil
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRouteMoveFailureLogged: when a turn continued in a new session and the session key's
// route cannot follow it (a SQLite trigger refuses the route update), the turn still answers,
// and the failure is an error line in the log naming both sessions, not dropped.
func TestRouteMoveFailureLogged(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	path := filepath.Join(t.TempDir(), "spool.db")
	db, err := sqlite.Open(bg, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var logs lockedBuffer
	g, err := New(Deps{Store: db, Runner: rotatingRunner{db}, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	p, err := g.resolve(bg, Request{SessionKey: "k", Messages: []Message{{Role: "user", Content: "open"}}})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec("CREATE TRIGGER refuse BEFORE UPDATE ON routes BEGIN SELECT RAISE(ABORT, 'disk refuses'); END"); err != nil {
		t.Fatal(err)
	}
	rep, err := g.Turn(bg, Request{SessionKey: "k", Messages: []Message{{Role: "user", Content: "go on"}}}, Sink{})
	if err != nil || rep.Result.Reply != "continued" || rep.SessionID == p.sessionID {
		t.Fatalf("turn: %+v, %v", rep, err)
	}
	l := logs.String()
	if !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "session="+rep.SessionID) || !strings.Contains(l, "from="+p.sessionID) {
		t.Fatalf("log %q: want an error line naming %s and %s", l, rep.SessionID, p.sessionID)
	}
}
