package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/recall"
	"github.com/spoolhq/spool/store"
)

// UsageRecorder is the store method a RecallSummarizer records its calls with.
type UsageRecorder interface {
	RecordRequest(ctx context.Context, id string, r store.RequestRecord) error
}

// SummaryModel is one model a RecallSummarizer may ask.
type SummaryModel struct {
	Client provider.Client
	Model  string
}

// RecallSummarizer serves session_search's detail=summary (recall.Summarizer): it asks the first
// model (the auxiliary compression model), then the next (the main model) when a call fails, and
// records each call's usage and cost on the calling session as task "session_search".
type RecallSummarizer struct {
	Store  UsageRecorder
	Models []SummaryModel
	Now    func() time.Time // time.Now when nil
}

var _ recall.Summarizer = RecallSummarizer{}

// SummarizeRecall implements recall.Summarizer.
func (s RecallSummarizer) SummarizeRecall(ctx context.Context, current, prompt string) (string, error) {
	now := s.Now
	if now == nil {
		now = time.Now
	}
	var errs []error
	for _, m := range s.Models {
		if m.Client == nil || m.Model == "" {
			continue
		}
		start := now()
		resp, err := m.Client.Chat(ctx, provider.Request{
			Model:       m.Model,
			Messages:    []provider.Message{{Role: store.RoleUser, Content: prompt}},
			MaxTokens:   recall.SummaryMaxTokens,
			Temperature: -1,
		}, nil)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.Model, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		s.record(ctx, current, m.Model, resp, start, now())
		return resp.Content, nil
	}
	if len(errs) == 0 {
		return "", errors.New("no summarizer model is configured")
	}
	return "", fmt.Errorf("summarize: %w", errors.Join(errs...))
}

func (s RecallSummarizer) record(ctx context.Context, current, model string, resp provider.Response, start, end time.Time) {
	if s.Store == nil || current == "" {
		return
	}
	pu := resp.Usage
	u := store.Usage{InputTokens: pu.InputTokens, OutputTokens: pu.OutputTokens, CacheReadTokens: pu.CacheReadTokens,
		CacheWriteTokens: pu.CacheWriteTokens, ReasoningTokens: pu.ReasoningTokens, APICalls: 1}
	model = cmp.Or(resp.Model, model)
	u.CostUSD, _ = provider.EstimateCost(model, pu)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeBudget)
	defer cancel()
	// A failed record loses accounting, not the answer.
	_ = s.Store.RecordRequest(wctx, current, store.RequestRecord{At: start, Model: model, Task: "session_search",
		Usage: u, Latency: end.Sub(start)})
}
