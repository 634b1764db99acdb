package compress

import "time"

// Tail modes.
const (
	TailLean   = "lean"
	TailLegacy = "legacy"
)

// Defaults, as Hermes Agent's.
const (
	DefaultThreshold       = 0.50
	DefaultThresholdTokens = 256_000
	DefaultTargetRatio     = 0.20
	DefaultProtectLastN    = 20
	DefaultProtectFirstN   = 3
	DefaultMaxAttempts     = 3
	// MinimumContextLength floors the percent-derived trigger: smaller triggers compact too often.
	MinimumContextLength = 64_000
	// SmallWindowFloor is the raise-only percent for windows under SmallWindowLimit tokens.
	SmallWindowFloor = 0.75
	SmallWindowLimit = 512_000
	// GatewayHygieneRatio is the gateway's pre-agent safety net: deliberately above the agent's
	// trigger, which at 50% would compress on every turn.
	GatewayHygieneRatio = 0.85
)

// Config is the `compression.*` configuration. Start from DefaultConfig: the zero value disables
// compaction.
type Config struct {
	Enabled bool `yaml:"enabled" json:"enabled"`
	// Threshold is the fraction of the main model's window that triggers compaction.
	Threshold float64 `yaml:"threshold" json:"threshold"`
	// ThresholdTokens caps the trigger in tokens; 0 means ratio only.
	ThresholdTokens int `yaml:"threshold_tokens" json:"threshold_tokens"`
	// ModelThresholds overrides Threshold: keys match as substrings of the model name,
	// "provider:substr" only on that provider, longest substring wins.
	ModelThresholds map[string]float64 `yaml:"model_thresholds" json:"model_thresholds,omitempty"`
	// TargetRatio sizes the legacy tail budget; clamped to [0.10, 0.80].
	TargetRatio float64 `yaml:"target_ratio" json:"target_ratio"`
	TailMode    string  `yaml:"tail_mode" json:"tail_mode"`
	// Engine is compression.engine: "" or "local" for spool's own compressor, "provider" for
	// the provider's compaction where the client offers one (agent falls back to local).
	Engine string `yaml:"engine" json:"engine,omitempty"`
	// ProtectLastN is the tail's message floor (capped at 8 by the tail cut).
	ProtectLastN int `yaml:"protect_last_n" json:"protect_last_n"`
	// ProtectFirstN keeps the first exchange on the first compaction only.
	ProtectFirstN int `yaml:"protect_first_n" json:"protect_first_n"`
	// MinTailUserMessages real user turns are guaranteed to stay verbatim in the tail.
	MinTailUserMessages int `yaml:"min_tail_user_messages" json:"min_tail_user_messages"`
	// TailAssistantMaxChars (lean only, 0 = off) cuts oversized assistant text in the tail and
	// leaves a session_search pointer to the original.
	TailAssistantMaxChars int  `yaml:"tail_assistant_max_chars" json:"tail_assistant_max_chars"`
	AbortOnSummaryFailure bool `yaml:"abort_on_summary_failure" json:"abort_on_summary_failure"`
	// MaxAttempts bounds compactions per turn (preflight plus overflow recovery).
	MaxAttempts int `yaml:"max_compression_attempts" json:"max_compression_attempts"`
	// ContextTimeout is the host's summary-call timeout; no cooldown is ever shorter.
	ContextTimeout time.Duration `yaml:"context_timeout" json:"context_timeout"`
	// CodexAutoraise raises gpt-5.4/5.5/5.6 on the openai-codex route to 0.85.
	CodexAutoraise bool `yaml:"codex_gpt55_autoraise" json:"codex_gpt55_autoraise"`
	// SummaryModel is auxiliary.compression.model; empty means the main model.
	SummaryModel string `yaml:"-" json:"summary_model,omitempty"`
	// SummaryContextLength is the summary model's window in tokens
	// (auxiliary.compression.context_length); 0 looks the model up in the known-model table.
	// The history sent to be summarized is cut to fit it.
	SummaryContextLength int `yaml:"-" json:"summary_context_length,omitempty"`
	// SummaryModelConfig identifies the summary model's configuration (provider, base URL, key
	// variable, model; FromConfig fills it in). A summary model that failed for good (a bad key,
	// a model the endpoint does not serve) is not asked again while it stays the same; empty
	// means SummaryModel alone.
	SummaryModelConfig string `yaml:"-" json:"-"`
	// TargetFill is the share of the room between the request's fixed part (system prompt,
	// tools) and the trigger that the conversation fills right after a compaction
	// (compression.target_fill, default DefaultTargetFill, clamped to [0.1, 0.9]). Every
	// compaction ends at or under it; summary, ledger, head and tail budgets follow from it.
	TargetFill float64 `yaml:"target_fill" json:"target_fill,omitempty"`
	// UserAsksBudget bounds, in characters, the verbatim user messages quoted in the ledger (lean).
	UserAsksBudget int `yaml:"-" json:"user_asks_budget"`
}

// DefaultConfig returns the reference defaults (lean tail).
func DefaultConfig() Config {
	return Config{
		Enabled:             true,
		Threshold:           DefaultThreshold,
		ThresholdTokens:     DefaultThresholdTokens,
		TargetRatio:         DefaultTargetRatio,
		TailMode:            TailLean,
		Engine:              "local",
		ProtectLastN:        DefaultProtectLastN,
		ProtectFirstN:       DefaultProtectFirstN,
		MinTailUserMessages: 1,
		MaxAttempts:         DefaultMaxAttempts,
		CodexAutoraise:      true,
		TargetFill:          DefaultTargetFill,
		UserAsksBudget:      6_000,
	}
}

// summaryModelConfig is SummaryModelConfig, else SummaryModel.
func (c Config) summaryModelConfig() string {
	if c.SummaryModelConfig != "" {
		return c.SummaryModelConfig
	}
	return c.SummaryModel
}

func (c Config) targetRatio() float64 {
	r := c.TargetRatio
	if r == 0 {
		r = DefaultTargetRatio
	}
	return min(max(r, 0.10), 0.80)
}

func (c Config) tailMode() string {
	if c.TailMode == TailLegacy {
		return TailLegacy
	}
	return TailLean
}

func (c Config) maxAttempts() int {
	if c.MaxAttempts <= 0 {
		return DefaultMaxAttempts
	}
	return c.MaxAttempts
}

func (c Config) minTailUsers() int {
	return max(c.MinTailUserMessages, 1)
}
