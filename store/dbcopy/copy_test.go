package dbcopy_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/dbcopy"
	"github.com/spoolhq/spool/store/postgres"
	"github.com/spoolhq/spool/store/postgres/pgtest"
	"github.com/spoolhq/spool/store/sqlite"
	"github.com/spoolhq/spool/store/storetest"
)

var bg = context.Background()

type backend interface {
	store.Backend
	dbcopy.Source
	dbcopy.Target
}

func openSQLite(t *testing.T) backend {
	t.Helper()
	db, err := sqlite.Open(bg, filepath.Join(t.TempDir(), "spool.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func openPostgres(t *testing.T) backend {
	t.Helper()
	db, err := postgres.Open(bg, pgtest.NewDatabase(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestCopyBetweenBackends: every direction carries the whole store; the target answers like
// the source (rows, ids, lineage, usage, routes, idempotency, search), continues the id
// sequences after the copied ids, and holds the lease released with its generation.
func TestCopyBetweenBackends(t *testing.T) {
	t.Parallel()
	kinds := map[string]func(*testing.T) backend{"sqlite": openSQLite, "postgres": openPostgres}
	for _, c := range [][2]string{{"sqlite", "sqlite"}, {"sqlite", "postgres"}, {"postgres", "sqlite"}, {"postgres", "postgres"}} {
		t.Run(c[0]+"_to_"+c[1], func(t *testing.T) {
			t.Parallel()
			src, dst := kinds[c[0]](t), kinds[c[1]](t)
			ids := storetest.Fill(t, src)
			if _, err := src.AcquireNamedLease(bg, "poller", "host-a/1/poll", time.Hour); err != nil {
				t.Fatal(err)
			}
			if err := src.PutResponse(bg, store.Response{ID: "resp_1", Principal: "p", SessionID: ids[0], Status: "completed", Latest: true}); err != nil {
				t.Fatal(err)
			}
			if err := src.AdvanceWatermark(bg, store.Watermark{Platform: "discord", Bot: "b", LastID: "42"}); err != nil {
				t.Fatal(err)
			}
			rep, err := dbcopy.Copy(bg, src, dst, dbcopy.Options{BatchRows: 3})
			if err != nil {
				t.Fatalf("copy: %v", err)
			}
			st, _ := src.Stats(bg)
			if rep.Rows("sessions") != int64(st.Sessions) || rep.Rows("messages") != int64(st.Messages) || rep.Rows("routes") != 1 ||
				rep.Rows("idempotency_keys") != 1 || rep.Rows("requests") != 2 {
				t.Errorf("report %+v does not count the source (%+v)", rep, st)
			}
			storetest.SameContents(t, src, dst, ids)
			if problems, err := dst.Check(bg); err != nil || len(problems) > 0 {
				t.Errorf("check of the copy (its search index included): %v %v", problems, err)
			}
			// The lease was copied released: another holder takes it at once, with a newer generation.
			l, err := dst.AcquireLease(bg, "m2", "host-b/1/turn", 0)
			if err != nil || l.Generation < 2 {
				t.Errorf("lease on the copy: %+v %v, want it free with the generation carried over", l, err)
			}
			if nl, err := dst.AcquireNamedLease(bg, "poller", "host-b/1/poll", time.Minute); err != nil || nl.Generation != 2 {
				t.Errorf("named lease on the copy: %+v %v, want it free with the generation carried over", nl, err)
			}
			if r, err := dst.GetResponse(bg, "p", "resp_1"); err != nil || r.SessionID != ids[0] {
				t.Errorf("response on the copy: %+v %v", r, err)
			}
			if latest, _ := dst.LatestResponse(bg, ids[0]); latest != "resp_1" {
				t.Errorf("latest response on the copy: %q", latest)
			}
			if w, err := dst.Watermark(bg, "discord", "b"); err != nil || w.LastID != "42" {
				t.Errorf("watermark on the copy: %+v %v", w, err)
			}
			// New rows continue after the copied ids in both stores.
			var top int64
			all, _ := dst.Conversation(bg, "z-parent", store.ViewAll)
			for _, id := range ids {
				ms, _ := dst.Conversation(bg, id, store.ViewAll)
				for _, m := range ms {
					top = max(top, m.ID)
				}
			}
			id, err := dst.Append(bg, "z-parent", store.Message{Role: store.RoleUser, Content: "after the copy"})
			if err != nil || id <= top || len(all) == 0 {
				t.Errorf("append on the copy: id %d (copied ids up to %d), %v", id, top, err)
			}
		})
	}
}

// TestCopyRefusesNonEmptyTarget: a target with data is refused and left alone; Replace
// overwrites it with the source's contents in the same transaction.
func TestCopyRefusesNonEmptyTarget(t *testing.T) {
	t.Parallel()
	src, dst := openSQLite(t), openSQLite(t)
	ids := storetest.Fill(t, src)
	if _, err := dst.CreateSession(bg, store.NewSession{ID: "already-here"}); err != nil {
		t.Fatal(err)
	}
	_, err := dbcopy.Copy(bg, src, dst, dbcopy.Options{})
	var ne *dbcopy.NotEmptyError
	if !errors.As(err, &ne) || ne.Table != "sessions" {
		t.Fatalf("copy into a non-empty target: %v, want NotEmptyError on sessions", err)
	}
	if ls, _ := dst.ListSessions(bg, store.ListOptions{}); len(ls) != 1 || ls[0].ID != "already-here" {
		t.Fatalf("the refused target changed: %+v", ls)
	}
	if _, err := dbcopy.Copy(bg, src, dst, dbcopy.Options{Replace: true}); err != nil {
		t.Fatalf("copy with Replace: %v", err)
	}
	if _, err := dst.GetSession(bg, "already-here"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Replace kept the old session: %v", err)
	}
	storetest.SameContents(t, src, dst, ids)
}

// dropOne is a real target that loses one message on the way: verification must catch it.
type dropOne struct{ dbcopy.Target }

func (d dropOne) Load(ctx context.Context, fn func(dbcopy.Writer) error) error {
	return d.Target.Load(ctx, func(w dbcopy.Writer) error { return fn(&dropWriter{Writer: w}) })
}

type dropWriter struct {
	dbcopy.Writer
	dropped bool
}

func (d *dropWriter) Insert(ctx context.Context, table string, cols []string, rows [][]any) error {
	if table == "messages" && !d.dropped && len(rows) > 1 {
		rows, d.dropped = rows[1:], true
	}
	return d.Writer.Insert(ctx, table, cols, rows)
}

// TestCopyVerificationAborts: a target that does not hold what was read fails the copy, and
// nothing of it is committed.
func TestCopyVerificationAborts(t *testing.T) {
	t.Parallel()
	src, dst := openSQLite(t), openSQLite(t)
	storetest.Fill(t, src)
	_, err := dbcopy.Copy(bg, src, dropOne{dst}, dbcopy.Options{})
	var me *dbcopy.MismatchError
	if !errors.As(err, &me) || me.Table != "messages" || me.DestRows != me.SourceRows-1 {
		t.Fatalf("copy that lost a row: %v, want a MismatchError on messages", err)
	}
	if st, err := dst.Stats(bg); err != nil || st.Sessions != 0 || st.Messages != 0 {
		t.Errorf("a failed copy left %+v (%v) on the target", st, err)
	}
}
