package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/tokens"
	"github.com/spoolhq/spool/wire"
)

// ProviderEngineName is compression.engine "provider".
const ProviderEngineName = "provider"

// providerSummaryBody is the summary text of a provider compaction: the compacted window itself
// is opaque (encrypted), so the row's text says where the context went; the compressor adds
// the session's original request and the working-set ledger to it as to any summary.
const providerSummaryBody = "## Provider Compaction\n" +
	"The earlier turns were compacted by the model provider: its compaction item, sent just before " +
	"this message, carries them. What follows is spool's own record of the work."

// providerEngine is compression.engine "provider": the compaction is the provider's own (the
// Responses API's POST /responses/compact), fitted into spool's compaction. spool's compressor
// still decides when and what: the same split (protected head, middle, verbatim tail), the
// same ledger and original request in the summary row; the middle goes to the provider, and its
// output items (retained messages and the encrypted compaction item) are kept on the summary
// row (ReasoningDetails, provider.CompactedWindow) and replayed byte for byte before the row's
// text on every later request. When the provider's compaction fails or is unavailable the
// local compressor compacts instead, and says so.
type providerEngine struct {
	local     *compress.Compressor
	compactor provider.Compactor
	model     string
}

var _ compress.Engine = (*providerEngine)(nil)

func (e *providerEngine) Name() string { return ProviderEngineName }

func (e *providerEngine) Select(ctx context.Context, req compress.Request) ([]store.Message, error) {
	return e.local.Select(ctx, req)
}

func (e *providerEngine) Compress(ctx context.Context, req compress.Request) (compress.Plan, error) {
	if req.State == nil {
		req.State = &compress.State{}
	}
	before := *req.State
	shape := *e.local
	shape.Summarizer = compress.SummarizerFunc(func(context.Context, string, string) (string, error) {
		return providerSummaryBody, nil
	})
	plan, err := shape.Compress(ctx, req)
	if err != nil {
		return plan, err
	}
	kept := map[int64]bool{}
	for _, o := range plan.Origins {
		kept[o] = true
	}
	var middle []store.Message
	for _, m := range req.Messages {
		if !kept[m.ID] && m.Role != store.RoleSystem {
			middle = append(middle, m)
		}
	}
	summary := -1
	for i, m := range plan.Messages {
		if m.Summary {
			summary = i
			break
		}
	}
	fallback := func(why error) (compress.Plan, error) {
		*req.State = before
		lp, lerr := e.local.Compress(ctx, req)
		if lerr != nil {
			return lp, lerr
		}
		lp.Notices = append([]string{fmt.Sprintf("The provider's compaction failed (%s); spool's own compressor compacted instead.", shortErr(why))}, lp.Notices...)
		return lp, nil
	}
	if summary < 0 || len(middle) == 0 {
		return fallback(errors.New("no summary row to carry the compaction"))
	}
	wm, err := wire.Build(middle, wire.TurnContext{})
	if err != nil {
		return fallback(err)
	}
	comp, err := e.compactor.Compact(ctx, provider.Request{Model: e.model, Messages: wm.Messages, Temperature: -1})
	if err != nil {
		if ctx.Err() != nil {
			return compress.Plan{}, fmt.Errorf("compress session %s: %w", req.SessionID, ctx.Err())
		}
		return fallback(err)
	}
	win, err := provider.CompactedWindow(comp.Items)
	if err != nil {
		return fallback(err)
	}
	row := &plan.Messages[summary]
	was := tokens.EstimateMessage(*row)
	row.ReasoningDetails = win
	if !strings.Contains(row.Content, providerSummaryBody) {
		// Whatever rung the compressor took, the row says where the context went, first.
		for _, lead := range []string{compress.SummaryPrefix, compress.ShortSummaryPrefix} {
			if i := strings.Index(row.Content, lead); i >= 0 {
				at := i + len(lead)
				if nl := strings.IndexByte(row.Content[at:], '\n'); nl >= 0 {
					at += nl + 1
					row.Content = row.Content[:at] + providerSummaryBody + "\n\n" + row.Content[at:]
				}
				break
			}
		}
	}
	plan.TokensAfter += tokens.EstimateMessage(*row) - was // the window is sent too
	if req.Threshold != nil && req.Threshold.Tokens > 0 && plan.ActiveTokens() >= req.Threshold.Tokens {
		// A window that leaves the next request over the trigger would compact again at once.
		return fallback(fmt.Errorf("its window leaves the request at ~%d tokens, over the trigger of %d", plan.ActiveTokens(), req.Threshold.Tokens))
	}
	plan.SummaryModel = "provider compaction (" + comp.Model + ")"
	return plan, nil
}

// providerEngineFor is the provider engine over m's client when compression.engine is
// "provider" and the client compacts (the Responses API), else nil: the local compressor runs.
func providerEngineFor(cfg compress.Config, m *model, local *compress.Compressor) compress.Engine {
	if cfg.Engine != ProviderEngineName || local == nil {
		return nil
	}
	c, ok := m.client.(provider.Compactor)
	if !ok || !c.CanCompact() {
		return nil
	}
	return &providerEngine{local: local, compactor: c, model: m.id}
}

// NewProviderEngine is the engine compression.engine "provider" gives a model on client c:
// the provider compacts what local's split chooses, and local compacts when it cannot.
// Callers that wrap or measure the engine (benchmarks) build it here to run what users run.
func NewProviderEngine(local *compress.Compressor, c provider.Compactor, model string) compress.Engine {
	return &providerEngine{local: local, compactor: c, model: model}
}
