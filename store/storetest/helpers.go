package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

var bg = context.Background()

func mustCreate(t *testing.T, st store.Sessions, ns store.NewSession) store.Session {
	t.Helper()
	s, err := st.CreateSession(bg, ns)
	if err != nil {
		t.Fatalf("create %+v: %v", ns, err)
	}
	return s
}

func mustAppend(t *testing.T, st store.Transcript, sid string, ms ...store.Message) []int64 {
	t.Helper()
	ids, err := st.AppendBatch(bg, sid, ms)
	if err != nil {
		t.Fatalf("append to %s: %v", sid, err)
	}
	return ids
}

func mustConversation(t *testing.T, st store.Transcript, sid string, v store.View) []store.Message {
	t.Helper()
	ms, err := st.Conversation(bg, sid, v)
	if err != nil {
		t.Fatalf("conversation %s: %v", sid, err)
	}
	return ms
}

func mustSession(t *testing.T, st store.Sessions, id string) store.Session {
	t.Helper()
	s, err := st.GetSession(bg, id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return s
}

func user(text string) store.Message { return store.Message{Role: store.RoleUser, Content: text} }

func assistant(text string) store.Message {
	return store.Message{Role: store.RoleAssistant, Content: text}
}

func toolCall(id, name, args string) store.ToolCall {
	return store.ToolCall{ID: id, Type: "function", Function: store.ToolFunction{Name: name, Arguments: args}}
}

func callingAssistant(text string, calls ...store.ToolCall) store.Message {
	return store.Message{Role: store.RoleAssistant, Content: text, ToolCalls: calls}
}

func toolResult(callID, name, text string) store.Message {
	return store.Message{Role: store.RoleTool, Content: text, ToolCallID: callID, ToolName: name}
}

// contents lists the content of each message.
func contents(ms []store.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Content
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func wantErr(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

func expectCounts(t *testing.T, st store.Sessions, sid string, msgs, calls int) {
	t.Helper()
	s := mustSession(t, st, sid)
	if s.MessageCount != msgs || s.ToolCallCount != calls {
		t.Fatalf("session %s counters = %d messages, %d tool calls; want %d, %d", sid, s.MessageCount, s.ToolCallCount, msgs, calls)
	}
}

// expectHealthy fails when the backend's own check (store.Admin) finds a problem; a backend
// without maintenance is not checked.
func expectHealthy(t *testing.T, st any) {
	t.Helper()
	admin, ok := also[store.Admin](st)
	if !ok {
		return
	}
	problems, err := admin.Check(bg)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	if len(problems) > 0 {
		t.Fatalf("check found problems: %v", problems)
	}
}

// also returns st as domain D when the backend provides it: a base-tier test checks how its
// domain meets an extended one (a fenced write, archived rows) only on a backend that has both.
func also[D any](st any) (D, bool) {
	d, ok := st.(D)
	return d, ok
}

// at returns a fixed base time plus n seconds, so ordering tests do not depend on the clock.
func at(n int) time.Time {
	return time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(n) * time.Second)
}

func sid(prefix string, n int) string { return fmt.Sprintf("%s-%03d", prefix, n) }

// sameSession fails unless sessions a and b, written two ways at step, are the same: their rows
// (but id and start), their listings and every stored message (but ids).
func sameSession(t *testing.T, st BaseBackend, step int, a, b string) {
	t.Helper()
	sa, sb := mustSession(t, st, a), mustSession(t, st, b)
	sa.ID, sa.StartedAt, sb.ID, sb.StartedAt = "", time.Time{}, "", time.Time{}
	if !reflect.DeepEqual(sa, sb) {
		t.Fatalf("step %d: session %s differs from %s:\n%s %+v\n%s %+v", step, a, b, a, sa, b, sb)
	}
	ls, err := st.ListSessions(bg, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]store.SessionListing{}
	for _, l := range ls {
		listed[l.ID] = l
	}
	if la, lb := listed[a], listed[b]; la.Preview != lb.Preview || !la.LastActive.Equal(lb.LastActive) || la.MessageCount != lb.MessageCount {
		t.Fatalf("step %d: listing %s %+v, %s %+v", step, a, la, b, lb)
	}
	ca, cb := mustConversation(t, st, a, store.ViewAll), mustConversation(t, st, b, store.ViewAll)
	if len(ca) != len(cb) {
		t.Fatalf("step %d: %d messages in %s, %d in %s", step, len(ca), a, len(cb), b)
	}
	for j := range ca {
		ca[j].ID, ca[j].SessionID, cb[j].ID, cb[j].SessionID = 0, "", 0, ""
		if !reflect.DeepEqual(ca[j], cb[j]) {
			t.Fatalf("step %d: message %d differs:\n%s %+v\n%s %+v", step, j, a, ca[j], b, cb[j])
		}
	}
}
