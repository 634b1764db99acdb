package spool

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/prompt"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/tools"
)

type (
	// Client is a model endpoint: spool's adapters (provider/openai, provider/anthropic), the
	// offline model (provider/fake), or a program's own. See provider.Client for the contract a
	// client of one's own keeps (above all: report the real prompt token count, or zero).
	Client = provider.Client
	// Tool is a function the model may call: its name, description, JSON schema and Run.
	Tool = tools.Tool
	// Result is what one turn did: the reply, usage, model and tool calls, compactions.
	Result = agent.Result
	// Compaction is one committed compaction, measured in tokens of the whole request.
	Compaction = agent.Compaction
)

// SessionSearchTool is spool's session_search: the model looks back into this session's
// archived messages and other sessions. Give it to AgentOptions.Tools.
func SessionSearchTool() Tool { return tools.SessionSearch() }

// AgentOptions configure an Agent. Client and Model are required.
type AgentOptions struct {
	Client Client
	// Model is the model name sent with every request.
	Model string
	// ContextLength is the model's window in tokens; 0 takes the known window of Model, else
	// spool's default. Compaction keeps every request under it.
	ContextLength int
	// MaxTokens is the output reservation of every request (0: the provider's default).
	MaxTokens int
	// Tools are offered to the model in this order (names must be unique).
	Tools []Tool
	// SystemPrompt is the agent's whole system prompt, sent byte for byte. spool adds nothing
	// to it unless Guidance or SpoolPrompt is set.
	SystemPrompt string
	// Guidance appends spool's guidance for agents with tools (finish the task, use the tools,
	// session_search after compaction) to SystemPrompt.
	Guidance bool
	// SpoolPrompt uses spool's own layered prompt (its identity, guidance and hints, as the
	// spool command line does), with SystemPrompt as the caller's system message inside it.
	SpoolPrompt bool
	// NoCompaction turns automatic compaction off (requests may then outgrow the window).
	NoCompaction bool
	// Logger receives a line per turn, compaction and failure (nil: slog.Default()).
	Logger *slog.Logger
	// Observer hears model calls, tool calls, compactions and lease waits (nil: nobody).
	Observer Observer
}

// Agent runs turns of spool's agent loop on a DB's sessions: it takes the session's turn
// lease, compacts when the next request would outgrow the trigger, calls the model, runs the
// tools, and stores every message. It is safe for concurrent use; turns of one session take
// turns, also across processes.
type Agent struct {
	db  *DB
	a   *agent.Agent
	obs Observer
	log *slog.Logger
}

// NewAgent makes an agent over db's sessions.
func (db *DB) NewAgent(o AgentOptions) (*Agent, error) {
	if o.Client == nil || o.Model == "" {
		return nil, newError("new agent", "", ClassInvalid, errors.New("AgentOptions needs a Client and a Model"))
	}
	if o.Logger == nil {
		o.Logger = db.log
	}
	obs := o.Observer
	if obs == nil {
		obs = NopObserver{}
	}
	reg, err := tools.New(o.Tools...)
	if err != nil {
		return nil, newError("new agent", "", ClassInvalid, err)
	}
	cfg := agent.Config{Model: o.Model, ContextLength: o.ContextLength, MaxTokens: o.MaxTokens, Source: Source,
		Prompt: promptEnv(o, reg)}
	if cfg.ContextLength == 0 {
		cfg.ContextLength, _ = provider.LookupContextWindow(o.Model)
	}
	if !o.NoCompaction {
		cfg.Compression = compress.DefaultConfig()
	}
	var t agent.Tools
	if len(o.Tools) > 0 {
		t = observedTools{agent.Registry(reg, tools.Env{Store: db.st}), obs}
	}
	a, err := agent.New(agent.Deps{Store: db.st, Client: observed(o.Client, obs), Tools: t, Config: cfg})
	if err != nil {
		return nil, wrap("new agent", "", err)
	}
	return &Agent{db: db, a: a, obs: obs, log: o.Logger}, nil
}

// promptEnv is the prompt build the options ask for.
func promptEnv(o AgentOptions, reg *tools.Registry) prompt.Env {
	if o.SpoolPrompt {
		return prompt.Env{SystemMessage: o.SystemPrompt}
	}
	text := o.SystemPrompt
	if o.Guidance {
		var names []string
		for _, t := range o.Tools {
			names = append(names, t.Name)
		}
		text = joinNonEmpty(text, prompt.Guidance(names))
	}
	return prompt.Env{Custom: true, SystemMessage: text}
}

func joinNonEmpty(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n\n" + b
}

// Run runs one turn of s with the user's input: it returns when the model answers without
// calling a tool (or the turn's model calls run out). Everything said is stored as it
// happens, also when Run fails; the Result then still says what was done. When the turn
// continues the conversation in a new session (a rotating compaction), s moves to it, so one
// *Session must not be shared by goroutines running turns at once: give each its own handle.
func (a *Agent) Run(ctx context.Context, s *Session, input string) (res Result, err error) {
	ctx = withSession(ctx, s.id)
	if t, ok := a.obs.(TurnObserver); ok {
		var end func(Result, error)
		ctx, end = t.StartTurn(ctx, s.id)
		defer func() { end(res, err) }()
	}
	start := time.Now()
	res, err = a.a.Run(ctx, s.id, input, a.runOptions(ctx, s.id))
	if res.SessionID != "" && res.SessionID != s.id {
		s.id = res.SessionID // rotated into a continuation
	}
	a.compacted(ctx, s.id, res.CompactionLog)
	if err != nil {
		a.log.Warn("spool: turn failed", "session", s.id, "err", err)
		return res, wrap("run", s.id, err)
	}
	a.log.Debug("spool: turn", "session", s.id, "model_calls", res.Calls, "tool_calls", res.ToolCalls,
		"input_tokens", res.Usage.InputTokens, "output_tokens", res.Usage.OutputTokens, "duration", time.Since(start))
	return res, nil
}

// Compact plans and commits a compaction of s now, whatever its size, with focus as the topic
// the summary keeps (may be empty): the replaced messages are archived (still found by Search
// and Recall) and the model then sees the head, the summary with its working set, and the
// recent messages. A history too short to compact is an error of ClassNoCompact.
func (a *Agent) Compact(ctx context.Context, s *Session, focus string) (Compaction, error) {
	ctx = withSession(ctx, s.id)
	res, err := a.a.Compact(ctx, s.id, focus, a.runOptions(ctx, s.id))
	if res.SessionID != "" {
		s.id = res.SessionID
	}
	a.compacted(ctx, s.id, res.CompactionLog)
	if err != nil {
		return Compaction{}, wrap("compact", s.id, err)
	}
	if len(res.CompactionLog) == 0 {
		return Compaction{}, newError("compact", s.id, ClassNoCompact, compress.ErrNothingToCompress)
	}
	return res.CompactionLog[len(res.CompactionLog)-1], nil
}

// Compact plans and commits a compaction of the session now, as Agent.Compact does, for a
// program that keeps its own model loop. The summary is written by the offline model's
// deterministic summarizer; for a model-written one, compact with an Agent on your client.
// model and contextLength describe the model the history is sent to (they size the kept
// tail); contextLength 0 takes model's known window.
func (s *Session) Compact(ctx context.Context, model string, contextLength int, focus string) (Compaction, error) {
	a, err := s.db.NewAgent(AgentOptions{Client: fake.New(fake.Config{}), Model: model, ContextLength: contextLength})
	if err != nil {
		return Compaction{}, err
	}
	return a.Compact(ctx, s, focus)
}

func (a *Agent) runOptions(ctx context.Context, id string) agent.RunOptions {
	return agent.RunOptions{
		OnWait: func(waited time.Duration, holder string) {
			a.obs.LeaseWait(ctx, LeaseWait{SessionID: id, Waited: waited, Holder: holder})
		},
		OnNotice: func(n string) { a.log.Info("spool: "+n, "session", id) },
	}
}

func (a *Agent) compacted(ctx context.Context, id string, log []Compaction) {
	for _, c := range log {
		a.log.Debug("spool: compacted", "session", id, "messages", c.Messages, "tokens_before", c.TokensBefore, "tokens_after", c.TokensAfter)
		a.obs.Compaction(ctx, CompactionEvent{SessionID: id, Compaction: c})
	}
}
