package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/recall"
	"github.com/spoolhq/spool/store"
)

// recallWorld seeds past sessions for session_search: "deploy" mentions the frobnicator rollout
// among other talk; "huge" is far larger than a summary's input bound; "current" calls.
// matchID is the user's question about the rollout (the answer after it mentions it too).
func recallWorld(t testing.TB, st store.Backend) (matchID int64) {
	t.Helper()
	ctx := context.Background()
	base := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	mk := func(id, title string, day int, ms []store.Message) []int64 {
		t.Helper()
		if _, err := st.CreateSession(ctx, store.NewSession{ID: id, Title: title, StartedAt: base.AddDate(0, 0, day)}); err != nil {
			t.Fatal(err)
		}
		for i := range ms {
			ms[i].Timestamp = base.AddDate(0, 0, day).Add(time.Duration(i) * time.Minute)
		}
		ids, err := st.AppendBatch(ctx, id, ms)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	var deploy []store.Message
	for i := range 10 {
		deploy = append(deploy, store.Message{Role: "user", Content: fmt.Sprintf("warmup question %d about lunch", i)},
			store.Message{Role: "assistant", Content: fmt.Sprintf("warmup answer %d", i)})
	}
	deploy = append(deploy,
		store.Message{Role: "user", Content: "how do we roll out the frobnicator? we decided to use deploy/frob.yaml with a canary"},
		store.Message{Role: "assistant", Content: "The frobnicator rolls out through deploy/frob.yaml; the canary gets 5% first (ticket OPS-4711)."})
	ids := mk("deploy", "frobnicator rollout", 1, deploy)
	var huge []store.Message
	for i := range 400 {
		huge = append(huge, store.Message{Role: "user", Content: fmt.Sprintf("frobnicator log line %d %s", i, strings.Repeat("noise ", 400))})
	}
	mk("huge", "frobnicator logs", 2, huge)
	mk("current", "", 3, []store.Message{{Role: "user", Content: "what did we decide?"}})
	return ids[len(ids)-2]
}

type discovery struct {
	Success bool
	Note    string
	Results []struct {
		SessionID      string `json:"session_id"`
		Title          string
		MatchMessageID int64 `json:"match_message_id"`
		Detail         string
		Summary        string
		SummarySpan    []int64 `json:"summary_span"`
		SummaryError   string  `json:"summary_error"`
		Messages       []json.RawMessage
	}
}

func runRecall(t *testing.T, st store.Backend, args string, sum recall.Summarizer) discovery {
	t.Helper()
	out := recall.Run(context.Background(), st, "current", json.RawMessage(args), sum)
	var d discovery
	if err := json.Unmarshal(out, &d); err != nil || !d.Success {
		t.Fatalf("answer %s (%v)", out, err)
	}
	return d
}

func TestRecallSummary(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	match := recallWorld(t, st)
	model := fake.New(fake.Config{})
	sum := agent.RecallSummarizer{Store: st, Models: []agent.SummaryModel{{Client: model, Model: "aux-mini"}}}

	d := runRecall(t, st, `{"query":"frobnicator","detail":"summary"}`, sum)
	if len(d.Results) != 2 || !strings.Contains(d.Note, "[mN]") {
		t.Fatalf("answer = %+v", d)
	}
	byID := map[string]int{}
	for i, r := range d.Results {
		byID[r.SessionID] = i
		if r.Detail != "summary" || r.Summary == "" || r.SummaryError != "" || len(r.Messages) != 0 || len(r.SummarySpan) != 2 {
			t.Errorf("result %s = %+v", r.SessionID, r)
		}
		if len(r.Summary) > recall.SummaryOutputChars+10 {
			t.Errorf("summary of %s is %d chars", r.SessionID, len(r.Summary))
		}
	}
	dep := d.Results[byID["deploy"]]
	if dep.Title != "frobnicator rollout" || dep.MatchMessageID < match || dep.MatchMessageID > match+1 ||
		dep.SummarySpan[0] > dep.MatchMessageID || dep.SummarySpan[1] < dep.MatchMessageID {
		t.Errorf("deploy result lost its ids: %+v (match %d)", dep, match)
	}
	// The fake summarizer keeps identifiers and paths of what it read.
	if !strings.Contains(dep.Summary, "deploy/frob.yaml") {
		t.Errorf("summary does not reflect the session: %q", dep.Summary)
	}

	// Every call is recorded on the calling session, with bounded input.
	recs, err := st.Requests(context.Background(), "current", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("recorded %d calls, want one per summarized session", len(recs))
	}
	for _, r := range recs {
		if r.Task != "session_search" || r.Model != "aux-mini" || r.Usage.InputTokens == 0 || r.Usage.OutputTokens == 0 || r.Usage.APICalls != 1 {
			t.Errorf("record = %+v", r)
		}
		// 100,000 characters of excerpt is about 25,000 tokens; the huge session has 960,000.
		if r.Usage.InputTokens > 40_000 {
			t.Errorf("summary input not bounded: %d tokens", r.Usage.InputTokens)
		}
	}
	huge := d.Results[byID["huge"]]
	if huge.SummarySpan[1]-huge.SummarySpan[0] >= 399 {
		t.Errorf("the whole huge session went to the summarizer: span %v", huge.SummarySpan)
	}
}

func TestRecallSummaryFallbacks(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	recallWorld(t, st)
	const args = `{"query":"frobnicator","detail":"summary"}`

	t.Run("no summarizer", func(t *testing.T) {
		d := runRecall(t, st, args, nil)
		if !strings.Contains(d.Note, "unavailable") || len(d.Results) == 0 || len(d.Results[0].Messages) == 0 || d.Results[0].Summary != "" {
			t.Errorf("answer = %+v", d)
		}
	})
	t.Run("auxiliary model fails, main model answers", func(t *testing.T) {
		aux, main := fake.New(fake.Config{}), fake.New(fake.Config{})
		aux.FailNext(10, fake.Fault{Kind: fake.FaultServer})
		rec := &countingRecorder{}
		sum := agent.RecallSummarizer{Store: rec, Models: []agent.SummaryModel{{Client: aux, Model: "aux-mini"}, {Client: main, Model: "main-model"}}}
		d := runRecall(t, st, args, sum)
		for _, r := range d.Results {
			if r.Detail != "summary" || r.Summary == "" {
				t.Errorf("result = %+v", r)
			}
		}
		if len(rec.models) != 2 || rec.models[0] != "main-model" {
			t.Errorf("recorded %v, want the main model's two calls", rec.models)
		}
	})
	t.Run("every model fails", func(t *testing.T) {
		m := fake.New(fake.Config{})
		m.FailNext(10, fake.Fault{Kind: fake.FaultOverloaded})
		rec := &countingRecorder{}
		d := runRecall(t, st, args, agent.RecallSummarizer{Store: rec, Models: []agent.SummaryModel{{Client: m, Model: "aux-mini"}}})
		if !strings.Contains(d.Note, "failed") || len(d.Results) == 0 {
			t.Fatalf("answer = %+v", d)
		}
		for i, r := range d.Results {
			if r.SummaryError == "" || r.Summary != "" || r.Detail == "summary" || (i == 0 && len(r.Messages) == 0) {
				t.Errorf("fallback result = %+v", r)
			}
		}
		if len(rec.models) != 0 {
			t.Errorf("failed calls recorded usage: %v", rec.models)
		}
	})
	t.Run("other modes ignore it", func(t *testing.T) {
		out := recall.Run(context.Background(), st, "current", json.RawMessage(`{"session_id":"deploy","detail":"summary"}`), nil)
		if !strings.Contains(string(out), `"mode":"read"`) || strings.Contains(string(out), `"summary"`) {
			t.Errorf("read with detail=summary = %.200s", out)
		}
	})
}

type countingRecorder struct{ models []string }

func (c *countingRecorder) RecordRequest(_ context.Context, _ string, r store.RequestRecord) error {
	c.models = append(c.models, r.Model)
	return nil
}

// BenchmarkRecallSummary: what detail=summary adds to a discover answer, with the in-process
// fake model as the summarizer (so the figure is spool's overhead plus the tokens a real model
// would be sent): go test ./agent -run '^$' -bench RecallSummary
func BenchmarkRecallSummary(b *testing.B) {
	st := openStoreB(b)
	recallWorld(b, st)
	rec := &countingRecorder{}
	model := fake.New(fake.Config{})
	for _, c := range []struct {
		name string
		sum  recall.Summarizer
		args string
	}{
		{"adaptive", nil, `{"query":"frobnicator"}`},
		{"summary", agent.RecallSummarizer{Store: rec, Models: []agent.SummaryModel{{Client: model, Model: "aux-mini"}}}, `{"query":"frobnicator","detail":"summary"}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			before := model.Stats()
			var out []byte
			for b.Loop() {
				out = recall.Run(context.Background(), st, "current", json.RawMessage(c.args), c.sum)
			}
			after := model.Stats()
			n := float64(b.N)
			b.ReportMetric(float64(after.PromptTokens-before.PromptTokens)/n, "in-tokens/op")
			b.ReportMetric(float64(after.OutputTokens-before.OutputTokens)/n, "out-tokens/op")
			b.ReportMetric(float64(len(out)), "answer-bytes")
		})
	}
}
