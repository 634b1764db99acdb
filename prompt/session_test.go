package prompt_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spoolhq/spool/prompt"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/wire"
)

type prompts map[string]string

func (p prompts) SetSystemPrompt(_ context.Context, id, text string) (string, error) {
	p[id] = text
	return prompt.Hash(text), nil
}
func (p prompts) SystemPrompt(_ context.Context, id string) (string, error) { return p[id], nil }

// A whole session's requests, as the agent assembles them, keep their prefix while MEMORY.md
// and the rule file change underneath: the prompt is frozen and earlier messages replay their
// sidecars.
func TestMemoryEditsDoNotChangeTheNextRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home, proj := t.TempDir(), t.TempDir()
	memory := filepath.Join(home, "memories", "MEMORY.md")
	if err := os.MkdirAll(filepath.Dir(memory), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(memory, []byte("- first fact\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := prompt.Env{Home: home, WorkDir: proj, Model: "m", SessionID: "s1",
		StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Tools: []string{"memory", "session_search"}}
	st := prompts{}
	var history []store.Message
	var prevSystem string
	var prevBody []byte
	var prevFP wire.Fingerprint
	for turn := range 3 {
		p, err := prompt.Load(ctx, st, env)
		if err != nil {
			t.Fatal(err)
		}
		history = append(history, store.Message{Role: store.RoleUser, Content: "question"})
		res, err := wire.Build(history, wire.TurnContext{Recall: "recall for this turn"})
		if err != nil {
			t.Fatal(err)
		}
		history[res.Current].APIContent = res.APIContent
		req := provider.Request{Model: env.Model, System: p.Text(), Messages: res.Messages}
		body, _ := json.Marshal(req.Messages)
		fp := wire.FingerprintOf(req, p.Tiers())
		if turn > 0 {
			if req.System != prevSystem {
				t.Fatalf("turn %d: system prompt changed after a memory edit", turn)
			}
			if !bytes.HasPrefix(body, append(bytes.TrimSuffix(bytes.Clone(prevBody), []byte("]")), ',')) {
				t.Fatalf("turn %d: messages do not extend the previous request", turn)
			}
			if b := wire.Diff(prevFP, fp); b.Changed() {
				t.Fatalf("turn %d: cache break at %s", turn, b)
			}
		}
		prevSystem, prevBody, prevFP = req.System, body, fp
		history = append(history, store.Message{Role: store.RoleAssistant, Content: "answer"})
		// The memory tool (or the user) edits files mid-session.
		if err := os.WriteFile(memory, []byte("- fact written in turn "+string(rune('0'+turn))+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proj, "AGENTS.md"), []byte("new rules"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A compaction rebuild is the first point where the edits show.
	p, changed, err := prompt.Rebuild(prevSystem, env)
	if err != nil {
		t.Fatal(err)
	}
	if !changed || !bytes.Contains([]byte(p.Text()), []byte("fact written in turn 2")) {
		t.Fatal("rebuild after compaction does not pick up the edited memory")
	}
	b := wire.Explain(prevFP, wire.FingerprintOf(provider.Request{Model: env.Model, System: p.Text()}, p.Tiers()), wire.Hints{Compacted: true})
	if b.Layer != wire.LayerSystem || b.Reason != wire.ReasonCompaction {
		t.Errorf("rebuild break = %s", b)
	}
}
