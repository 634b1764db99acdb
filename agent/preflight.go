package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/prompt"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/tokens"
)

func (a *Agent) gate() compress.Gate {
	return compress.Gate{Config: a.cfg.Compression, Now: a.now, Hints: a.cfg.Hints}
}

// preflight runs the compaction gate before a model call and reports whether to compact first.
// est is the rough size of the request about to be sent.
func (r *run) preflight(ctx context.Context, est, attempts int, overflow, force bool) (bool, error) {
	before := r.state
	d := r.a.gate().Preflight(&r.state, compress.PreflightInput{
		Threshold: r.m.threshold, Messages: len(r.history), Estimate: est,
		ProviderOverflow: overflow, Attempts: attempts, Force: force,
	})
	if !reflect.DeepEqual(before, r.state) {
		r.stateDirty = true
	}
	switch d.Action {
	case compress.Compact:
		r.notice(d.UserMessage)
		if r.m.engine == nil {
			break
		}
		return true, nil
	case compress.Deferred, compress.FailClosed, compress.BudgetExceeded:
		// The message ends the turn: it is said once, by the error.
		return false, fmt.Errorf("%w: %s", ErrContextFull, cmp.Or(d.UserMessage, d.Reason))
	default:
		r.notice(d.UserMessage)
	}
	if overflow {
		return false, fmt.Errorf("%w: the provider refused the prompt as too long and it cannot be compacted now (%s)", ErrContextFull, d.Reason)
	}
	return false, nil
}

// compact computes a compaction plan from the stored history and commits it in place under the
// turn's lease fence and the session's compression lock, then reloads the history and rebuilds
// the prompt (byte-identical when nothing it reads changed). A compaction that cannot run
// (nothing to compact, a failed summary that aborts, another compactor at work) leaves the
// history as it is and the turn goes on.
func (r *run) compact(ctx context.Context, force bool) error {
	st := r.state
	var plan compress.Plan
	makePlan := func(pctx context.Context) error {
		hist, err := r.a.st.Conversation(pctx, r.sess.ID, store.ViewActive)
		if err != nil {
			return err
		}
		plan, err = r.m.engine.Compress(pctx, compress.Request{
			SessionID: r.sess.ID, Messages: hist, Model: r.m.compressModel(), Threshold: &r.m.threshold,
			State: &st, Focus: r.opts.Focus, Force: force, FixedTokens: r.fixedTokens(), RefusedTokens: r.refused,
		})
		return err
	}
	var err error
	var child store.Session
	if r.a.cfg.Rotate {
		child, err = r.t.Rotate(ctx, func(pctx context.Context) (store.RotateRequest, error) {
			if err := makePlan(pctx); err != nil {
				return store.RotateRequest{}, err
			}
			return plan.RotateRequest(store.NewSession{}, ""), nil
		})
	} else {
		_, err = r.t.Compact(ctx, func(pctx context.Context) (store.CompactRequest, error) {
			if err := makePlan(pctx); err != nil {
				return store.CompactRequest{}, err
			}
			return plan.CompactRequest(""), nil
		})
	}
	if err != nil {
		r.state, r.stateDirty = st, true // cooldowns and anti-thrash counters survive a failure
		var abort *compress.AbortError
		switch {
		case ctx.Err() != nil:
			return err
		case errors.Is(err, store.ErrLeaseLost):
			return err
		case errors.Is(err, compress.ErrNothingToCompress):
			var why *compress.NothingError
			if errors.As(err, &why) {
				r.notice("Nothing to compact: " + why.Reason + ".")
			} else {
				r.notice("Nothing to compact: the conversation is all first exchange and protected tail.")
			}
			return nil
		case errors.As(err, &abort):
			r.notice(fmt.Sprintf("Compaction skipped: %v", abort))
			return nil
		case errors.Is(err, store.ErrCompressionBusy):
			r.notice("Another process is compacting this session; sending as is.")
			return nil
		}
		return fmt.Errorf("compact session %s: %w", r.sess.ID, err)
	}
	r.state, r.stateDirty = plan.State, false // committed with the compaction
	if r.a.cfg.Rotate {
		// The conversation goes on in the continuation; its model_config came from the parent,
		// so the new compaction state is saved there at the end of the turn.
		r.sess, r.res.SessionID, r.stateDirty = child, child.ID, true
		r.notice(fmt.Sprintf("Continuing in session %s (compaction by rotation).", child.ID))
	}
	r.res.Compactions++
	r.compacted = true
	for _, n := range plan.Notices {
		r.notice(n)
	}
	r.res.CompactionLog = append(r.res.CompactionLog, Compaction{
		Messages: plan.Compacted, TokensBefore: plan.FixedTokens + plan.TokensBefore, TokensAfter: plan.ActiveTokens(),
		Target: plan.TargetTokens, Rung: string(plan.Rung), Fallback: plan.Fallback,
	})
	r.notice(fmt.Sprintf("Compacted %d messages (~%d → ~%d tokens with the system prompt and tools; target %d).",
		plan.Compacted, plan.FixedTokens+plan.TokensBefore, plan.ActiveTokens(), plan.TargetTokens))
	if r.history, err = r.a.st.Conversation(ctx, r.sess.ID, store.ViewActive); err != nil {
		return fmt.Errorf("reload history of %s after compaction: %w", r.sess.ID, err)
	}
	r.base = 0 // every row is new to the provider's cache now
	return r.rebuildPrompt(ctx)
}

// fixedTokens estimates the part of the next request outside the messages: the system prompt
// (with the compaction note the first compaction adds to it) and the tool schemas.
func (r *run) fixedTokens() int {
	n := tokens.EstimateRequest(provider.Request{System: r.prompt.Text(), Tools: r.tools})
	if r.state.CompressionCount == 0 {
		n += tokens.EstimateText("\n\n" + compress.SystemNote)
	}
	return n
}

// rebuildPrompt builds the prompt again after a compaction and persists it only if its bytes
// changed (a memory file edited mid-session, or the first compaction's note).
func (r *run) rebuildPrompt(ctx context.Context) error {
	p, changed, err := prompt.Rebuild(r.prompt.Text(), r.promptEnv())
	if err != nil {
		return fmt.Errorf("rebuild prompt of %s: %w", r.sess.ID, err)
	}
	if !changed {
		return nil
	}
	if _, err := r.a.st.SetSystemPrompt(ctx, r.sess.ID, p.Text()); err != nil {
		return fmt.Errorf("persist prompt of %s: %w", r.sess.ID, err)
	}
	r.prompt = p
	return nil
}

// promptEnv is the agent's prompt template filled in for this session. The compaction note is
// an input like any other: present from the first compaction on, so later rebuilds agree.
func (r *run) promptEnv() prompt.Env {
	env := r.a.cfg.Prompt
	if r.opts.PromptHome != "" {
		env.Home = r.opts.PromptHome
	}
	env.SessionID = r.sess.ID
	env.StartedAt = r.sess.StartedAt
	env.Model = r.a.cfg.Model
	env.Provider = r.a.cfg.Provider
	if env.Platform == "" {
		env.Platform = r.sess.Source
	}
	env.Tools = make([]string, len(r.tools))
	for i, t := range r.tools {
		env.Tools[i] = t.Name
	}
	if r.state.CompressionCount > 0 {
		env.Notes = append(append([]string(nil), env.Notes...), compress.SystemNote)
	}
	return env
}

// saveState persists the compaction bookkeeping (usage anchors, cooldowns) in the session's
// model_config, merged with what else is stored there.
func (r *run) saveState(ctx context.Context) error {
	if !r.stateDirty || r.t.Lost() != nil {
		return nil
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeBudget)
	defer cancel()
	// The session row was read under the lease at the start of the turn; only a compaction
	// (which rewrites this very key) has touched model_config since.
	m := map[string]json.RawMessage{}
	if len(r.sess.ModelConfig) > 0 {
		if err := json.Unmarshal(r.sess.ModelConfig, &m); err != nil {
			m = map[string]json.RawMessage{}
		}
	}
	raw, err := json.Marshal(r.state)
	if err != nil {
		return fmt.Errorf("save compaction state of %s: %w", r.sess.ID, err)
	}
	m[compress.StateConfigKey] = raw
	cfg, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("save compaction state of %s: %w", r.sess.ID, err)
	}
	if r.t != nil && r.t.SessionID() == r.sess.ID {
		// Applied by the turn's last flush, in the transaction of its last messages.
		r.t.Patch(store.SessionPatch{ModelConfig: cfg})
	} else if err := r.a.st.UpdateSession(wctx, r.sess.ID, store.SessionPatch{ModelConfig: cfg}); err != nil {
		return fmt.Errorf("save compaction state of %s: %w", r.sess.ID, err)
	}
	r.sess.ModelConfig, r.stateDirty = cfg, false
	return nil
}
