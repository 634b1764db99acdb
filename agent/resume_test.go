package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/tools"
)

// wireBody is an OpenAI request body split into its layers, raw.
type wireBody struct {
	Model    json.RawMessage
	Tools    json.RawMessage
	Messages []json.RawMessage
}

func parseBody(t *testing.T, b []byte) wireBody {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("request body: %v", err)
	}
	w := wireBody{Model: m["model"], Tools: m["tools"]}
	if err := json.Unmarshal(m["messages"], &w.Messages); err != nil {
		t.Fatalf("request messages: %v", err)
	}
	return w
}

// extends reports where cur stops repeating prev byte for byte (-1: it extends prev).
func extends(prev, cur wireBody) string {
	if !bytes.Equal(prev.Model, cur.Model) || !bytes.Equal(prev.Tools, cur.Tools) {
		return "model or tools differ"
	}
	if len(cur.Messages) < len(prev.Messages) {
		return fmt.Sprintf("%d messages after %d", len(cur.Messages), len(prev.Messages))
	}
	for i := range prev.Messages {
		if !bytes.Equal(prev.Messages[i], cur.Messages[i]) {
			return fmt.Sprintf("message %d differs:\nprev %s\ncur  %s", i, prev.Messages[i], cur.Messages[i])
		}
	}
	return ""
}

func TestResumeSendsByteIdenticalPrefixes(t *testing.T) {
	t.Parallel()
	_, path := newStore(t)
	rec := newRecorder(t, fake.Config{})
	a := newAgent(t, openStore(t, path), openaiClient(t, rec.URL), stdTools())
	inputs := []string{
		"CALL read {\"path\":\"main.go\"}\nCALL echo {\"path\":\"x\"}",
		"thanks, and what next?",
		"CALL read {\"path\":\"go.mod\"}",
		"CALL fail {}",
		"CALL read {\"path\":\"README.md\"}\nCALL read {\"path\":\"LICENSE\"}",
	}
	sid := ""
	for i, in := range inputs {
		opts := agent.RunOptions{}
		if i == 1 {
			opts.Context.Recall = "the user prefers short answers" // a sidecar replayed ever after
		}
		res, err := a.Run(context.Background(), sid, in, opts)
		if err != nil {
			t.Fatal(err)
		}
		sid = res.SessionID
	}
	before := rec.bodies()
	// A new process: new store handle, new client, new agent; same session.
	b := newAgent(t, openStore(t, path), openaiClient(t, rec.URL), stdTools())
	res, err := b.Run(context.Background(), sid, "CALL echo {\"path\":\"resumed\"}", agent.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	all := rec.bodies()
	if len(all) != len(before)+2 {
		t.Fatalf("%d requests after the resume, want 2", len(all)-len(before))
	}
	for i := 1; i < len(all); i++ {
		if why := extends(parseBody(t, all[i-1]), parseBody(t, all[i])); why != "" {
			t.Fatalf("request %d does not extend request %d byte for byte (resume at %d): %s", i, i-1, len(before), why)
		}
	}
	// Every request carries the same system prompt bytes as its first message.
	first := parseBody(t, all[0]).Messages[0]
	if !bytes.Contains(first, []byte(`"role":"system"`)) {
		t.Fatalf("first message is not the system prompt: %s", first)
	}
	if len(res.Breaks) != 0 {
		t.Errorf("cache breaks after a resume with a warm cache: %+v", res.Breaks)
	}
	recs, err := openStore(t, path).Requests(context.Background(), sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(all) || recs[0].Usage.CacheReadTokens == 0 {
		t.Errorf("%d records for %d requests; last cached %d", len(recs), len(all), recs[0].Usage.CacheReadTokens)
	}
}

func TestCompactionKeepsThePromptStable(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	a := newAgent(t, st, fake.New(fake.Config{}), stdTools(), withCompression(20_000, 6_000))
	sid := ""
	var hashes []string
	var breaks []store.CacheBreak
	for i := 0; i < 80 && len(hashes) < 2; i++ {
		var notices []string
		res, err := a.Run(context.Background(), sid, fmt.Sprintf("CALL read {\"path\":\"file%d.go\"}", i), agent.RunOptions{OnNotice: func(s string) { notices = append(notices, s) }})
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		sid = res.SessionID
		breaks = append(breaks, res.Breaks...)
		if res.Compactions > 0 {
			s, _ := st.GetSession(context.Background(), sid)
			hashes = append(hashes, s.SystemPromptHash)
			if !strings.Contains(strings.Join(notices, "\n"), "Compacted") {
				t.Errorf("turn %d compacted without a notice: %q", i, notices)
			}
		}
	}
	if len(hashes) < 2 {
		t.Fatalf("only %d compactions in 80 turns", len(hashes))
	}
	if hashes[0] != hashes[1] {
		t.Error("the prompt changed at the second compaction although nothing it reads changed")
	}
	prompt, _ := st.SystemPrompt(context.Background(), sid)
	if strings.Count(prompt, compress.SystemNote) != 1 {
		t.Errorf("compaction note appears %d times in the prompt", strings.Count(prompt, compress.SystemNote))
	}
	if len(breaks) == 0 {
		t.Fatal("no cache break recorded across compactions")
	}
	for _, b := range breaks {
		if b.Reason != "compaction" {
			t.Errorf("break %+v, want reason compaction", b)
		}
	}
	summaries := 0
	for _, m := range history(t, st, sid) {
		if m.Summary {
			summaries++
		}
	}
	if summaries != 1 {
		t.Errorf("%d summary messages in the active history, want 1", summaries)
	}
}

func TestBuiltinToolsThroughTheRegistry(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("the answer is 42\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := agent.Registry(tools.Default(), tools.Env{WorkDir: dir, Store: st, Approver: tools.Deny("tests run no commands")})
	a := newAgent(t, st, fake.New(fake.Config{}), reg)
	res, err := a.Run(context.Background(), "", "CALL read_file {\"path\":\"notes.txt\"}\nCALL terminal {\"command\":\"rm -rf /\"}", agent.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := history(t, st, res.SessionID)
	if len(h) != 5 || !strings.Contains(h[2].Content, "the answer is 42") || !strings.Contains(h[3].Content, "not approved") {
		t.Fatalf("history %v\nresults %q / %q", roles(h), h[2].Content, h[3].Content)
	}
}

func TestManualCompact(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	a := newAgent(t, st, fake.New(fake.Config{}), stdTools(), withCompression(200_000, 0))
	sid := ""
	for i := range 12 {
		sid = run(t, a, sid, fmt.Sprintf("CALL read {\"path\":\"f%d\"}", i)).SessionID
	}
	before := len(history(t, st, sid))
	res, err := a.Compact(context.Background(), sid, "the files read", agent.RunOptions{})
	if err != nil || res.Compactions != 1 {
		t.Fatalf("compact: %v, %+v", err, res)
	}
	if after := len(history(t, st, sid)); after >= before {
		t.Errorf("history %d -> %d rows", before, after)
	}
	run(t, a, sid, "and now?")
	off := newAgent(t, st, fake.New(fake.Config{}), stdTools())
	if _, err := off.Compact(context.Background(), sid, "", agent.RunOptions{}); !errors.Is(err, agent.ErrCompressionDisabled) {
		t.Errorf("compact without an engine: %v", err)
	}
}

// TestCompactionByRotation: with rotation configured, a compaction ends the session with
// "compression" and the turn, and the next ones, continue in the continuation session.
func TestCompactionByRotation(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	rotate := func(d *agent.Deps) { d.Config.Rotate = true }
	a := newAgent(t, st, fake.New(fake.Config{}), stdTools(), withCompression(200_000, 0), rotate)
	root := ""
	for i := range 12 {
		res := run(t, a, root, fmt.Sprintf("CALL read {\"path\":\"f%d\"}", i))
		if root == "" {
			root = res.SessionID
		}
	}
	res, err := a.Compact(context.Background(), root, "", agent.RunOptions{})
	if err != nil || res.Compactions != 1 {
		t.Fatalf("compact: %v, %+v", err, res)
	}
	if res.SessionID == root {
		t.Fatalf("rotation kept the session %s", root)
	}
	parent, err := st.GetSession(context.Background(), root)
	if err != nil || parent.EndReason != store.EndCompression {
		t.Fatalf("parent after rotation: %+v, %v", parent, err)
	}
	child, err := st.GetSession(context.Background(), res.SessionID)
	if err != nil || child.ParentID != root || child.Relation != store.RelationCompression || child.MessageCount == 0 {
		t.Fatalf("continuation: %+v, %v", child, err)
	}
	// A turn addressed to the parent runs on the live tip.
	next := run(t, a, root, "and now?")
	if next.SessionID != child.ID {
		t.Fatalf("turn after rotation ran on %s, want the continuation %s", next.SessionID, child.ID)
	}
	if h := history(t, st, child.ID); h[len(h)-1].Role != store.RoleAssistant || len(h) <= child.MessageCount {
		t.Fatalf("continuation history after the next turn: %d rows", len(h))
	}
}
