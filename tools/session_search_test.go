package tools

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
)

func TestSessionSearchTool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "spool.db"), sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, id := range []string{"old", "now"} {
		if _, err := st.CreateSession(ctx, store.NewSession{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.AppendBatch(ctx, "old", []store.Message{{Role: "user", Content: "the flux capacitor needs 1.21 gigawatts"}, {Role: "assistant", Content: "noted"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, "now", store.Message{Role: "user", Content: "what did we say about the flux capacitor?"}); err != nil {
		t.Fatal(err)
	}
	env := Env{SessionID: "now", Store: st}
	cases := []struct {
		name, args string
		isErr      bool
		want       string
	}{
		{"discover", `{"query":"flux capacitor"}`, false, `"session_id":"old"`},
		{"read", `{"session_id":"old"}`, false, `"mode":"read"`},
		{"browse", `{}`, false, `"mode":"browse","results":[{"session_id":"old"`},
		// Errors inside recall are answers the model reads, not tool failures.
		{"unknown session", `{"session_id":"zzz","around_message_id":1}`, false, `{"success":false,"mode":"scroll","error":"unknown session_id \"zzz\""}`},
		// The schema catches a wrongly typed anchor before recall runs.
		{"string anchor", `{"session_id":"old","around_message_id":"x"}`, true, "around_message_id: want integer"},
		{"unknown argument", `{"q":"flux"}`, true, `unknown property "q"`},
	}
	for _, c := range cases {
		res := Default().Call(ctx, env, "session_search", c.args)
		if res.IsError != c.isErr || !strings.Contains(res.Content, c.want) {
			t.Fatalf("%s: %+v, want %q", c.name, res, c.want)
		}
		if !c.isErr && !json.Valid([]byte(res.Content)) {
			t.Fatalf("%s: not JSON: %s", c.name, res.Content)
		}
	}
	// The caller's own live message is not offered back.
	if res := Default().Call(ctx, env, "session_search", `{"query":"what did we say"}`); !strings.Contains(res.Content, `"count":0`) {
		t.Fatalf("own session found: %s", res.Content)
	}
	// recall.detail: summary is the default when the model names none (here without a summarizer:
	// the raw matches with the note saying so); the model's own detail still wins.
	sumEnv := Env{SessionID: "now", Store: st, RecallDetail: "summary"}
	if res := Default().Call(ctx, sumEnv, "session_search", `{"query":"flux capacitor"}`); !strings.Contains(res.Content, "detail=summary is unavailable") {
		t.Fatalf("summary default not applied: %s", res.Content)
	}
	if res := Default().Call(ctx, sumEnv, "session_search", `{"query":"flux capacitor","detail":"adaptive"}`); strings.Contains(res.Content, "detail=summary") {
		t.Fatalf("the model's detail lost to the default: %s", res.Content)
	}
	if res := Default().Call(ctx, Env{}, "session_search", `{"query":"x"}`); !res.IsError || !strings.Contains(res.Content, "no session store") {
		t.Fatalf("without a store: %+v", res)
	}
}
