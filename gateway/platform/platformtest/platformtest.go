// Package platformtest runs a real platform.Router for adapter tests: a SQLite store in a
// temporary directory, the offline model (provider/fake) behind a real agent and gateway, and
// Outbound fakes. Adapter packages drive their real client against a local fake of their
// platform's API with it; it holds no fake of any platform.
package platformtest

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/gateway"
	"github.com/spoolhq/spool/gateway/platform"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
	"github.com/spoolhq/spool/turn"
)

// Options shape an Env. Zero fields take defaults.
type Options struct {
	// DB is the SQLite file (default: a new one in t.TempDir()); two Envs on one file are two
	// gateway processes on one database.
	DB string
	// Window is the model's context length (default 128000).
	Window int
	// Rotate compacts by rotation into a continuation session instead of in place.
	Rotate bool
	// Router is the router's config (Window, Holder and Sleep are filled when zero).
	Router platform.Config
	// Model is the offline model (default: a new one).
	Model *fake.Model
}

// Env is a running router and what it runs on.
type Env struct {
	Store   store.Backend
	Model   *fake.Model
	Gateway *gateway.Gateway
	Router  *platform.Router
	DB      string
}

// New builds an Env; it is closed (store, gateway drained) when the test ends.
func New(t testing.TB, o Options) *Env {
	t.Helper()
	if o.DB == "" {
		o.DB = filepath.Join(t.TempDir(), "spool.db")
	}
	if o.Window == 0 {
		o.Window = agent.DefaultContextLength
	}
	if o.Model == nil {
		o.Model = fake.New(fake.Config{})
	}
	st, err := sqlite.Open(context.Background(), o.DB, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	newAgent := func(wait time.Duration) *agent.Agent {
		a, err := agent.New(agent.Deps{Store: st, Client: o.Model, Config: agent.Config{Model: "fake", ContextLength: o.Window,
			Compression: compress.DefaultConfig(), Rotate: o.Rotate, Lease: turn.Options{TTL: 30 * time.Second, Wait: wait}}})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	g, err := gateway.New(gateway.Deps{Store: st, Runner: newAgent(time.Millisecond), Queue: newAgent(time.Minute),
		Config: gateway.Config{Model: "fake"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = g.Drain(ctx)
	})
	rc := o.Router
	if rc.Window == 0 {
		rc.Window = o.Window
	}
	if rc.Sleep == nil {
		rc.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() } // no cadence waits in tests
	}
	r, err := platform.NewRouter(platform.RouterDeps{Store: st, Turns: g, Config: rc})
	if err != nil {
		t.Fatal(err)
	}
	return &Env{Store: st, Model: o.Model, Gateway: g, Router: r, DB: o.DB}
}

// Idle waits (bounded by a minute of wall time, a hang guard, not a verdict) until the
// router has no work.
func (e *Env) Idle(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.Router.Idle(ctx); err != nil {
		t.Fatalf("router never went idle: %v", err)
	}
}

// Sessions lists the sessions whose session key is key, oldest first.
func (e *Env) Sessions(t testing.TB, key string) []store.Session {
	t.Helper()
	ls, err := e.Store.ListSessions(context.Background(), store.ListOptions{SessionKey: key, IncludeChildren: true})
	if err != nil {
		t.Fatal(err)
	}
	var out []store.Session
	for _, l := range ls {
		s, err := e.Store.GetSession(context.Background(), l.ID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartedAt.Before(out[j].StartedAt) })
	return out
}

// Transcript is a session's active user and final assistant texts, "u: ..." / "a: ...".
func (e *Env) Transcript(t testing.TB, sessionID string) []string {
	t.Helper()
	ms, err := e.Store.Conversation(context.Background(), sessionID, store.ViewActive)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		switch {
		case m.Summary:
			out = append(out, "summary")
		case m.Role == store.RoleUser:
			out = append(out, "u: "+m.Content)
		case m.Role == store.RoleAssistant && len(m.ToolCalls) == 0:
			out = append(out, "a: "+m.Content)
		}
	}
	return out
}

// Message is one message an Outbound holds.
type Message struct {
	ID    string
	To    platform.Address
	Text  string
	Edits int
	Key   platform.SendKey // the send key its Send carried (the zero key: none)
}

// Outbound is an in-memory platform.Outbound: it keeps every message sent, edited in place.
// Fail, when set, is asked before each call and may fail it.
type Outbound struct {
	Name  string
	Limit platform.Limits

	mu   sync.Mutex
	msgs []*Message
	Fail func(op string, to platform.Address, text string) error
}

// NewOutbound returns an Outbound for platform name with limits l.
func NewOutbound(name string, l platform.Limits) *Outbound { return &Outbound{Name: name, Limit: l} }

// Platform implements platform.Adapter.
func (o *Outbound) Platform() string { return o.Name }

// Run implements platform.Adapter: it takes no events of its own (tests call Handle).
func (o *Outbound) Run(ctx context.Context, _ platform.Handler) error {
	<-ctx.Done()
	return nil
}

// Limits implements platform.Outbound.
func (o *Outbound) Limits() platform.Limits { return o.Limit }

// Send implements platform.Outbound.
func (o *Outbound) Send(ctx context.Context, to platform.Address, text string) (string, error) {
	k, _ := platform.SendKeyFrom(ctx)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.Fail != nil {
		if err := o.Fail("send", to, text); err != nil {
			return "", err
		}
	}
	m := &Message{ID: fmt.Sprint(len(o.msgs) + 1), To: to, Text: text, Key: k}
	o.msgs = append(o.msgs, m)
	return m.ID, nil
}

// Edit implements platform.Outbound.
func (o *Outbound) Edit(_ context.Context, to platform.Address, id, text string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.Fail != nil {
		if err := o.Fail("edit", to, text); err != nil {
			return err
		}
	}
	for _, m := range o.msgs {
		if m.ID == id {
			m.Text = text
			m.Edits++
			return nil
		}
	}
	return fmt.Errorf("message %s not found", id)
}

// Messages lists the messages sent to a chat (and thread), oldest first.
func (o *Outbound) Messages(chatID, threadID string) []Message {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []Message
	for _, m := range o.msgs {
		if m.To.ChatID == chatID && m.To.ThreadID == threadID {
			out = append(out, *m)
		}
	}
	return out
}

// Texts lists the texts of Messages.
func (o *Outbound) Texts(chatID, threadID string) []string {
	var out []string
	for _, m := range o.Messages(chatID, threadID) {
		out = append(out, m.Text)
	}
	return out
}

// All is every message, oldest first.
func (o *Outbound) All() []Message {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]Message, len(o.msgs))
	for i, m := range o.msgs {
		out[i] = *m
	}
	return out
}

// Contains reports whether some message to the chat contains s.
func (o *Outbound) Contains(chatID, threadID, s string) bool {
	for _, t := range o.Texts(chatID, threadID) {
		if strings.Contains(t, s) {
			return true
		}
	}
	return false
}

// Start attaches the adapters, re-drives unfinished inbox events at once, and serves the
// router until the test ends (then waits for Serve to return).
func (e *Env) Start(t testing.TB, adapters ...platform.Adapter) {
	t.Helper()
	for _, a := range adapters {
		e.Router.Attach(a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.Router.Recover(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Router.Serve(ctx, adapters...) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("router: %v", err)
		}
	})
}

// Event is a DM-or-group event helper: platform p, chat type ct, chat, thread, user, id, text.
func Event(p string, ct platform.ChatType, chat, thread, user, id, text string) platform.Event {
	return platform.Event{Address: platform.Address{Platform: p, ChatType: ct, ChatID: chat, ThreadID: thread, UserID: user},
		EventID: id, MessageID: id, Text: text}
}

// Marking is an Outbound that is also a platform.Marker (as Discord's adapter is): it keeps
// the marks put on and taken off people's messages, in order. FailMark, when set, is asked
// before each MarkQueued and may fail it.
type Marking struct {
	*Outbound

	mmu      sync.Mutex
	marks    []string
	FailMark func(messageID string) error
}

// NewMarking returns a Marking for platform name with limits l.
func NewMarking(name string, l platform.Limits) *Marking {
	return &Marking{Outbound: NewOutbound(name, l)}
}

// MarkQueued implements platform.Marker.
func (m *Marking) MarkQueued(_ context.Context, to platform.Address, messageID string) error {
	m.mmu.Lock()
	defer m.mmu.Unlock()
	if m.FailMark != nil {
		if err := m.FailMark(messageID); err != nil {
			return err
		}
	}
	m.marks = append(m.marks, "mark "+to.ChatID+"/"+messageID)
	return nil
}

// UnmarkQueued implements platform.Marker.
func (m *Marking) UnmarkQueued(_ context.Context, to platform.Address, messageID string) error {
	m.mmu.Lock()
	defer m.mmu.Unlock()
	m.marks = append(m.marks, "unmark "+to.ChatID+"/"+messageID)
	return nil
}

// Marks lists the marks put on ("mark CHAT/ID") and taken off ("unmark CHAT/ID"), in order.
func (m *Marking) Marks() []string {
	m.mmu.Lock()
	defer m.mmu.Unlock()
	return append([]string(nil), m.marks...)
}
