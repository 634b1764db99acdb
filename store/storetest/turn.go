package storetest

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

// testCommitTurn: a turn's step lands whole in one CommitTurn (messages, usage, the session
// patch, the release) under the current lease, and nothing of it under a stale one.
func testCommitTurn(t *testing.T, h Harness) {
	st, _ := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "conv"})
	a, err := st.AcquireLease(bg, "conv", "holder-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cfg := json.RawMessage(`{"compression":{"n":1}}`)
	ids, err := st.CommitTurn(bg, "conv", a, store.TurnWrite{
		Messages: []store.Message{user("question"), assistant("answer")},
		Requests: []store.RequestRecord{{Model: "m", Usage: store.Usage{InputTokens: 10, OutputTokens: 5, CacheReadTokens: 4}}},
		Patch:    &store.SessionPatch{ModelConfig: cfg},
	})
	if err != nil || len(ids) != 2 || ids[0] >= ids[1] {
		t.Fatalf("commit under the lease: ids %v, %v", ids, err)
	}
	s := mustSession(t, st, "conv")
	if s.Usage.InputTokens != 10 || s.Usage.OutputTokens != 5 || s.Usage.CacheReadTokens != 4 || s.Usage.APICalls != 1 ||
		string(s.ModelConfig) != string(cfg) || s.MessageCount != 2 {
		t.Fatalf("after the commit: usage %+v, model_config %s, %d messages", s.Usage, s.ModelConfig, s.MessageCount)
	}
	ms := mustConversation(t, st, "conv", store.ViewActive)
	if !equalStrings(contents(ms), []string{"question", "answer"}) || ms[0].ID != ids[0] || ms[1].ID != ids[1] {
		t.Fatalf("transcript %q, ids %v", contents(ms), ids)
	}
	if rs, err := st.Requests(bg, "conv", 0); err != nil || len(rs) != 1 || rs[0].Model != "m" || rs[0].Task != "turn" {
		t.Fatalf("request rows %+v (%v)", rs, err)
	}
	// Without Release the lease stays ours.
	_, err = st.AcquireLease(bg, "conv", "holder-b", time.Minute)
	wantErr(t, err, store.ErrLeaseHeld, "lease after a commit without release")

	// The turn's last step: a message, its usage and the release in one commit.
	if _, err := st.CommitTurn(bg, "conv", a, store.TurnWrite{Messages: []store.Message{assistant("more")},
		Requests: []store.RequestRecord{{Usage: store.Usage{InputTokens: 1}}}, Release: true}); err != nil {
		t.Fatalf("final commit: %v", err)
	}
	b, err := st.AcquireLease(bg, "conv", "holder-b", time.Minute)
	if err != nil || b.Generation != a.Generation+1 {
		t.Fatalf("the final commit did not release the lease: %+v %v", b, err)
	}

	// A stale holder: nothing of its step lands, and its release does not free b's lease.
	before := mustSession(t, st, "conv")
	for _, tc := range []struct {
		name string
		w    store.TurnWrite
	}{
		{"messages", store.TurnWrite{Messages: []store.Message{user("stale")}, Requests: []store.RequestRecord{{Usage: store.Usage{InputTokens: 99}}},
			Patch: &store.SessionPatch{ModelConfig: json.RawMessage(`{"stale":true}`)}, Release: true}},
		{"usage only", store.TurnWrite{Requests: []store.RequestRecord{{Usage: store.Usage{InputTokens: 99}}}}},
		{"patch only", store.TurnWrite{Patch: &store.SessionPatch{ModelConfig: json.RawMessage(`{"stale":true}`)}}},
		{"empty patch", store.TurnWrite{Patch: &store.SessionPatch{}}},
	} {
		_, err := st.CommitTurn(bg, "conv", a, tc.w)
		wantErr(t, err, store.ErrLeaseLost, "stale commit ("+tc.name+")")
	}
	after := mustSession(t, st, "conv")
	if after.Usage != before.Usage || string(after.ModelConfig) != string(before.ModelConfig) || after.MessageCount != before.MessageCount {
		t.Fatalf("a refused commit changed the session: %+v -> %+v", before, after)
	}
	if got := contents(mustConversation(t, st, "conv", store.ViewAll)); !equalStrings(got, []string{"question", "answer", "more"}) {
		t.Fatalf("transcript %q: a refused commit landed", got)
	}
	if rs, _ := st.Requests(bg, "conv", 0); len(rs) != 2 {
		t.Fatalf("%d request rows, want 2", len(rs))
	}
	_, err = st.AcquireLease(bg, "conv", "holder-c", time.Minute)
	wantErr(t, err, store.ErrLeaseHeld, "b's lease after a stale release")
	// A lone release of a lost lease is no error (as ReleaseLease), and changes nothing.
	if _, err := st.CommitTurn(bg, "conv", a, store.TurnWrite{Release: true}); err != nil {
		t.Fatalf("releasing a lost lease: %v", err)
	}
	if _, err := st.Append(bg, "conv", user("by b"), store.WithLease(b)); err != nil {
		t.Fatalf("b lost its lease to a stale release: %v", err)
	}
	// An empty step writes nothing.
	if ids, err := st.CommitTurn(bg, "conv", b, store.TurnWrite{}); err != nil || len(ids) != 0 {
		t.Fatalf("empty commit: %v %v", ids, err)
	}

	// A missing session, and a session rotated by compression (messages refused, like AppendBatch).
	_, err = st.CommitTurn(bg, "missing", b, store.TurnWrite{Messages: []store.Message{user("x")}})
	if err == nil || !(errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrLeaseLost)) {
		t.Fatalf("commit on a missing session: %v", err)
	}
	if _, err := st.RotateCompaction(bg, store.RotateRequest{ParentID: "conv", Messages: []store.Message{user("cont")},
		Child: store.NewSession{ID: "conv-cont"}}, b.Fence()); err != nil {
		t.Fatal(err)
	}
	_, err = st.CommitTurn(bg, "conv", b, store.TurnWrite{Messages: []store.Message{user("late")}})
	wantErr(t, err, store.ErrSessionClosed, "messages on a rotated session")
	if _, err := st.CommitTurn(bg, "conv-cont", b, store.TurnWrite{Messages: []store.Message{assistant("on the tip")},
		Requests: []store.RequestRecord{{Usage: store.Usage{OutputTokens: 3}}}, Release: true}); err != nil {
		t.Fatalf("commit on the continuation under its root's lease: %v", err)
	}
	if u := mustSession(t, st, "conv-cont").Usage; u.OutputTokens != 3 {
		t.Fatalf("continuation usage %+v", u)
	}
	if _, err := st.AcquireLease(bg, "conv-cont", "holder-d", time.Minute); err != nil {
		t.Fatalf("lease after the continuation's final commit: %v", err)
	}

	// The release in a commit wakes a waiter like ReleaseLease does.
	w, ok := st.(store.LeaseWatcher)
	if !ok {
		return
	}
	mustCreate(t, st, store.NewSession{ID: "woken"})
	e, err := st.AcquireLease(bg, "woken", "holder-e", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	watch, err := w.WatchLease("woken")
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	if _, err := st.CommitTurn(bg, "woken", e, store.TurnWrite{Messages: []store.Message{user("last")}, Release: true}); err != nil {
		t.Fatal(err)
	}
	if err := watch.Wait(bg, time.Minute); err != nil {
		t.Fatalf("the commit's release did not wake the watcher: %v", err)
	}
}

// testCommitTurnEqualsParts: whatever a CommitTurn carries, the session it leaves (counters,
// usage, cost, compaction state, model, preview, last activity), its transcript and its request
// rows are what the same writes made one by one (AppendBatch, RecordRequest, UpdateSession)
// leave on a twin session: a backend may merge the commit's statements, never change its effect.
func testCommitTurnEqualsParts(t *testing.T, h Harness) {
	st, _ := h.open(t)
	at := time.Now().UTC().Add(time.Hour).Truncate(time.Second) // after both sessions started: each step moves the last activity
	msg := func(role, text string, sec int) store.Message {
		return store.Message{Role: role, Content: text, Timestamp: at.Add(time.Duration(sec) * time.Second)}
	}
	call := store.Message{Role: store.RoleAssistant, ToolCalls: []store.ToolCall{{ID: "c1", Type: "function", Function: store.ToolFunction{Name: "read", Arguments: `{"path":"x"}`}}},
		Timestamp: at.Add(3 * time.Second)}
	req := func(in, out int64, cost float64) store.RequestRecord {
		return store.RequestRecord{At: at, Model: "m", Usage: store.Usage{InputTokens: in, OutputTokens: out, CacheReadTokens: in / 2,
			CacheWriteTokens: 1, ReasoningTokens: 2, CostUSD: cost}}
	}
	model, cwd := "other-model", "/tmp/x"
	steps := []store.TurnWrite{
		{Messages: []store.Message{msg(store.RoleUser, "the first question, long enough to be cut in the preview of a picker", 1)}},
		{Messages: []store.Message{msg(store.RoleAssistant, "answer", 2)}, Requests: []store.RequestRecord{req(10, 5, 0.1)},
			Patch: &store.SessionPatch{ModelConfig: json.RawMessage(`{"compression":{"n":1}}`)}},
		{Messages: []store.Message{call, {Role: store.RoleTool, ToolCallID: "c1", ToolName: "read", Content: "x", Timestamp: at.Add(4 * time.Second)}},
			Requests: []store.RequestRecord{req(20, 7, 0.2)}},
		{Requests: []store.RequestRecord{req(3, 1, 0.3)}},
		{Patch: &store.SessionPatch{ModelConfig: json.RawMessage(`{"compression":{"n":2}}`)}},
		{Patch: &store.SessionPatch{}},
		{Messages: []store.Message{msg(store.RoleUser, "second", 5), msg(store.RoleAssistant, "two calls", 6)},
			Requests: []store.RequestRecord{req(1, 1, 0.1), req(2, 2, 0.2)}},
		{Messages: []store.Message{msg(store.RoleAssistant, "moved", 7)}, Requests: []store.RequestRecord{req(4, 4, 0.7)},
			Patch: &store.SessionPatch{Model: &model, Cwd: &cwd, ModelConfig: json.RawMessage(`{"compression":{"n":3}}`)}},
		{Messages: []store.Message{msg(store.RoleUser, "last", 8), msg(store.RoleAssistant, "bye", 9)}, Requests: []store.RequestRecord{req(5, 6, 0.05)},
			Release: true},
	}
	mustCreate(t, st, store.NewSession{ID: "whole", Model: "m"})
	mustCreate(t, st, store.NewSession{ID: "parts", Model: "m"})
	var held *store.Lease
	for i, w := range steps {
		if held == nil {
			a, err := st.AcquireLease(bg, "whole", "holder", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			held = &a
		}
		if _, err := st.CommitTurn(bg, "whole", *held, w); err != nil {
			t.Fatalf("step %d: commit: %v", i, err)
		}
		if w.Release {
			held = nil
		}
		if len(w.Messages) > 0 {
			if _, err := st.AppendBatch(bg, "parts", w.Messages); err != nil {
				t.Fatalf("step %d: append: %v", i, err)
			}
		}
		for _, r := range w.Requests {
			if err := st.RecordRequest(bg, "parts", r); err != nil {
				t.Fatalf("step %d: record: %v", i, err)
			}
		}
		if w.Patch != nil {
			if err := st.UpdateSession(bg, "parts", *w.Patch); err != nil {
				t.Fatalf("step %d: update: %v", i, err)
			}
		}
		sameSession(t, st, i, "whole", "parts")
		rw, _ := st.Requests(bg, "whole", 0)
		rp, _ := st.Requests(bg, "parts", 0)
		if !reflect.DeepEqual(rw, rp) {
			t.Fatalf("step %d: request rows differ:\nwhole %+v\nparts %+v", i, rw, rp)
		}
	}
}
