package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

// Fill gives st a store with every kind of data a copy between backends must carry: a system
// prompt, model config, tool calls and their results (one longer than the indexed prefix), CJK
// text, reasoning details, an in-place compaction (archived, superseded and copied rows), a
// rotation (a compression chain), a branch, a fork whose parent's id sorts after the child's,
// usage records, routes, idempotency keys and a held turn lease. It returns the ids of the
// sessions it made.
func Fill(tb testing.TB, st store.Backend) []string {
	tb.Helper()
	ctx := context.Background()
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 123456000, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	_, err := st.CreateSession(ctx, store.NewSession{ID: "m1", Title: "migration plan", Model: "m-large",
		ModelConfig: json.RawMessage(`{"temperature":0.2}`), StartedAt: at(0), Cwd: "/src/app", GitBranch: "main", UserID: "u1"})
	must(err)
	_, err = st.SetSystemPrompt(ctx, "m1", "You are careful. 系统提示")
	must(err)
	long := strings.Repeat("log line ok\n", 1000) + "needle-at-the-end"
	_, err = st.AppendBatch(ctx, "m1", []store.Message{
		{Role: store.RoleUser, Content: "move the flamingo parser to 会话数据库", Timestamp: at(1)},
		{Role: store.RoleAssistant, Content: "reading it", Reasoning: "think", ReasoningDetails: json.RawMessage(`[{"type":"reasoning.encrypted","data":"x<&>"}]`),
			ToolCalls:    []store.ToolCall{{ID: "call_1", Type: "function", Function: store.ToolFunction{Name: "grep", Arguments: `{"pattern":"flamingo"}`}}},
			FinishReason: "tool_calls", TokenCount: 12, Timestamp: at(2)},
		{Role: store.RoleTool, ToolCallID: "call_1", ToolName: "grep", Content: long, Timestamp: at(3)},
		{Role: store.RoleAssistant, Content: "found it; 桂林山水 too", APIContent: "found it (wire)", Timestamp: at(4)},
		{Role: store.RoleUser, Content: "now the zebra module", Timestamp: at(5)},
		{Role: store.RoleAssistant, Content: "zebra done", Timestamp: at(6)},
	})
	must(err)
	must(st.RecordRequest(ctx, "m1", store.RequestRecord{At: at(2), Model: "m-large", Usage: store.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 64, CostUSD: 0.0125},
		Break: &store.CacheBreak{Layer: "messages", Index: 3, Reason: "resume"}, Latency: 1500 * time.Millisecond}))
	must(st.RecordRequest(ctx, "m1", store.RequestRecord{At: at(6), Model: "m-small", Task: "title", Usage: store.Usage{InputTokens: 7}}))
	active, err := st.Conversation(ctx, "m1", store.ViewActive)
	must(err)
	_, err = Compact(ctx, st, store.CompactRequest{SessionID: "m1", Watermark: active[len(active)-1].ID, TailCount: 2,
		Messages: []store.Message{
			active[0],
			{Role: store.RoleUser, Content: "[summary] flamingo parser moved", Summary: true, Timestamp: at(7)},
			active[len(active)-2], active[len(active)-1],
		}})
	must(err)
	_, err = st.Append(ctx, "m1", store.Message{Role: store.RoleUser, Content: "after the compaction", Timestamp: at(8)})
	must(err)
	_, err = st.Branch(ctx, "m1", store.NewSession{ID: "m1-branch", StartedAt: at(9)})
	must(err)
	_, err = st.Append(ctx, "m1-branch", store.Message{Role: store.RoleUser, Content: "branch only: pelican", Timestamp: at(10)})
	must(err)
	cont, err := Rotate(ctx, st, store.RotateRequest{ParentID: "m1", Child: store.NewSession{ID: "m2", StartedAt: at(11)},
		Messages: []store.Message{{Role: store.RoleUser, Content: "[handoff] continue the plan", Summary: true, Timestamp: at(11)}}})
	must(err)
	_, err = st.Append(ctx, cont.ID, store.Message{Role: store.RoleAssistant, Content: "continuing in m2", Timestamp: at(12)})
	must(err)
	// A fork whose parent's id sorts after its own (a copy must not insert the child first).
	_, err = st.CreateSession(ctx, store.NewSession{ID: "z-parent", Source: "telegram", SessionKey: "telegram:dm:42", StartedAt: at(13)})
	must(err)
	_, err = st.Append(ctx, "z-parent", store.Message{Role: store.RoleUser, Content: "hello from telegram", Timestamp: at(14)})
	must(err)
	_, err = st.CreateSession(ctx, store.NewSession{ID: "a-child", ParentID: "z-parent", Relation: store.RelationBranch, StartedAt: at(15)})
	must(err)
	_, err = st.Append(ctx, "a-child", store.Message{Role: store.RoleUser, Content: "child of a later id", Timestamp: at(16)})
	must(err)
	_, err = Undo(ctx, st, "a-child")
	must(err)
	must(st.EndSession(ctx, "a-child", "user_exit"))
	must(st.PutRoute(ctx, store.Route{Key: "telegram:dm:42", SessionID: "z-parent", ResumePending: true,
		Origin: json.RawMessage(`{"platform":"telegram","chat_type":"dm"}`), UpdatedAt: at(17)}))
	_, _, err = st.ClaimIdempotencyKey(ctx, store.IdempotencyClaim{Entry: store.IdempotencyEntry{Scope: "key-1", Key: "idem-a", RequestHash: "h1", CreatedAt: at(18)}})
	must(err)
	must(st.CompleteIdempotencyKey(ctx, "key-1", "idem-a", 200, []byte{0, 1, 2, 0xff, '{'}))
	_, err = st.AcquireLease(ctx, "m2", "host-a/123/turn", time.Hour)
	must(err)
	return []string{"m1", "m1-branch", "m2", "z-parent", "a-child"}
}

// SameContents fails tb unless got holds what want holds for the sessions ids: each session's
// metadata, prompt, every row (ids, order, timestamps, flags), usage records, children and
// chain, the routes and idempotency keys Fill made, listing and statistics, and the same search
// hits (as a set) for a set of queries (the target's index was rebuilt, not copied).
func SameContents(tb testing.TB, want, got store.Backend, ids []string) {
	tb.Helper()
	ctx := context.Background()
	check := func(what string, w, g any, werr, gerr error) {
		tb.Helper()
		if werr != nil || gerr != nil {
			tb.Fatalf("%s: source error %v, target error %v", what, werr, gerr)
		}
		if !reflect.DeepEqual(w, g) {
			tb.Errorf("%s differs:\nsource %+v\ntarget %+v", what, w, g)
		}
	}
	for _, id := range ids {
		ws, werr := want.GetSession(ctx, id)
		gs, gerr := got.GetSession(ctx, id)
		check("session "+id, normSession(ws), normSession(gs), werr, gerr)
		wp, werr := want.SystemPrompt(ctx, id)
		gp, gerr := got.SystemPrompt(ctx, id)
		check("prompt of "+id, wp, gp, werr, gerr)
		for _, v := range []store.View{store.ViewActive, store.ViewDisplay, store.ViewAll} {
			wm, werr := want.Conversation(ctx, id, v)
			gm, gerr := got.Conversation(ctx, id, v)
			check(fmt.Sprintf("messages of %s (view %d)", id, v), normMessages(wm), normMessages(gm), werr, gerr)
		}
		wr, werr := want.Requests(ctx, id, 0)
		gr, gerr := got.Requests(ctx, id, 0)
		check("requests of "+id, normRequests(wr), normRequests(gr), werr, gerr)
		wc, werr := want.Children(ctx, id)
		gc, gerr := got.Children(ctx, id)
		check("children of "+id, sessionIDs(wc), sessionIDs(gc), werr, gerr)
		wch, werr := want.Chain(ctx, id)
		gch, gerr := got.Chain(ctx, id)
		check("chain of "+id, sessionIDs(wch), sessionIDs(gch), werr, gerr)
	}
	wl, werr := want.ListSessions(ctx, store.ListOptions{IncludeChildren: true})
	gl, gerr := got.ListSessions(ctx, store.ListOptions{IncludeChildren: true})
	check("listing", listingIDs(wl), listingIDs(gl), werr, gerr)
	wst, werr := want.Stats(ctx)
	gst, gerr := got.Stats(ctx)
	wst.Bytes, gst.Bytes = 0, 0
	check("stats", wst, gst, werr, gerr)
	wrt, werr := want.GetRoute(ctx, "telegram:dm:42")
	grt, gerr := got.GetRoute(ctx, "telegram:dm:42")
	check("route", normRoute(wrt), normRoute(grt), werr, gerr)
	for _, s := range []store.Backend{want, got} {
		e, claimed, err := s.ClaimIdempotencyKey(ctx, store.IdempotencyClaim{Entry: store.IdempotencyEntry{Scope: "key-1", Key: "idem-a", RequestHash: "h1", CreatedAt: time.Now()}})
		if err != nil || claimed || e.Status != 200 || string(e.Response) != "\x00\x01\x02\xff{" || e.RequestHash != "h1" {
			tb.Errorf("idempotency entry: %+v claimed=%v err=%v, want the recorded 200 response", e, claimed, err)
		}
	}
	for _, q := range []string{"flamingo", "needle-at-the-end", "会话", "桂林山水", "pelican", "zebra", "grep", "summary", "telegram"} {
		for _, roles := range [][]string{nil, {store.RoleTool}} {
			wh, werr := want.Search(ctx, store.SearchQuery{Text: q, Roles: roles, NoContext: true, Limit: 50})
			gh, gerr := got.Search(ctx, store.SearchQuery{Text: q, Roles: roles, NoContext: true, Limit: 50})
			check(fmt.Sprintf("search %q roles %v", q, roles), hitIDs(wh), hitIDs(gh), werr, gerr)
		}
	}
}

func normSession(s store.Session) store.Session {
	s.StartedAt, s.EndedAt = s.StartedAt.UTC(), s.EndedAt.UTC()
	return s
}

func normMessages(ms []store.Message) []store.Message {
	for i := range ms {
		ms[i].Timestamp = ms[i].Timestamp.UTC()
	}
	return ms
}

func normRequests(rs []store.RequestRecord) []store.RequestRecord {
	if len(rs) == 0 {
		return nil // one backend says [], the other nil
	}
	for i := range rs {
		rs[i].At = rs[i].At.UTC()
	}
	return rs
}

func normRoute(r store.Route) store.Route {
	r.UpdatedAt = r.UpdatedAt.UTC()
	return r
}

func sessionIDs(ss []store.Session) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.ID)
	}
	return out
}

func listingIDs(ls []store.SessionListing) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.ID+"|"+l.Preview)
	}
	return out
}

func hitIDs(hs []store.SearchHit) []string {
	var out []string
	for _, h := range hs {
		out = append(out, fmt.Sprintf("%s#%d", h.SessionID, h.MessageID))
	}
	slices.Sort(out) // the backends rank differently (bm25, ts_rank): the same hits, maybe not in one order
	return out
}
