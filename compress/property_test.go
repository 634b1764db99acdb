package compress

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
	"pgregory.net/rapid"
)

// genHistory draws an agent history: optional system prompt and earlier summary, then turns of
// a user ask, tool rounds and a reply, with occasional damage (missing, orphaned or repeated
// tool results, consecutive user turns) of the kind crashes leave behind.
func genHistory(t *rapid.T) []store.Message {
	var ms []store.Message
	add := func(m store.Message) {
		m.ID = int64(len(ms) + 1)
		m.SessionID, m.Active = "sess", true
		ms = append(ms, m)
	}
	words := []string{"fix", "the", "bug", "in", "src/app.go", "#42", "deadbee1", "let's", "never", "use", "sqlite", "error:", "https://x.dev/p", "now", "ok"}
	text := func(label string, maxLen int) string {
		n := rapid.IntRange(1, maxLen).Draw(t, label+"_len")
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(words[rapid.IntRange(0, len(words)-1).Draw(t, label+"_w")])
			b.WriteByte(' ')
		}
		return strings.TrimSpace(b.String())
	}
	if rapid.Bool().Draw(t, "system") {
		add(store.Message{Role: store.RoleSystem, Content: "You are spool."})
	}
	if rapid.IntRange(0, 3).Draw(t, "prior") == 0 {
		add(store.Message{Role: rapid.SampledFrom([]string{store.RoleUser, store.RoleAssistant}).Draw(t, "prior_role"),
			Content: summaryContent("## Goal\nearlier goal\n\n" + LedgerHeading + "\n\n### Identifiers\n- #7 (user) [m1]"), Summary: true})
	}
	call := 0
	turns := rapid.IntRange(1, 40).Draw(t, "turns")
	for range turns {
		add(store.Message{Role: store.RoleUser, Content: text("ask", 400)})
		for range rapid.IntRange(0, 3).Draw(t, "rounds") {
			a := store.Message{Role: store.RoleAssistant}
			if rapid.Bool().Draw(t, "preamble") {
				a.Content = text("pre", 100)
			}
			var ids []string
			for range rapid.IntRange(1, 3).Draw(t, "calls") {
				call++
				id := fmt.Sprintf("call_%d", call)
				ids = append(ids, id)
				args := fmt.Sprintf(`{"command":"step %d","path":"src/f%d.go","blob":%q}`, call, call, strings.Repeat("z", rapid.IntRange(0, 900).Draw(t, "argsz")))
				a.ToolCalls = append(a.ToolCalls, store.ToolCall{ID: id, Type: "function", Function: store.ToolFunction{Name: rapid.SampledFrom([]string{"terminal", "read_file", "write_file", "web"}).Draw(t, "tool"), Arguments: args}})
			}
			add(a)
			for _, id := range ids {
				switch rapid.IntRange(0, 19).Draw(t, "damage") {
				case 0: // result lost
					continue
				case 1: // orphan result
					add(store.Message{Role: store.RoleTool, ToolCallID: "ghost_" + id, Content: "orphan"})
				case 2: // repeated result
					add(store.Message{Role: store.RoleTool, ToolCallID: id, Content: "dup"})
				}
				size := rapid.IntRange(1, 12_000).Draw(t, "outsz")
				add(store.Message{Role: store.RoleTool, ToolCallID: id, Content: strings.Repeat("out\n", size/4) + "exit code: 0"})
			}
		}
		if rapid.IntRange(0, 9).Draw(t, "noreply") > 0 {
			add(store.Message{Role: store.RoleAssistant, Content: text("reply", 600)})
		}
	}
	return ms
}

var propNothing, propCompacted atomic.Int64

func TestPropertyAnyHistoryGivesValidHistory(t *testing.T) {
	t.Parallel()
	defer func() {
		t.Logf("compacted %d histories, %d had nothing to compress", propCompacted.Load(), propNothing.Load())
		if propCompacted.Load() == 0 {
			t.Error("no generated history was compacted: the generator is too timid")
		}
	}()
	rapid.Check(t, func(t *rapid.T) {
		in := genHistory(t)
		cfg := DefaultConfig()
		cfg.TailMode = rapid.SampledFrom([]string{TailLean, TailLegacy}).Draw(t, "mode")
		cfg.ProtectFirstN = rapid.IntRange(0, 4).Draw(t, "first")
		cfg.ProtectLastN = rapid.IntRange(1, 30).Draw(t, "last")
		cfg.MinTailUserMessages = rapid.IntRange(1, 3).Draw(t, "users")
		cfg.TailAssistantMaxChars = rapid.SampledFrom([]int{0, 300}).Draw(t, "asstmax")
		outcome := rapid.IntRange(0, 5).Draw(t, "outcome")
		sum := SummarizerFunc(func(ctx context.Context, model, prompt string) (string, error) {
			switch outcome {
			case 0:
				return "", &provider.Error{Class: provider.ClassTimeout}
			case 1:
				return "", &provider.Error{Class: provider.ClassAuth}
			case 2:
				return "  ", nil
			}
			return "## Goal\ngoal\n\n## Completed Actions\n1. did it", nil
		})
		c := New(cfg, sum)
		model := Model{Name: "m", ContextLength: rapid.IntRange(16_000, 400_000).Draw(t, "window")}
		st := &State{CompressionCount: rapid.IntRange(0, 2).Draw(t, "count")}
		plan, err := c.Compress(context.Background(), Request{SessionID: "sess", Messages: in, Model: model, State: st})
		var ae *AbortError
		switch {
		case errors.Is(err, ErrNothingToCompress):
			propNothing.Add(1)
			return
		case errors.As(err, &ae):
			if outcome != 1 {
				t.Fatalf("aborted on outcome %d: %v", outcome, err)
			}
			return
		case err != nil:
			t.Fatalf("unexpected error: %v", err)
		}
		propCompacted.Add(1)
		if why := Validate(plan.Messages); why != "" {
			t.Fatalf("invalid output (%s):\n in: %s\nout: %s", why, roles(in), roles(plan.Messages))
		}
		summaries := 0
		for i, m := range plan.Messages {
			if m.ID != 0 || !m.Active || m.SessionID != "sess" {
				t.Fatalf("message %d not a fresh active row: %+v", i, m)
			}
			if m.Summary {
				summaries++
			}
			if m.Role == store.RoleAssistant && len(m.ToolCalls) == 0 && strings.TrimSpace(m.Content) == "" {
				t.Fatalf("empty assistant message at %d", i)
			}
		}
		if summaries != 1 || len(plan.Origins) != len(plan.Messages) || plan.TailCount > len(plan.Messages) || plan.TailCount > len(in) {
			t.Fatalf("summaries %d origins %d tail %d of %d", summaries, len(plan.Origins), plan.TailCount, len(plan.Messages))
		}
		// The newest real user ask survives: verbatim in the tail, or quoted in the summary.
		for i := len(in) - 1; i >= 0; i-- {
			if isRealUser(in[i]) {
				ask := in[i].Content
				found := false
				for _, m := range plan.Messages {
					if strings.Contains(m.Content, ask) {
						found = true
					}
				}
				if !found {
					t.Fatalf("newest ask %q lost (rung %s)\nin %s\nout %s\n%+v", ask, plan.Rung, roles(in), roles(plan.Messages), plan.Messages)
				}
				break
			}
		}
		// The summary alternates with its neighbours unless it was merged into one.
		for i, m := range plan.Messages {
			if !m.Summary || plan.Origins[i] != 0 {
				continue
			}
			if i > 0 && plan.Messages[i-1].Role == m.Role && m.Role != store.RoleUser {
				t.Fatalf("summary role %s repeats its predecessor: %s", m.Role, roles(plan.Messages))
			}
		}
	})
}
