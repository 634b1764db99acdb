package compress

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spoolhq/spool/store"
)

// Engine separates the per-request view of a history from the compaction that replaces it.
type Engine interface {
	// Name identifies the engine in configuration and logs.
	Name() string
	// Select returns the messages to send for this request. It changes nothing: not the
	// history, not req.State. The same input gives byte-identical output.
	Select(ctx context.Context, req Request) ([]store.Message, error)
	// Compress computes a new active history for the agent to commit. It may update req.State
	// (counters, cooldowns) and never writes to a store. Failures that must leave the history
	// untouched return *AbortError; a history without a middle returns ErrNothingToCompress.
	Compress(ctx context.Context, req Request) (Plan, error)
}

// Request is one history to view or compact.
type Request struct {
	SessionID string
	// Messages is the session's active history in id order. It is never modified.
	Messages []store.Message
	// Model is the main model; its name is the summary fallback and its window sizes the tail.
	Model Model
	// Threshold, when set, is the already resolved trigger for Model.
	Threshold *Resolution
	// State is the session's bookkeeping, updated in place by Compress (nil: a throwaway one).
	State *State
	// Focus is the topic of a manual /compress.
	Focus string
	// Force marks a manual compaction: it clears the summary cooldown and runs even when
	// automatic compaction is blocked.
	Force bool
	// MemoryContext is optional reference text from a memory provider, shown to the summariser.
	MemoryContext string
	// FixedTokens is the estimate of the request outside Messages (system prompt, tool
	// schemas): the compaction's target counts it (see Budgets). 0 when unknown.
	FixedTokens int
	// RefusedTokens is the estimate of a request the provider just refused as too long (0:
	// none). The window is then taken to be at most that big, whatever the configuration says.
	RefusedTokens int
}

// StateConfigKey is the model_config key under which Plan.CompactRequest persists State.
const StateConfigKey = "compression_state"

// Plan is a computed compaction, ready to commit.
type Plan struct {
	SessionID string
	// Messages is the new active set: head, summary (standalone or merged into the first tail
	// message), tail. IDs are zero: they are inserted as fresh rows.
	Messages []store.Message
	// Origins[i] is the id of the input message Messages[i] was copied from (0 when synthesised).
	Origins []int64
	// Watermark is the highest id of the input; rows appended after it are carried over by the store.
	Watermark int64
	// TailCount is how many trailing Messages are byte-identical copies of the input's last rows.
	TailCount int
	// Summary is the summary body (template sections and working set), without prefix and marker.
	Summary string
	Ledger  Ledger
	// SummaryModel wrote the summary; empty when the deterministic fallback was used.
	SummaryModel string
	Fallback     bool
	// SummaryItemsTrimmed counts the items cut from a summary that came back far over its
	// budget (oldest first, each section keeping its newest; see boundSummary).
	SummaryItemsTrimmed int
	// FailureClass is why the summary model failed, when it did.
	FailureClass FailureClass
	// Compacted is how many input messages the summary replaces.
	Compacted int
	// TokensBefore and TokensAfter are the estimates of the messages before and after.
	TokensBefore int
	TokensAfter  int
	// TargetTokens is the whole-request size this compaction had to reach and FixedTokens the
	// part of it outside the messages (Request.FixedTokens): ActiveTokens() ≤ TargetTokens
	// unless even the last rung could not get there (Rung says which rung was taken).
	TargetTokens int
	FixedTokens  int
	Rung         Rung
	// NeedsSystemNote is true when the history carries no system message: the prompt layer
	// appends SystemNote to the system prompt once.
	NeedsSystemNote bool
	// Notices are messages for the user (a summary-model fallback, a fallback summary).
	Notices []string
	// State is the session state after this compaction, persisted with the commit.
	State State
}

// ActiveTokens is the estimated size of the next request after this compaction: the fixed part
// plus the new messages.
func (p Plan) ActiveTokens() int { return p.FixedTokens + p.TokensAfter }

// CompactRequest is the in-place commit of p; the session state rides along in model_config so
// it lands in the same transaction.
func (p Plan) CompactRequest(lockHolder string) store.CompactRequest {
	return store.CompactRequest{
		SessionID:        p.SessionID,
		Messages:         p.Messages,
		Watermark:        p.Watermark,
		TailCount:        p.TailCount,
		ModelConfigPatch: p.statePatch(),
		LockHolder:       lockHolder,
	}
}

// RotateRequest is the rotation commit of p into child.
func (p Plan) RotateRequest(child store.NewSession, lockHolder string) store.RotateRequest {
	return store.RotateRequest{
		ParentID:   p.SessionID,
		Child:      child,
		Messages:   p.Messages,
		Watermark:  p.Watermark,
		LockHolder: lockHolder,
	}
}

func (p Plan) statePatch() map[string]json.RawMessage {
	raw, err := json.Marshal(p.State)
	if err != nil {
		return nil
	}
	return map[string]json.RawMessage{StateConfigKey: raw}
}

// StateFromModelConfig reads State back from a session's model_config (zero State when absent).
func StateFromModelConfig(cfg json.RawMessage) (State, error) {
	var st State
	if len(cfg) == 0 {
		return st, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(cfg, &m); err != nil {
		return st, fmt.Errorf("read %s from model_config: %w", StateConfigKey, err)
	}
	raw, ok := m[StateConfigKey]
	if !ok || string(raw) == "null" {
		return st, nil
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, fmt.Errorf("read %s from model_config: %w", StateConfigKey, err)
	}
	return st, nil
}
