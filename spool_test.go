package spool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoolhq/spool"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/tools"
)

func open(t *testing.T) *spool.DB {
	t.Helper()
	db, err := spool.Open(context.Background(), spool.Memory)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// recorder is a client of one's own: it keeps the requests and answers with the offline model.
type recorder struct {
	mu   sync.Mutex
	reqs []provider.Request
	c    provider.Client
}

func (r *recorder) Name() string { return "mine" }

func (r *recorder) Chat(ctx context.Context, req provider.Request, d func(provider.Delta)) (provider.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.c.Chat(ctx, req, d)
}

// The caller's system prompt is the whole prompt unless it opts in to spool's guidance or
// prompt.
func TestSystemPromptIsTheCallers(t *testing.T) {
	t.Parallel()
	const mine = "You are the billing bot of Example Ltd."
	for _, tc := range []struct {
		name           string
		opts           spool.AgentOptions
		exact          bool
		wantGuidance   bool
		wantSpoolVoice bool
	}{
		{"override", spool.AgentOptions{SystemPrompt: mine}, true, false, false},
		{"guidance opt-in", spool.AgentOptions{SystemPrompt: mine, Guidance: true}, false, true, false},
		{"spool prompt", spool.AgentOptions{SystemPrompt: mine, SpoolPrompt: true}, false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := open(t)
			rec := &recorder{c: fake.New(fake.Config{})}
			tc.opts.Client, tc.opts.Model = rec, "fake"
			ag, err := db.NewAgent(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			s, _ := db.NewSession(context.Background(), "")
			if _, err := ag.Run(context.Background(), s, "SAY ok"); err != nil {
				t.Fatal(err)
			}
			sys := rec.reqs[0].System
			if tc.exact && sys != mine {
				t.Fatalf("system prompt %q, want exactly the caller's", sys)
			}
			if !strings.Contains(sys, mine) {
				t.Fatalf("system prompt %q lacks the caller's", sys)
			}
			if got := strings.Contains(sys, "Finish the task"); got != tc.wantGuidance {
				t.Fatalf("guidance in the prompt: %v, want %v:\n%s", got, tc.wantGuidance, sys)
			}
			if got := strings.Contains(sys, "Session: "+s.ID()) || strings.Contains(sys, s.ID()); got != tc.wantSpoolVoice {
				t.Fatalf("spool's own prompt (session line): %v, want %v:\n%s", got, tc.wantSpoolVoice, sys)
			}
		})
	}
}

// Errors are *spool.Error values with their class and session.
func TestErrorsCarryClassAndSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := open(t)
	ag, err := db.NewAgent(spool.AgentOptions{Client: fake.New(fake.Config{}), Model: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := db.NewSession(ctx, "")
	_, errMissing := db.Session(ctx, "no-such-session")
	_, errEmpty := ag.Run(ctx, s, "")
	_, errPop := s.Pop(ctx)
	_, errOpen := spool.Open(ctx, "")
	for _, tc := range []struct {
		name    string
		err     error
		class   spool.Class
		session string
	}{
		{"unknown session", errMissing, spool.ClassNotFound, "no-such-session"},
		{"empty input", errEmpty, spool.ClassInvalid, s.ID()},
		{"nothing to pop", errPop, spool.ClassNotFound, s.ID()},
		{"empty dsn", errOpen, spool.ClassInvalid, ""},
	} {
		var e *spool.Error
		if !errors.As(tc.err, &e) {
			t.Errorf("%s: %T %v is not a *spool.Error", tc.name, tc.err, tc.err)
			continue
		}
		if e.Class != tc.class || e.SessionID != tc.session {
			t.Errorf("%s: class %q session %q, want %q %q (%v)", tc.name, e.Class, e.SessionID, tc.class, tc.session, e)
		}
	}
}

// Pop and Clear hold the session's turn lease for their edit: while another holder has it (a
// turn running elsewhere) they are ClassBusy and the history stays; once it is free they edit.
func TestPopAndClearWaitForNoTurn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(s *spool.Session, ctx context.Context) (int, error)
		want int // messages left once the lease is free
	}{
		{"pop", (*spool.Session).Pop, 2},
		{"clear", (*spool.Session).Clear, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := open(t)
			s, _ := db.NewSession(ctx, "")
			if err := s.Append(ctx, spool.UserMessage("one"), spool.AssistantMessage("two"),
				spool.UserMessage("three"), spool.AssistantMessage("four")); err != nil {
				t.Fatal(err)
			}
			l, err := db.Store().AcquireLease(ctx, s.ID(), "another-process", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tc.edit(s, ctx)
			var e *spool.Error
			if !errors.As(err, &e) || e.Class != spool.ClassBusy {
				t.Fatalf("%s under another holder's lease: %v, want ClassBusy", tc.name, err)
			}
			if ms, _ := s.Load(ctx); len(ms) != 4 {
				t.Fatalf("%s under another holder's lease left %d of 4 messages", tc.name, len(ms))
			}
			if err := db.Store().ReleaseLease(ctx, l); err != nil {
				t.Fatal(err)
			}
			if _, err := tc.edit(s, ctx); err != nil {
				t.Fatalf("%s with the lease free: %v", tc.name, err)
			}
			if ms, _ := s.Load(ctx); len(ms) != tc.want {
				t.Fatalf("%s left %d messages, want %d", tc.name, len(ms), tc.want)
			}
		})
	}
}

type counting struct {
	spool.NopObserver
	mu    sync.Mutex
	calls []spool.ModelCall
	tools []spool.ToolCallEvent
}

func (c *counting) ModelCall(_ context.Context, e spool.ModelCall) {
	c.mu.Lock()
	c.calls = append(c.calls, e)
	c.mu.Unlock()
}

func (c *counting) ToolCall(_ context.Context, e spool.ToolCallEvent) {
	c.mu.Lock()
	c.tools = append(c.tools, e)
	c.mu.Unlock()
}

// The observer hears each model call (with the session and the provider's usage) and each
// tool call.
func TestObserverHearsModelAndToolCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := open(t)
	obs := &counting{}
	echo := spool.Tool{Name: "echo", Description: "Echo the text.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Run:        func(_ context.Context, _ tools.Env, args json.RawMessage) (string, error) { return string(args), nil }}
	ag, err := db.NewAgent(spool.AgentOptions{Client: fake.New(fake.Config{}), Model: "fake", Tools: []spool.Tool{echo}, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := db.NewSession(ctx, "")
	res, err := ag.Run(ctx, s, `CALL echo {"text":"hi"}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.calls) != res.Calls || res.Calls != 2 {
		t.Fatalf("observed %d model calls, the turn made %d (want 2)", len(obs.calls), res.Calls)
	}
	for _, c := range obs.calls {
		if c.SessionID != s.ID() || c.Provider != "fake" || c.Usage.InputTokens == 0 || c.Err != nil {
			t.Fatalf("model call %+v", c)
		}
	}
	if len(obs.tools) != 1 || obs.tools[0].Call.Function.Name != "echo" || obs.tools[0].IsError || obs.tools[0].SessionID != s.ID() {
		t.Fatalf("tool calls %+v", obs.tools)
	}
}
