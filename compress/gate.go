package compress

import (
	"fmt"
	"time"
)

// AntiThrashTrips is how many ineffective compactions, or consecutive fallback summaries, stop
// automatic compaction.
const AntiThrashTrips = 2

// State is one session's compaction bookkeeping. The caller owns it and persists it with the
// session (it marshals to JSON); Gate and Compressor update it in place.
type State struct {
	CompressionCount int `json:"compression_count"`
	// IneffectiveCount counts compactions that left the prompt at or over the trigger.
	IneffectiveCount int `json:"ineffective_count"`
	// FallbackStreak counts consecutive compactions that used the deterministic fallback.
	FallbackStreak int          `json:"fallback_streak"`
	CooldownUntil  time.Time    `json:"cooldown_until,omitzero"`
	CooldownClass  FailureClass `json:"cooldown_class,omitempty"`
	// TimeoutStrikes climbs the 60/300/900 s ladder; any successful summary resets it.
	TimeoutStrikes int `json:"timeout_strikes,omitempty"`
	// AnchorPrompt is the provider's real prompt tokens for the last request and AnchorEstimate
	// the rough estimate of that same request; zero means no usable anchor (none yet, or stale
	// after a compaction).
	AnchorPrompt   int `json:"anchor_prompt,omitempty"`
	AnchorEstimate int `json:"anchor_estimate,omitempty"`
	LastCompletion int `json:"last_completion,omitempty"`
	// AwaitingRealUsage and VerifyCompaction are armed by a compaction and consumed by the next
	// response.
	AwaitingRealUsage bool `json:"awaiting_real_usage,omitempty"`
	VerifyCompaction  bool `json:"verify_compaction,omitempty"`
	// OverflowBypassUsed records that a provider-proven overflow already ignored the cooldown once.
	OverflowBypassUsed bool `json:"overflow_bypass_used,omitempty"`
	WarnedOverWindow   bool `json:"warned_over_window,omitempty"`
	// WarnedBlocked: the user was told automatic compaction is blocked (once per blocked stretch).
	WarnedBlocked bool `json:"warned_blocked,omitempty"`
	// SummaryModelPausedUntil: the summary model failed and the main model wrote the summary;
	// until then compactions ask the main model directly (SummaryModelPause).
	SummaryModelPausedUntil time.Time `json:"summary_model_paused_until,omitzero"`
	// SummaryModelBroken is the Config.SummaryModelConfig of a summary model that failed for
	// good (a bad key, a model its endpoint does not serve): compactions ask the main model
	// directly while the configuration is the same.
	SummaryModelBroken string `json:"summary_model_broken,omitempty"`
	LastFailure        string `json:"last_failure,omitempty"`
}

// Action is what the agent does before a model call.
type Action int

// Preflight actions.
const (
	// Send the request as is.
	Send Action = iota
	// Compact first, then re-measure and run the gate again.
	Compact
	// Deferred ends the turn without a model call. The default gate no longer defers: an
	// overflow during a summary cooldown compacts mechanically instead.
	Deferred
	// FailClosed ends the turn: the context overflows and no compaction attempt is left.
	FailClosed
	// BudgetExceeded rejects a gateway-internal system event over the trigger (they never compress).
	BudgetExceeded
)

func (a Action) String() string {
	return [...]string{"send", "compact", "deferred", "fail_closed", "budget_exceeded"}[a]
}

// PreflightInput describes the request about to be sent.
type PreflightInput struct {
	Threshold Resolution
	// Messages is the history length.
	Messages int
	// Estimate is the rough token estimate of the whole request.
	Estimate int
	// ProviderOverflow is set when the provider rejected the previous attempt as too long.
	ProviderOverflow bool
	// SystemEvent marks gateway-internal events, which never compress.
	SystemEvent bool
	// Attempts is how many compactions this turn already made.
	Attempts int
	// Force is a manual /compress: it runs even when automatic compaction is blocked.
	Force bool
}

// Decision is the gate's answer with its evidence.
type Decision struct {
	Action Action
	// Tokens is the size the decision was based on and Source where it came from ("usage":
	// the provider's count plus the estimated growth since, or "estimate").
	Tokens int
	Source string
	Reason string
	// UserMessage, when set, should be shown to the user once.
	UserMessage string
}

// Gate decides, before every model call and after every response, whether to compact.
type Gate struct {
	Config Config
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Hints name the remedies in the user messages, in the words of the command showing them.
	Hints Hints
}

// Hints are what a user of one command types to compact by hand or to start over: spool chat
// says "/compress <topic>" and "/new"; a one-shot command says something else. Empty fields
// leave the remedy out of the message.
type Hints struct {
	Compact string
	Fresh   string
}

// remedy is the sentence naming h's remedies, with a leading space ("" when there are none).
func (h Hints) remedy() string {
	switch {
	case h.Compact != "" && h.Fresh != "":
		return fmt.Sprintf(" To go on: %s compacts by hand, %s starts a fresh session (this one stays searchable).", h.Compact, h.Fresh)
	case h.Compact != "":
		return fmt.Sprintf(" To go on: %s compacts by hand.", h.Compact)
	case h.Fresh != "":
		return fmt.Sprintf(" To go on: %s starts a fresh session (this one stays searchable).", h.Fresh)
	}
	return ""
}

func (g Gate) now() time.Time {
	if g.Now == nil {
		return time.Now()
	}
	return g.Now()
}

// measure prefers the provider's real count (anchor plus estimated growth) over the estimate.
func measure(st *State, estimate int) (int, string) {
	if st.AnchorPrompt > 0 && !st.AwaitingRealUsage {
		return st.AnchorPrompt + max(0, estimate-st.AnchorEstimate), "usage"
	}
	return estimate, "estimate"
}

// CooldownActive reports whether a summary-failure cooldown is running, and until when.
func (g Gate) CooldownActive(st *State) (bool, time.Time) {
	if st.CooldownUntil.IsZero() || !g.now().Before(st.CooldownUntil) {
		return false, time.Time{}
	}
	return true, st.CooldownUntil
}

// Blocked reports whether automatic compaction is blocked, and why. Callers that persist State
// elsewhere should re-read it before trusting a "blocked" answer.
func (g Gate) Blocked(st *State) (bool, string) {
	if on, until := g.CooldownActive(st); on {
		return true, fmt.Sprintf("summary failed (%s): automatic compaction paused until %s", st.CooldownClass, until.Format(time.TimeOnly))
	}
	if st.IneffectiveCount >= AntiThrashTrips || st.FallbackStreak >= AntiThrashTrips {
		return true, AntiThrashMessage(st, g.Hints)
	}
	return false, ""
}

// AntiThrashMessage tells the user why automatic compaction stopped and what to do.
func AntiThrashMessage(st *State, h Hints) string {
	why := fmt.Sprintf("the last %d compactions did not bring the conversation under its compaction threshold", st.IneffectiveCount)
	if st.FallbackStreak >= AntiThrashTrips {
		why = fmt.Sprintf("the summary model failed %d times in a row, so only a basic fallback summary was kept", st.FallbackStreak)
	}
	return "Automatic compaction is paused: " + why + "; it resumes when the conversation overflows the window." + h.remedy()
}

// ShouldDefer reports whether a rough estimate at or over the trigger should wait for the
// provider's real count: right after a compaction, or when the last real prompt fitted and the
// estimate has grown by at most max(4096, 5% of the trigger) since.
func (g Gate) ShouldDefer(st *State, threshold, estimate int) bool {
	if estimate >= threshold && st.AwaitingRealUsage {
		return true
	}
	if st.AnchorPrompt > 0 && !st.AwaitingRealUsage && st.AnchorPrompt < threshold {
		slack := max(4096, threshold/20)
		return estimate-st.AnchorEstimate <= slack
	}
	return false
}

// Preflight runs before every model call.
func (g Gate) Preflight(st *State, in PreflightInput) Decision {
	thr := in.Threshold.Tokens
	tokens, source := measure(st, in.Estimate)
	d := Decision{Action: Send, Tokens: tokens, Source: source}
	over := tokens >= thr

	if in.SystemEvent {
		if over {
			d.Action, d.Reason = BudgetExceeded, "context_budget_exceeded: system events never compress"
		}
		return d
	}
	if !g.Config.Enabled {
		if tokens > in.Threshold.Model.ContextLength && !st.WarnedOverWindow {
			st.WarnedOverWindow = true
			d.UserMessage = fmt.Sprintf("The conversation (~%d tokens) is larger than the model's %d-token window and compression is disabled (compression.enabled).", tokens, in.Threshold.Model.ContextLength)
		}
		d.Reason = "compression disabled"
		return d
	}
	if in.Messages <= 1 {
		d.Reason = "nothing to compact"
		return d
	}
	if in.Attempts >= g.Config.maxAttempts() {
		if in.ProviderOverflow {
			d.Action, d.Reason = FailClosed, "context_length_exceeded after every compaction attempt"
			d.UserMessage = fmt.Sprintf("The conversation still exceeds the model's window after %d compaction attempts.", in.Attempts) + g.Hints.remedy()
		} else {
			d.Reason = "compaction attempts exhausted for this turn"
		}
		return d
	}
	if in.Force {
		d.Action, d.Reason = Compact, "manual compaction"
		return d
	}
	if in.ProviderOverflow {
		// The turn cannot go on without a smaller context, cooldown or not: during a summary
		// cooldown the compressor summarises mechanically instead of asking the model again.
		d.Action, d.Reason = Compact, "provider-proven overflow"
		if on, _ := g.CooldownActive(st); on {
			st.OverflowBypassUsed = true
			d.Reason = "provider-proven overflow during a summary cooldown: mechanical summary"
		}
		return d
	}
	if blocked, why := g.Blocked(st); blocked {
		if w := in.Threshold.EffectiveWindow; w > 0 && tokens >= w {
			// Blocked or not, a request over the window would only be refused.
			d.Action, d.Reason = Compact, fmt.Sprintf("blocked (%s), but %d tokens (%s) ≥ the %d-token window", why, tokens, source, w)
			return d
		}
		d.Reason = "blocked: " + why
		if over && !st.WarnedBlocked {
			st.WarnedBlocked = true
			d.UserMessage = why
		}
		return d
	}
	st.WarnedBlocked = false
	if g.ShouldDefer(st, thr, in.Estimate) {
		d.Reason = "deferred to the provider's real usage"
		return d
	}
	if over {
		d.Action, d.Reason = Compact, fmt.Sprintf("%d tokens (%s) ≥ trigger %d", tokens, source, thr)
		return d
	}
	d.Reason = fmt.Sprintf("%d tokens (%s) < trigger %d", tokens, source, thr)
	return d
}

// AfterResponse records a response's real usage.
// requestEstimate is the rough estimate of the request that produced the usage.
func (g Gate) AfterResponse(st *State, threshold, promptTokens, completionTokens, requestEstimate int) {
	verify := st.VerifyCompaction
	st.VerifyCompaction, st.AwaitingRealUsage = false, false
	if promptTokens <= 0 {
		return
	}
	st.AnchorPrompt, st.AnchorEstimate, st.LastCompletion = promptTokens, requestEstimate, completionTokens
	if promptTokens < threshold {
		st.IneffectiveCount = 0
		return
	}
	if verify {
		st.IneffectiveCount++
	}
}

// HygieneDecision is the gateway safety net's answer.
type HygieneDecision struct {
	Due    bool
	Tokens int
	Source string // "usage" or "estimate"
	Limit  int
}

// GatewayHygiene is the gateway's pre-agent safety net: compact when the
// history has at least 4 messages and reaches ratio of the window (GatewayHygieneRatio when
// ratio is 0). Tokens come from the session's usage anchor (st, as the agent persisted it: the
// provider's prompt count for the last request plus the estimated growth since), else from
// estimate, which is what is left after a compaction, before the next response. Whether
// compression is enabled at all is the caller's to check.
func GatewayHygiene(ratio float64, contextLength, messages, estimate int, st State) HygieneDecision {
	if ratio <= 0 {
		ratio = GatewayHygieneRatio
	}
	h := HygieneDecision{Limit: int(float64(contextLength) * ratio)}
	h.Tokens, h.Source = measure(&st, estimate)
	h.Due = messages >= 4 && contextLength > 0 && h.Tokens >= h.Limit
	return h
}
