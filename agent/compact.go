package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/spoolhq/spool/turn"
)

// ErrCompressionDisabled: a manual compaction was asked of an agent without a compaction engine.
var ErrCompressionDisabled = errors.New("compaction is disabled (compression.enabled)")

// Compact compacts a session now, whatever its size (a manual /compress, optionally focused on a
// topic), under the conversation's lease like a turn, without calling the main model. Result
// counts the compaction; a history too short to compact is reported through OnNotice.
func (a *Agent) Compact(ctx context.Context, sessionID, focus string, opts RunOptions) (Result, error) {
	if a.models[0].engine == nil {
		return Result{SessionID: sessionID}, ErrCompressionDisabled
	}
	tip, err := a.st.ResumeTarget(ctx, sessionID)
	if err != nil {
		return Result{SessionID: sessionID}, fmt.Errorf("find session %s: %w", sessionID, err)
	}
	res := Result{SessionID: tip}
	lo := a.cfg.Lease
	lo.OnWait = opts.OnWait
	opts.Focus = focus
	err = turn.Run(ctx, a.st, tip, lo, func(tctx context.Context, t *turn.Turn) error {
		r := &run{a: a, t: t, opts: opts, res: &res, m: a.models[0]}
		return r.loaded(tctx, func() error { return r.compact(tctx, true) })
	})
	return res, err
}
