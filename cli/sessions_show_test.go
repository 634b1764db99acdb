package cli_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

// TestShowKeepsIdenticalMessages: `sessions show` prints every row, also two distinct messages
// with the same role, text and time (it once said "4 active" and printed 3).
func TestShowKeepsIdenticalMessages(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ts := time.Now().Add(-time.Hour).Truncate(time.Second)
	withStore(t, home, func(st store.Backend) {
		ctx := context.Background()
		check(st.CreateSession(ctx, store.NewSession{ID: "20261130_100000_aaaaaa"}))(t)
		for range 2 {
			check(st.AppendBatch(ctx, "20261130_100000_aaaaaa", []store.Message{
				{Role: store.RoleUser, Content: "ok", Timestamp: ts}, {Role: store.RoleUser, Content: "ok", Timestamp: ts}}))(t)
		}
	})
	out := spool(t, home, "sessions", "show", "20261130_100000_aaaaaa").ok(t, "show").stdout
	if !strings.Contains(out, "4 messages") || strings.Count(out, "── #") != 4 {
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

// TestShowBindings: `sessions show` lists the chat lanes (routes) continuing a session, and
// nothing for a session no chat points at.
func TestShowBindings(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	withStore(t, home, func(st store.Backend) {
		ctx := context.Background()
		check(st.CreateSession(ctx, store.NewSession{ID: "20261130_100000_bbbbbb"}))(t)
		check(st.CreateSession(ctx, store.NewSession{ID: "20261130_100000_cccccc"}))(t)
		for _, k := range []string{"agent:main:slack:thread:T1:C1:1800000000.000100", "agent:main:discord:dm:600"} {
			if err := st.PutRoute(ctx, store.Route{Key: k, SessionID: "20261130_100000_bbbbbb"}); err != nil {
				t.Fatal(err)
			}
		}
	})
	out := spool(t, home, "sessions", "show", "20261130_100000_bbbbbb").ok(t, "show").stdout
	for _, k := range []string{"agent:main:discord:dm:600", "agent:main:slack:thread:T1:C1:1800000000.000100"} {
		if !regexp.MustCompile(`Bound to:\s+` + regexp.QuoteMeta(k) + `\n`).MatchString(out) {
			t.Errorf("show lacks %q:\n%s", k, out)
		}
	}
	if out := spool(t, home, "sessions", "show", "20261130_100000_cccccc").ok(t, "show").stdout; strings.Contains(out, "Bound to") {
		t.Errorf("an unbound session shows bindings:\n%s", out)
	}
	type shown struct {
		Bindings []struct {
			Key       string `json:"key"`
			SessionID string `json:"session_id"`
		} `json:"bindings"`
	}
	j := decode[shown](t, spool(t, home, "sessions", "show", "20261130_100000_bbbbbb", "--json").ok(t, "show --json"))
	if len(j.Bindings) != 2 || j.Bindings[0].Key != "agent:main:discord:dm:600" || j.Bindings[1].SessionID != "20261130_100000_bbbbbb" {
		t.Fatalf("bindings %+v", j.Bindings)
	}
}
