package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

// TestShowKeepsIdenticalMessages: `sessions show` prints every row, also two distinct messages
// with the same role, text and time (issue 10, item 4: it said "4 active" and printed 3).
func TestShowKeepsIdenticalMessages(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ts := time.Now().Add(-time.Hour).Truncate(time.Second)
	withStore(t, home, func(st store.Store) {
		ctx := context.Background()
		check(st.CreateSession(ctx, store.NewSession{ID: "20261130_100000_aaaaaa"}))(t)
		for range 2 {
			check(st.AppendBatch(ctx, "20261130_100000_aaaaaa", []store.Message{
				{Role: store.RoleUser, Content: "ok", Timestamp: ts}, {Role: store.RoleUser, Content: "ok", Timestamp: ts}}))(t)
		}
	})
	out := spool(t, home, "sessions", "show", "20261130_100000_aaaaaa").ok(t, "show").stdout
	if !strings.Contains(out, "4 active") || strings.Count(out, "── #") != 4 {
		t.Fatalf("show prints %d of 4 messages:\n%s", strings.Count(out, "── #"), out)
	}
	type shown struct {
		Messages []struct {
			ID int64 `json:"id"`
		} `json:"messages"`
	}
	if j := decode[shown](t, spool(t, home, "sessions", "show", "20261130_100000_aaaaaa", "--json").ok(t, "show --json")); len(j.Messages) != 4 {
		t.Fatalf("show --json has %d of 4 messages", len(j.Messages))
	}
}
