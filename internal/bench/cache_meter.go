package bench

import (
	"cmp"
	"context"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/store"
)

// Agents the cache benchmark runs: spool as it is, and two rewrites of its requests on the wire.
const (
	agentSpool = "spool"
	// agentNaive renders the current time into its system prompt every turn.
	agentNaive = "naive"
	// agentRebuild renders its system prompt again at every compaction, headed by the time of
	// the rebuild, as an agent that rebuilds its prompt from scratch after compacting does.
	agentRebuild = "rebuild"
	// agentNoReplay drops the reasoning items of earlier answers from its Responses requests
	// (what a client does that ignores reasoning replay).
	agentNoReplay = "no-replay"
)

// metered is one model call of the agent as the meter saw it.
type metered struct {
	req       provider.Request // as the agent built it (before a rewrite)
	sent      provider.Request // as it went out
	usage     provider.Usage
	answer    provider.Message // the answer as the agent stores and replays it
	at        time.Time        // when it was sent (the simulated clock)
	compacted bool             // a compaction ran since the previous call
	// headKept is how many leading messages of the compacted history the compaction kept in
	// place: the first message it had to change.
	headKept int
}

// meter wraps the agent's client: it records every turn call with its usage and, for the naive
// and rebuild agents, rewrites the system prompt on the wire.
type meter struct {
	next  provider.Client
	agent string
	clock *simClock

	mu        sync.Mutex
	turnAt    time.Time // the naive agent's time for this turn
	rebuiltAt time.Time // the rebuild agent's time of its last prompt build
	calls     []metered
	compacted bool
	headKept  int
}

func (m *meter) Name() string { return m.next.Name() }

// setTurn sets the time a naive agent renders into its prompt for the coming turn.
func (m *meter) setTurn(t time.Time) {
	m.mu.Lock()
	m.turnAt = t
	if m.rebuiltAt.IsZero() {
		m.rebuiltAt = t
	}
	m.mu.Unlock()
}

func (m *meter) Chat(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	sent := req
	m.mu.Lock()
	switch m.agent {
	case agentNaive:
		sent.System = req.System + "\n\nCurrent time: " + m.turnAt.UTC().Format("Monday 2006-01-02 15:04:05 UTC")
	case agentRebuild:
		if m.compacted {
			m.rebuiltAt = m.clock.Now()
		}
		sent.System = "Prompt built " + m.rebuiltAt.UTC().Format("Monday 2006-01-02 15:04:05 UTC") + ".\n\n" + req.System
	case agentNoReplay:
		sent.Messages = slices.Clone(req.Messages)
		for i := range sent.Messages {
			sent.Messages[i].ReasoningDetails = nil
		}
	}
	at := m.clock.Now()
	m.mu.Unlock()
	resp, err := m.next.Chat(ctx, sent, onDelta)
	if err != nil {
		return resp, err
	}
	m.mu.Lock()
	answer := provider.Message{Role: store.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls, ReasoningDetails: resp.ReasoningDetails}
	m.calls = append(m.calls, metered{req: req, sent: sent, usage: resp.Usage, answer: answer, at: at, compacted: m.compacted, headKept: m.headKept})
	m.compacted, m.headKept = false, 0
	m.mu.Unlock()
	return resp, nil
}

// markingEngine tells the meter when a compaction was planned and where it started changing
// the history, so the next call's ceiling stops there.
type markingEngine struct {
	compress.Engine
	m *meter
}

func (e markingEngine) Compress(ctx context.Context, req compress.Request) (compress.Plan, error) {
	p, err := e.Engine.Compress(ctx, req)
	if err == nil {
		h := 0
		for h < len(p.Messages) && h < len(req.Messages) && p.Origins[h] == req.Messages[h].ID && sameWire(p.Messages[h], req.Messages[h]) {
			h++
		}
		e.m.mu.Lock()
		if !e.m.compacted { // two compactions before one call: the first change counts
			e.m.headKept = h
		} else {
			e.m.headKept = min(e.m.headKept, h)
		}
		e.m.compacted = true
		e.m.mu.Unlock()
	}
	return p, err
}

// simClock is the benchmark's clock, shared by the agent and the fake provider: it moves only
// when the script says so, so cache expiry after a pause is exact and no run waits.
type simClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *simClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Cache accounting rules of the two providers, as provider/fake implements them.
const (
	cacheMinTokens   = 1024 // neither provider caches a shorter prefix
	openAIBlockToken = 128  // OpenAI caches whole 128-token blocks
)

// idealCeiling is the most an ideal agent could have had cached for call i: everything already
// sent, in the same order (the previous call's whole prompt), or, right after a compaction, the
// prefix up to the first message the compaction had to change. The tool schemas and the system
// prompt count whole as long as their inputs did not change, which in this benchmark is always
// (a changed tool list ends the ceiling at 0): an agent that changes its prompt bytes anyway
// (spool's note at its first compaction, the naive and rebuild agents) is measured against the
// bytes it could have kept. Nothing is cached across a pause longer than lifetime.
func idealCeiling(style string, calls []metered, i int, lifetime time.Duration) int64 {
	if i == 0 {
		return 0
	}
	prev, cur := calls[i-1], calls[i]
	if cur.at.Sub(prev.at) > lifetime {
		return 0
	}
	if !reflect.DeepEqual(prev.req.Tools, cur.req.Tools) || prev.req.Model != cur.req.Model {
		return 0 // the tools come first: a changed schema changes every byte after it
	}
	// The benchmark's prompt inputs (rules, platform, tools) never change, so the ideal agent
	// sends its system prompt byte for byte all session long, and the messages up to the first
	// one a compaction had to change.
	if style == "responses" || style == StyleResponsesCompact {
		// The Responses API caches what the model generated too: an ideal agent replays the
		// previous answer's items, reasoning included, byte for byte, so its ceiling is the
		// previous prompt as spool built it (reasoning replayed) plus that answer.
		full := provider.Request{Tools: prev.req.Tools, System: prev.req.System, Messages: append(slices.Clone(prev.req.Messages), prev.answer)}
		ideal := full
		if cur.compacted {
			ideal.Messages = prev.req.Messages[:min(cur.headKept, len(prev.req.Messages))]
		}
		// What the agent really sent again byte for byte is within reach too.
		shared := int64(max(fake.ResponsesPromptTokens(ideal), fake.ResponsesSharedPrefixTokens(full, cur.sent)))
		shared = shared / openAIBlockToken * openAIBlockToken
		if shared < cacheMinTokens {
			return 0
		}
		return shared
	}
	msgs := prev.sent.Messages
	if cur.compacted {
		msgs = msgs[:min(cur.headKept, len(msgs))]
	}
	structural := fake.PromptTokens(provider.Request{Tools: prev.sent.Tools, System: prev.sent.System, Messages: msgs})
	// Whatever the agent really sent again byte for byte is within reach too (a new summary
	// that starts with the same marker as the old one).
	shared := int64(max(structural, fake.SharedPrefixTokens(prev.sent, cur.sent)))
	if style == "openai" {
		shared = shared / openAIBlockToken * openAIBlockToken
	}
	if shared < cacheMinTokens {
		return 0
	}
	return shared
}

// sameWire reports whether a planned message sends the same bytes as the original.
func sameWire(a, b store.Message) bool {
	wire := func(m store.Message) string { return cmp.Or(m.APIContent, m.Content) }
	return a.Role == b.Role && wire(a) == wire(b) && a.ToolCallID == b.ToolCallID && slices.Equal(a.ToolCalls, b.ToolCalls)
}
