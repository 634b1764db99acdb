package cli_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/storetest"
)

// seedCompacted stores an 80-message session (40 asks, 40 answers, 10 of them with a tool call)
// and compacts it in place to a summary and the last answer, as a long chat's compaction
// leaves it. It returns the session's id.
func seedCompacted(t *testing.T, home string) string {
	t.Helper()
	ctx := context.Background()
	var sid string
	withStore(t, home, func(st store.Backend) {
		s := check(st.CreateSession(ctx, store.NewSession{Source: "cli", Model: "fake-model", Title: "long one"}))(t)
		sid = s.ID
		at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
		var ms []store.Message
		for i := range 40 {
			ms = append(ms, store.Message{Role: store.RoleUser, Content: fmt.Sprintf("ask %d", i), Timestamp: at})
			a := store.Message{Role: store.RoleAssistant, Content: fmt.Sprintf("answer %d", i), Timestamp: at}
			if i%4 == 0 {
				a.ToolCalls = []store.ToolCall{{ID: fmt.Sprintf("c%d", i), Type: "function",
					Function: store.ToolFunction{Name: "terminal", Arguments: `{"command":"ls"}`}}}
			}
			ms = append(ms, a)
			at = at.Add(time.Minute)
		}
		ids := check(st.AppendBatch(ctx, sid, ms))(t)
		summary := store.Message{Role: store.RoleUser, Summary: true, Timestamp: at,
			Content: compress.SummaryPrefix + "\n## Goal\nanswer forty asks\n\n" + compress.SummaryEndMarker}
		if _, err := storetest.Compact(ctx, st, store.CompactRequest{SessionID: sid, Watermark: ids[len(ids)-1], TailCount: 1,
			Messages: []store.Message{summary, ms[79]}}); err != nil {
			t.Fatal(err)
		}
	})
	return sid
}

// After a compaction every surface counts the conversation the user had (80 messages, 10 tool
// calls), not the two rows the model sees, and the resume banner's last ask is the user's.
func TestCountsAfterCompaction(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t)
	home := t.TempDir()
	sid := seedCompacted(t, home)

	row := regexp.MustCompile(`(?m)^` + sid + `\s+long one\s+cli\s+(\d+)\s`)
	list := spool(t, home, "sessions", "list").ok(t, "list")
	if m := row.FindStringSubmatch(list.stdout); m == nil || m[1] != "80" {
		t.Errorf("sessions list MSGS %v:\n%s", m, list.stdout)
	}
	show := spool(t, home, "sessions", "show", sid).ok(t, "show")
	if !strings.Contains(show.stdout, "80 messages, 10 tool calls (2 in the model's view since compaction)") {
		t.Errorf("sessions show:\n%s", show.stdout)
	}
	js := decode[struct {
		Shown     int `json:"shown_messages"`
		ShownTool int `json:"shown_tool_calls"`
		Active    int `json:"message_count"`
	}](t, spool(t, home, "sessions", "show", sid, "--json").ok(t, "show json"))
	if js.Shown != 80 || js.ShownTool != 10 || js.Active != 2 {
		t.Errorf("sessions show --json: %+v", js)
	}

	chat := spoolIn(t, home, "/sessions\n/resume "+sid+"\n", "chat", "--provider", "openai", "--base-url", url+"/v1", "--model", "fake-model").ok(t, "chat")
	if !strings.Contains(chat.stdout, sid+"  long one               80 msgs") {
		t.Errorf("/sessions:\n%s", chat.stdout)
	}
	if !strings.Contains(chat.stdout, `Resumed `+sid+` "long one": 80 messages, 10 tool calls.`) ||
		!strings.Contains(chat.stdout, "last ask:    ask 39") || strings.Contains(chat.stdout, "CONTEXT COMPACTION") {
		t.Errorf("resume banner:\n%s", chat.stdout)
	}
}
