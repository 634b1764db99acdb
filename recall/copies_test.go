package recall

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
	"github.com/spoolhq/spool/store/storetest"
)

// TestReadAndScrollKeepIdenticalMessages: two distinct messages with the same role, text and
// time are two messages when the model reads or scrolls a past session.
func TestReadAndScrollKeepIdenticalMessages(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(bg, filepath.Join(t.TempDir(), "spool.db"), sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.CreateSession(bg, store.NewSession{ID: "past"}); err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var ids []int64
	for range 5 {
		got, err := st.AppendBatch(bg, "past", []store.Message{msg(store.RoleUser, "ok", ts), msg(store.RoleUser, "ok", ts)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, got...)
	}
	read, err := Read(bg, st, Request{SessionID: "past", Current: "elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	if len(read.Messages) != 10 {
		t.Fatalf("read shows %d of 10 messages", len(read.Messages))
	}
	sc, err := Scroll(bg, st, Request{SessionID: "past", AroundMessageID: ids[4], Window: 3, Current: "elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Messages) != 7 || sc.MessagesBefore != 3 || sc.MessagesAfter != 3 {
		t.Fatalf("scroll of ±3 around the 5th of 10: %d messages, %d before, %d after", len(sc.Messages), sc.MessagesBefore, sc.MessagesAfter)
	}
}

// TestDiscoverCarriedMessages: a message a compaction carried forward verbatim is found once;
// in the caller's own live context it is not a result at all, elsewhere the result anchors on
// the row the display view shows, so scrolling from it works.
func TestDiscoverCarriedMessages(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(bg, filepath.Join(t.TempDir(), "spool.db"), sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ts := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for _, id := range []string{"mine", "other"} {
		if _, err := st.CreateSession(bg, store.NewSession{ID: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AppendBatch(bg, id, []store.Message{
			msg(store.RoleUser, "the database listens on port 5433 says "+id, ts),
			msg(store.RoleAssistant, "noted", ts.Add(time.Second)),
			msg(store.RoleUser, "more", ts.Add(2*time.Second)),
		}); err != nil {
			t.Fatal(err)
		}
		active, err := st.Conversation(bg, id, store.ViewActive)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := storetest.Compact(bg, st, store.CompactRequest{SessionID: id, Messages: []store.Message{
			active[0], {Role: store.RoleUser, Content: "[CONTEXT COMPACTION] work went on", Summary: true, Timestamp: ts.Add(time.Hour)},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := Discover(bg, st, Request{Query: "5433", Current: "mine", Limit: 5, Window: 2})
	if err != nil {
		t.Fatal(err)
	}
	if d.Count != 1 || d.Results[0].SessionID != "other" {
		t.Fatalf("discover 5433 from mine = %+v, want only the other session (mine still has it live)", d.Results)
	}
	r := d.Results[0]
	display, err := st.Conversation(bg, "other", store.ViewDisplay)
	if err != nil {
		t.Fatal(err)
	}
	var shown int64
	for _, m := range display {
		if m.Content == "the database listens on port 5433 says other" {
			shown = m.ID
		}
	}
	if r.MatchMessageID != shown || r.Detail != "full" || r.Archived {
		t.Fatalf("result anchors on %d (detail %s, archived %v), want the displayed live copy %d", r.MatchMessageID, r.Detail, r.Archived, shown)
	}
	if _, err := Scroll(bg, st, Request{SessionID: "other", AroundMessageID: r.MatchMessageID, Current: "mine"}); err != nil {
		t.Fatalf("scroll from the result: %v", err)
	}
}
