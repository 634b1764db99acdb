package web

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
	"github.com/spoolhq/spool/store/storetest"
)

var bg = context.Background()

// openStore opens a fresh SQLite store in a temporary directory.
func openStore(t testing.TB) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(bg, filepath.Join(t.TempDir(), "spool.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// hostile is message text that would run script, break out of markup or drive a terminal if it
// reached a page unescaped.
const hostile = "<script>alert('pwned')</script> <img src=x onerror=alert(1)> [click me](javascript:alert(2)) " +
	"[ok](https://example.com/) \x1b[31mred\x1b[0m\x1b]0;title\x07 abc\u202edef </textarea></pre>\"'><svg onload=alert(3)>"

// fixture is the seeded store every handler test and the browser tests share.
type fixture struct {
	st       *sqlite.DB
	demo     string // compacted once, with tool calls, reasoning, requests and a cache break
	branch   string // a branch of demo
	evil     string // hostile content everywhere
	bobs     string // another user's session
	archived int64  // a message id archived by the compaction
	toolCall int64  // an active assistant message with a tool call
	summary  int64
}

func mustAppend(t testing.TB, st store.Backend, sid string, ms ...store.Message) []int64 {
	t.Helper()
	ids, err := st.AppendBatch(bg, sid, ms)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func turn(i int, ts time.Time) []store.Message {
	call := "call-" + string(rune('a'+i))
	return []store.Message{
		{Role: store.RoleUser, Content: "Please look at **file " + string(rune('A'+i)) + "** and `grep` for the zebra bug", Timestamp: ts},
		{Role: store.RoleAssistant, Content: "Reading it.", Reasoning: "The user wants the zebra bug; read first.",
			ToolCalls: []store.ToolCall{{ID: call, Type: "function", Function: store.ToolFunction{Name: "read_file", Arguments: `{"path":"src/file_` + string(rune('a'+i)) + `.go"}`}}},
			Timestamp: ts.Add(time.Second)},
		{Role: store.RoleTool, ToolCallID: call, ToolName: "read_file", Content: "package main\n\nfunc zebra() {} // line " + string(rune('0'+i)), Timestamp: ts.Add(2 * time.Second)},
		{Role: store.RoleAssistant, Content: "Found it:\n\n- the zebra case\n- a fix\n\n```go\nfunc zebra() { fix() }\n```", Timestamp: ts.Add(3 * time.Second)},
	}
}

const summaryText = "## Goal\nFix the zebra bug in the parser.\n\n## Progress\nRead files A to C.\n\n" +
	"## Working Set\nExtracted mechanically from the compacted turns (no model involved).\n### Files read\n- src/file_a.go (m1)\n- src/file_b.go\n### Commands run\n- `go test ./parser`\n"

func newFixture(t testing.TB) *fixture {
	t.Helper()
	st := openStore(t)
	f := &fixture{st: st}
	now := time.Now().Add(-2 * time.Hour)
	demo, err := st.CreateSession(bg, store.NewSession{Title: "Refactor the parser", Source: "cli", Model: "gpt-4o",
		Cwd: "/home/dev/parser", GitBranch: "main", StartedAt: now, UserID: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	f.demo = demo.ID
	if _, err := st.SetSystemPrompt(bg, demo.ID, "You are spool, a careful coding agent.\n\n## Rules\n- never guess"); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := 0; i < 3; i++ {
		ids = append(ids, mustAppend(t, st, demo.ID, turn(i, now.Add(time.Duration(i)*time.Minute))...)...)
	}
	f.archived = ids[1]
	// Compact in place: the first turn's user message is the head; the summary replaces the rest.
	head := store.Message{Role: store.RoleUser, Content: "Please look at **file A** and `grep` for the zebra bug", Timestamp: now}
	sum := store.Message{Role: store.RoleUser, Content: summaryText, Summary: true, Timestamp: now.Add(10 * time.Minute)}
	if _, err := storetest.Compact(bg, st, store.CompactRequest{SessionID: demo.ID, Messages: []store.Message{head, sum}, Watermark: ids[len(ids)-1]}); err != nil {
		t.Fatal(err)
	}
	after := mustAppend(t, st, demo.ID, turn(3, now.Add(20*time.Minute))...)
	f.toolCall = after[1]
	active, err := st.Conversation(bg, demo.ID, store.ViewActive)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range active {
		if m.Summary {
			f.summary = m.ID
		}
	}
	u := store.Usage{InputTokens: 12000, OutputTokens: 300, CacheReadTokens: 11000, CacheWriteTokens: 500, APICalls: 1, CostUSD: 0.021}
	for i := 0; i < 4; i++ {
		r := store.RequestRecord{At: now.Add(time.Duration(i) * time.Minute), Model: "gpt-4o", Usage: u,
			Latency: time.Duration(800+350*i) * time.Millisecond}
		if i == 3 {
			r.Usage.CacheReadTokens = 1000
			r.Break = &store.CacheBreak{Layer: "messages", Index: 1, Reason: "compaction", LostTokens: 10000}
		}
		if err := st.RecordRequest(bg, demo.ID, r); err != nil {
			t.Fatal(err)
		}
	}
	br, err := st.Branch(bg, demo.ID, store.NewSession{Title: "Try the other fix", StartedAt: now.Add(30 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	f.branch = br.ID
	mustAppend(t, st, br.ID, store.Message{Role: store.RoleUser, Content: "what if we rewrite it instead?", Timestamp: now.Add(31 * time.Minute)})

	evil, err := st.CreateSession(bg, store.NewSession{Title: "<b>bold title</b> \x1b[2J", Source: "api", Model: "<i>m</i>",
		Cwd: "/tmp/<script>", UserID: "alice", StartedAt: now.Add(40 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	f.evil = evil.ID
	mustAppend(t, st, evil.ID,
		store.Message{Role: store.RoleUser, Content: hostile, Timestamp: now.Add(41 * time.Minute)},
		store.Message{Role: store.RoleAssistant, Content: hostile, Reasoning: hostile, Timestamp: now.Add(42 * time.Minute),
			ToolCalls: []store.ToolCall{{ID: "c1", Type: "function", Function: store.ToolFunction{Name: "<script>x</script>", Arguments: `{"q":"` + "</script><script>alert(4)</script>" + `"}`}}}},
		store.Message{Role: store.RoleTool, ToolCallID: "c1", ToolName: "terminal", Content: hostile, Timestamp: now.Add(43 * time.Minute)},
	)
	bob, err := st.CreateSession(bg, store.NewSession{Title: "Bob's secret plans", Source: "api", UserID: "bob", StartedAt: now.Add(50 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	f.bobs = bob.ID
	mustAppend(t, st, bob.ID, store.Message{Role: store.RoleUser, Content: "the zebra launch codes are 1234", Timestamp: now.Add(51 * time.Minute)})
	return f
}
