package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/prompt"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/tokens"
	"github.com/spoolhq/spool/turn"
	"github.com/spoolhq/spool/wire"
)

// Tools is what the agent needs from a tool registry (package tools provides one).
type Tools interface {
	// Definitions are the tools offered to the model, in a stable order: the same registry
	// gives byte-identical definitions in every process.
	Definitions() []provider.Tool
	// Call runs one tool call for a session and returns the text for the model. A failed call
	// returns the failure as text with isError set; a tool's failure is never a Go error.
	Call(ctx context.Context, sessionID string, call store.ToolCall) (text string, isError bool)
}

// Defaults.
const (
	DefaultMaxIterations = 32
	DefaultContextLength = 128_000
	// DefaultCacheTTL is the provider cache lifetime used to explain a break as "ttl".
	DefaultCacheTTL = 5 * time.Minute
	// DefaultFallbackCooldown is how long a failed model is passed over by new turns.
	DefaultFallbackCooldown = 5 * time.Minute
)

// Config is an agent's model and behaviour. Zero fields take defaults.
type Config struct {
	Model string
	// Provider names the endpoint for the prompt and the threshold rules ("openai", "fake").
	// Empty means Client.Name().
	Provider string
	// ContextLength is the model's window in tokens (DefaultContextLength when zero).
	ContextLength int
	// MaxTokens is the output reservation sent with every request (0: provider default).
	MaxTokens int
	// MaxIterations bounds the model calls of one turn (DefaultMaxIterations when zero).
	MaxIterations int
	// Compression configures the preflight gate and the default compressor. Its zero value
	// disables compaction; start from compress.DefaultConfig().
	Compression compress.Config
	// Prompt is the template of every session's prompt build; the agent fills SessionID,
	// StartedAt, Model, Provider, Tools and the compaction note.
	Prompt prompt.Env
	// Rotate compacts by rotation into a continuation session (compression.in_place=false)
	// instead of in place; the turn and its result continue in the new session.
	Rotate bool
	// Lease configures the turn lease; OnWait is set per run from RunOptions.
	Lease turn.Options
	// Source is the source of sessions the agent creates ("cli" when empty).
	Source string
	// CacheTTL is the provider's cache lifetime for break explanations (DefaultCacheTTL).
	CacheTTL time.Duration
	// Delegation configures the delegate tool (sub-agents in child sessions); its zero value
	// offers no such tool.
	Delegation Delegation
	// Hints name the user's remedies (compact by hand, start over) in the words of the entry
	// point, for the messages that end a turn or pause compaction.
	Hints compress.Hints
	// FallbackCooldown is how long turns start on a fallback after the model before it failed
	// (DefaultFallbackCooldown when zero); the first turn after it tries the main model again.
	FallbackCooldown time.Duration
}

// Store is what an agent uses of a backend: sessions, their transcripts, the turn lease and
// compaction (through package turn) and the accounting of model calls. It never searches
// (recall takes its own recall.Store), nor touches platform, API or maintenance state. Every
// store.Backend satisfies it.
type Store interface {
	store.Sessions
	store.Transcript
	store.Leaser
	store.Compactor
	store.Accounting
}

var _ Store = store.Backend(nil)

// Deps are an agent's collaborators.
type Deps struct {
	Store  Store
	Client provider.Client
	// Tools may be nil: the model is then offered no tools.
	Tools Tools
	// Compressor is the compaction engine; nil means the default compressor summarizing with
	// Client, when Config.Compression is enabled.
	Compressor compress.Engine
	// SummaryClient serves Config.Compression.SummaryModel when that model lives behind another
	// provider or endpoint; nil means Client. The default compressor falls back to the main model
	// on Client when it fails.
	SummaryClient provider.Client
	// Fallbacks are the models a turn moves to, in order, when the model it is on fails with a
	// class that will not clear by retrying (see fallback.go).
	Fallbacks []Fallback
	// Cooldowns, when set, are shared with other agents over the same models (nil: the
	// agent's own).
	Cooldowns *Cooldowns
	Config    Config
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Agent runs turns. It is safe for concurrent use; turns of one conversation take turns through
// the lease, also across processes.
type Agent struct {
	st    Store
	tools Tools
	cfg   Config
	now   func() time.Time

	// models are the main model (index 0) and the fallbacks, in order.
	models []*model

	mu    sync.Mutex
	memos map[string]*memo // per session: the last request's forensics
	cool  *Cooldowns       // per model: passed over by new turns until then

	// depth is how many delegations deep this agent runs (0: the caller's own agent);
	// allowDelegate is false for a sub-agent whose caller left delegate out of its tools.
	depth         int
	allowDelegate bool

	// titler names sessions with the auxiliary model titleModel when one is configured
	// (Compression.SummaryModel); nil: titles come from the first ask alone.
	titler     compress.Summarizer
	titleModel string

	deps Deps // as New got them, for WithModel
}

// New checks deps and returns an agent.
func New(d Deps) (*Agent, error) {
	if d.Store == nil {
		return nil, errors.New("agent: no store")
	}
	if d.Client == nil {
		return nil, errors.New("agent: no model client")
	}
	cfg := d.Config
	if cfg.Provider == "" {
		cfg.Provider = d.Client.Name()
	}
	if cfg.ContextLength <= 0 {
		cfg.ContextLength = DefaultContextLength
	}
	if cfg.MaxIterations <= 0 {
		cfg.MaxIterations = DefaultMaxIterations
	}
	if cfg.CacheTTL <= 0 {
		cfg.CacheTTL = DefaultCacheTTL
	}
	if cfg.Source == "" {
		cfg.Source = "cli"
	}
	if cfg.FallbackCooldown <= 0 {
		cfg.FallbackCooldown = DefaultFallbackCooldown
	}
	a := &Agent{st: d.Store, tools: d.Tools, cfg: cfg, now: d.Now, memos: map[string]*memo{}, allowDelegate: true, deps: d}
	if a.now == nil {
		a.now = time.Now
	}
	main := &model{client: d.Client, id: cfg.Model, provider: cfg.Provider, window: cfg.ContextLength, maxTokens: cfg.MaxTokens}
	mainSum := compress.ClientSummarizer{Client: d.Client, Aux: d.SummaryClient, AuxModel: cfg.Compression.SummaryModel}
	if err := a.addModel(main, d.Compressor, mainSum); err != nil {
		return nil, err
	}
	if sm := cfg.Compression.SummaryModel; sm != "" && sm != cfg.Model {
		a.titler, a.titleModel = mainSum, sm
	}
	for i, f := range d.Fallbacks {
		m, sum, err := fallbackModel(i, f, d, cfg)
		if err != nil {
			return nil, err
		}
		if err := a.addModel(m, d.Compressor, sum); err != nil {
			return nil, err
		}
	}
	a.cool = d.Cooldowns
	if a.cool == nil {
		a.cool = NewCooldowns()
	}
	a.cool.mu.Lock()
	switch n := len(a.cool.until); {
	case n == 0:
		a.cool.until = make([]time.Time, len(a.models))
		if ps, ok := d.Store.(store.Cooldowns); ok && len(a.models) > 1 {
			a.cool.persist = ps
			for _, m := range a.models {
				a.cool.keys = append(a.cool.keys, cooldownKey(m))
			}
		}
	case n != len(a.models):
		a.cool.mu.Unlock()
		return nil, fmt.Errorf("agent: shared cooldowns are for %d models, this agent has %d", n, len(a.models))
	}
	a.cool.mu.Unlock()
	return a, nil
}

// addModel resolves m's compaction trigger and engine (engine when given, else the default
// compressor summarizing through sum) and appends it to the agent's models.
func (a *Agent) addModel(m *model, engine compress.Engine, sum compress.Summarizer) error {
	thr, err := compress.Resolve(a.cfg.Compression, m.compressModel())
	if err != nil {
		if m.name != "" {
			return fmt.Errorf("agent: fallback %s: %w", m.name, err)
		}
		return fmt.Errorf("agent: %w", err)
	}
	m.threshold, m.engine = thr, engine
	if m.engine == nil && a.cfg.Compression.Enabled {
		local := NewCompressor(a.cfg.Compression, sum, a.now)
		m.engine = local
		if pe := providerEngineFor(a.cfg.Compression, m, local); pe != nil {
			m.engine = pe
		}
	}
	a.models = append(a.models, m)
	return nil
}

// NewCompressor is the compressor New builds when Deps.Compressor is nil: the default
// compressor on the agent's clock, counting tokens as the agent's preflight gate does (so "at or
// under the target" means the same to both). Callers that wrap or measure the compressor
// (benchmarks) build it here to run what users run.
func NewCompressor(cfg compress.Config, s compress.Summarizer, now func() time.Time) *compress.Compressor {
	c := compress.New(cfg, s)
	c.Now = now
	c.Estimator = wireEstimator{}
	return c
}

// wireEstimator is compress.Estimator counting like the agent's request estimate.
type wireEstimator struct{}

func (wireEstimator) Message(m store.Message) int { return tokens.EstimateMessage(m) }

// Engine names the compaction engine the main model's turns use: "default" (spool's own
// compressor), "provider" (compression.engine provider on a client that compacts), or a
// custom engine's name; "" when compaction is off.
func (a *Agent) Engine() string {
	if a.models[0].engine == nil {
		return ""
	}
	return a.models[0].engine.Name()
}

// Threshold is the resolved compaction trigger of the agent's main model.
func (a *Agent) Threshold() compress.Resolution { return a.models[0].threshold }

// ThresholdFor is the trigger of the fallback named fallback (Result.Fallback), the main
// model's for "" or a name the agent does not know.
func (a *Agent) ThresholdFor(fallback string) compress.Resolution {
	for _, m := range a.models[1:] {
		if fallback != "" && m.name == fallback {
			return m.threshold
		}
	}
	return a.models[0].threshold
}

// CreateSession creates a session for this agent's model, from the current directory; its
// model_config records the context window it runs with (SettingContextLength).
func (a *Agent) CreateSession(ctx context.Context, ns store.NewSession) (store.Session, error) {
	if ns.Model == "" {
		ns.Model = a.cfg.Model
	}
	if ns.ModelConfig == nil {
		cfg, err := WithSettings(nil, "", a.cfg.ContextLength)
		if err != nil {
			return store.Session{}, err
		}
		ns.ModelConfig = cfg
	}
	if ns.Source == "" {
		ns.Source = a.cfg.Source
	}
	if ns.Cwd == "" {
		ns.Cwd, _ = os.Getwd()
	}
	return a.st.CreateSession(ctx, ns) // its errors name the session already
}

// RunOptions are one turn's callbacks and extras. Callbacks run on the turn's goroutine.
type RunOptions struct {
	// OnDelta streams the model's text as it arrives; nil makes the calls non-streaming.
	OnDelta func(provider.Delta)
	// OnWait is called while another holder keeps the conversation busy.
	OnWait func(waited time.Duration, holder string)
	// OnToolCall is called before each tool runs, OnToolResult after.
	OnToolCall   func(call store.ToolCall)
	OnToolResult func(call store.ToolCall, result string, isError bool)
	// OnNotice hears one-line notices for the user (a compaction, a paused compactor).
	OnNotice func(string)
	// Context is per-turn text for this turn's user message only (recall, plugin context).
	Context wire.TurnContext
	// ForceCompact compacts before the first model call whatever the size (a manual /compress),
	// with Focus as its topic.
	ForceCompact bool
	Focus        string
	// RestrictTools limits the agent's own tools offered this turn to those named in
	// AllowTools (none when it is empty; an entry ending in "*" names every tool it is a prefix
	// of); without it every tool of Deps.Tools is offered.
	RestrictTools bool
	AllowTools    []string
	// ClientTools are tools the caller declared and runs itself (an API client's function
	// tools). They are offered after the agent's own tools, in the caller's order, so a caller
	// that sends the same tools gets the same request bytes. A response that calls one of them
	// ends the turn: the assistant message is stored, the agent's own calls of that response
	// are run, and Result.PendingCalls holds the caller's calls.
	ClientTools []provider.Tool
	// Prelude are messages stored before this turn's input, under the turn's lease (a client's
	// earlier messages that are new to the session).
	Prelude []store.Message
	// OnStart is called once the turn holds the conversation's lease, its session is loaded and
	// its input accepted, before anything is stored or the model is called (a stream's headers
	// go out then: a lease held elsewhere is known before).
	OnStart func(sessionID string)
	// MaxTokens, when positive, replaces the output limit of this turn's model calls (an API
	// client's max_output_tokens); it is not part of the cached prefix.
	MaxTokens int
	// PromptHome, when set, replaces Config.Prompt.Home for a prompt built in this turn: the
	// memories and SOUL.md of an API principal's own home.
	PromptHome string
	// ToolResults, instead of a user message, answer the caller's pending calls (every one of
	// them); the turn then goes on from there. The input must be empty.
	ToolResults []ToolResult
}

// Result is what one turn did.
type Result struct {
	SessionID string `json:"session_id"`
	// Reply is the final answer's text ("" when the turn ended without one).
	Reply        string `json:"reply"`
	FinishReason string `json:"finish_reason,omitempty"`
	// Usage sums the turn's model calls.
	Usage store.Usage `json:"usage"`
	// Calls is how many model calls the turn made and ToolCalls how many tools it ran.
	Calls     int `json:"model_calls"`
	ToolCalls int `json:"tool_calls"`
	// Compactions counts compactions committed during the turn; CompactionLog says what each did.
	Compactions   int          `json:"compactions,omitempty"`
	CompactionLog []Compaction `json:"compaction_log,omitempty"`
	// Breaks are the cache breaks recorded for the turn's calls.
	Breaks []store.CacheBreak `json:"cache_breaks,omitempty"`
	// Messages are the messages the turn appended, in order (ids are zero).
	Messages []store.Message `json:"-"`
	// Interrupted is set when the turn's context ended before a final answer.
	Interrupted bool `json:"interrupted,omitempty"`
	// PendingCalls are the caller's tool calls the turn ended at (FinishReason "tool_calls");
	// the next turn answers them with RunOptions.ToolResults.
	PendingCalls []store.ToolCall `json:"pending_calls,omitempty"`
	// Model is the model that answered the turn's last call; Fallback names it when it was a
	// fallback (the main model had failed, or is cooling down after a failure).
	Model    string `json:"model,omitempty"`
	Fallback string `json:"fallback,omitempty"`
}

// Compaction is one committed compaction, measured as whole requests (system prompt and tools
// included): TokensAfter is at or under Target unless even the last rung could not get there.
type Compaction struct {
	Messages     int    `json:"messages"`
	TokensBefore int    `json:"tokens_before"`
	TokensAfter  int    `json:"tokens_after"`
	Target       int    `json:"target"`
	Rung         string `json:"rung,omitempty"`
	Fallback     bool   `json:"fallback,omitempty"`
}

// Model is the model the agent calls.
func (a *Agent) Model() string { return a.cfg.Model }

// ToolNames are the names of the tools a turn offers the model when nothing restricts them, in
// the order offered.
func (a *Agent) ToolNames() []string {
	var defs []provider.Tool
	if a.tools != nil {
		defs = a.tools.Definitions()
	}
	var names []string
	for _, t := range a.withDelegate(defs) {
		names = append(names, t.Name)
	}
	return names
}
