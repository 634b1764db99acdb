// Command otherframework puts spool's session store, compaction and session_search behind an
// agent built on another framework. The framework here is a stand-in written in plain Go (its
// own message list, its own tool loop, a hook before each model call and one after each
// message), as most agent frameworks have; spool plugs into the hooks:
//
//   - after each message: Session.Append stores it;
//
//   - before each model call: when Session.ShouldCompact says the history reached the trigger,
//     Session.Compact plans and commits a compaction and the framework's context is replaced
//     by Session.Load. Committing matters: session_search leaves out what the model still sees,
//     so a framework that only trimmed its own list would hide the trimmed messages from it;
//
//   - a session_search tool answers from Session.Recall.
//
//     go run ./examples/otherframework
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spoolhq/spool"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/fake"
)

const (
	model  = "my-model"
	window = 4000
)

func main() {
	if err := run(context.Background(), os.Stdout, fake.New(fake.Config{})); err != nil {
		fmt.Fprintln(os.Stderr, "otherframework:", err)
		os.Exit(1)
	}
}

// --- the other framework (a stand-in) ---

// fwTool is the framework's tool type.
type fwTool struct {
	def  provider.Tool
	call func(ctx context.Context, args string) (string, error)
}

// framework runs a tool loop over its own message list, with hooks.
type framework struct {
	client       provider.Client
	tools        map[string]fwTool
	beforeModel  func(ctx context.Context, msgs []provider.Message) ([]provider.Message, error)
	afterMessage func(ctx context.Context, m provider.Message) error
	messages     []provider.Message
}

func (f *framework) add(ctx context.Context, m provider.Message) error {
	f.messages = append(f.messages, m)
	return f.afterMessage(ctx, m)
}

// turn sends input and loops until the model answers without a tool call.
func (f *framework) turn(ctx context.Context, input string) (string, error) {
	if err := f.add(ctx, provider.Message{Role: "user", Content: input}); err != nil {
		return "", err
	}
	var defs []provider.Tool
	for _, t := range f.tools {
		defs = append(defs, t.def)
	}
	for range 8 {
		msgs, err := f.beforeModel(ctx, f.messages)
		if err != nil {
			return "", err
		}
		f.messages = msgs
		resp, err := f.client.Chat(ctx, provider.Request{Model: model, Messages: f.messages, Tools: defs}, nil)
		if err != nil {
			return "", err
		}
		if err := f.add(ctx, provider.Message{Role: "assistant", Content: resp.Content, ToolCalls: resp.ToolCalls}); err != nil {
			return "", err
		}
		if len(resp.ToolCalls) == 0 {
			return resp.Content, nil
		}
		for _, c := range resp.ToolCalls {
			out, err := f.tools[c.Function.Name].call(ctx, c.Function.Arguments)
			if err != nil {
				out = "error: " + err.Error()
			}
			if err := f.add(ctx, provider.Message{Role: "tool", Content: out, ToolCallID: c.ID, ToolName: c.Function.Name}); err != nil {
				return "", err
			}
		}
	}
	return "", fmt.Errorf("too many tool rounds")
}

// --- spool behind it ---

func toSpool(m provider.Message) spool.Message {
	return spool.Message{Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, ToolName: m.ToolName}
}

func fromSpool(ms []spool.Message) []provider.Message {
	out := make([]provider.Message, 0, len(ms))
	for _, m := range ms {
		out = append(out, provider.Message{Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, ToolName: m.ToolName})
	}
	return out
}

// withSpool wires a spool session into the framework's hooks and tools.
func withSpool(f *framework, s *spool.Session, w io.Writer) {
	f.afterMessage = func(ctx context.Context, m provider.Message) error { return s.Append(ctx, toSpool(m)) }
	f.beforeModel = func(ctx context.Context, msgs []provider.Message) ([]provider.Message, error) {
		due, err := s.ShouldCompact(ctx, model, window)
		if err != nil || !due {
			return msgs, err
		}
		c, err := s.Compact(ctx, model, window, "")
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "compacted %d messages (~%d → ~%d tokens)\n", c.Messages, c.TokensBefore, c.TokensAfter)
		active, err := s.Load(ctx) // the committed history is the framework's context from now on
		if err != nil {
			return nil, err
		}
		return fromSpool(active), nil
	}
	f.tools["session_search"] = fwTool{
		def: provider.Tool{Name: "session_search", Description: "Search earlier, compacted parts of this session and past sessions.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)},
		call: func(ctx context.Context, args string) (string, error) {
			var a struct{ Query string }
			if err := json.Unmarshal([]byte(args), &a); err != nil {
				return "", err
			}
			found, err := s.Recall(ctx, a.Query)
			if err != nil {
				return "", err
			}
			b, err := json.Marshal(found)
			return string(b), err
		},
	}
}

func run(ctx context.Context, w io.Writer, client provider.Client) error {
	db, err := spool.Open(ctx, spool.Memory)
	if err != nil {
		return err
	}
	defer db.Close()
	s, err := db.NewSession(ctx, "framework")
	if err != nil {
		return err
	}
	f := &framework{client: client, tools: map[string]fwTool{}}
	withSpool(f, s, w)

	// The offline model follows scripts: SAY answers, CALL calls a tool.
	for i := range 12 {
		input := fmt.Sprintf("SAY step %d done: %s", i, strings.Repeat("refactored the handler; ", 40))
		if i == 3 {
			input = "SAY noted: the staging database password rotates every Tuesday"
		}
		if _, err := f.turn(ctx, input); err != nil {
			return err
		}
	}
	if _, err := f.turn(ctx, `CALL session_search {"query":"staging database password"}`); err != nil {
		return err
	}
	result := f.messages[len(f.messages)-2] // the tool's answer, before the model's last reply
	fmt.Fprintf(w, "session_search found the compacted fact: %v\n", strings.Contains(result.Content, "rotates every Tuesday"))
	fmt.Fprintf(w, "the framework's context holds it: %v\n", contextHolds(f.messages[:len(f.messages)-3], "rotates every Tuesday"))
	return nil
}

// contextHolds reports whether any message in msgs contains text verbatim.
func contextHolds(msgs []provider.Message, text string) bool {
	for _, m := range msgs {
		if strings.Contains(m.Content, text) {
			return true
		}
	}
	return false
}
