package bench

import (
	"context"
	"reflect"
	"sync"
	"time"

	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/store"
)

// metered is one model call of the agent as the meter saw it.
type metered struct {
	req       provider.Request // as the agent built it (before a naive rewrite)
	usage     provider.Usage
	compacted bool // a compaction ran since the previous call
}

// meter wraps the agent's client: it records every turn call with its usage and, in naive mode,
// rewrites the system prompt on the wire with the current time, once per turn, as an agent that
// renders its prompt every turn does.
type meter struct {
	next  provider.Client
	naive bool

	mu        sync.Mutex
	clock     time.Time
	calls     []metered
	compacted bool
}

func (m *meter) Name() string { return m.next.Name() }

// setTurn sets the time a naive agent renders into its prompt for the coming turn.
func (m *meter) setTurn(t time.Time) {
	m.mu.Lock()
	m.clock = t
	m.mu.Unlock()
}

func (m *meter) Chat(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	sent := req
	m.mu.Lock()
	if m.naive {
		sent.System = req.System + "\n\nCurrent time: " + m.clock.UTC().Format("Monday 2006-01-02 15:04:05 UTC")
	}
	m.mu.Unlock()
	resp, err := m.next.Chat(ctx, sent, onDelta)
	if err != nil {
		return resp, err
	}
	m.mu.Lock()
	m.calls = append(m.calls, metered{req: req, usage: resp.Usage, compacted: m.compacted})
	m.compacted = false
	m.mu.Unlock()
	return resp, nil
}

// markingEngine tells the meter when a compaction was planned, so the next call's theoretical
// maximum resets.
type markingEngine struct {
	compress.Engine
	m *meter
}

func (e markingEngine) Compress(ctx context.Context, req compress.Request) (compress.Plan, error) {
	p, err := e.Engine.Compress(ctx, req)
	if err == nil {
		e.m.mu.Lock()
		e.m.compacted = true
		e.m.mu.Unlock()
	}
	return p, err
}

// Cache accounting rules of the two providers, as provider/fake implements them.
const (
	cacheMinTokens   = 1024 // neither provider caches a shorter prefix
	openAIBlockToken = 128  // OpenAI caches whole 128-token blocks
)

// theoreticalMax is the most a provider could have served from its cache for call i, given
// call i-1: everything but what is new since call i-1 (see RunCache for the exact rules).
func theoreticalMax(style string, calls []metered, i int) int64 {
	if i == 0 {
		return 0
	}
	prev, cur := calls[i-1], calls[i]
	var shared int64
	if !cur.compacted {
		shared = prev.usage.InputTokens // the whole previous prompt
		if style == "anthropic" {
			return atLeastMin(shared)
		}
		return atLeastMin(shared / openAIBlockToken * openAIBlockToken)
	}
	// After a compaction only the prefix the compaction left unchanged can be read.
	if !reflect.DeepEqual(prev.req.Tools, cur.req.Tools) || prev.req.Model != cur.req.Model {
		return 0
	}
	k := 0
	sameSystem := prev.req.System == cur.req.System
	if sameSystem {
		for k < len(prev.req.Messages) && k < len(cur.req.Messages) && reflect.DeepEqual(prev.req.Messages[k], cur.req.Messages[k]) {
			k++
		}
	}
	prefix := func(system bool, n int) int64 {
		r := provider.Request{Tools: cur.req.Tools, Messages: cur.req.Messages[:n]}
		if system {
			r.System = cur.req.System
		}
		return int64(fake.PromptTokens(r))
	}
	if style == "openai" {
		shared = prefix(sameSystem, k)
		return atLeastMin(shared / openAIBlockToken * openAIBlockToken)
	}
	// Anthropic reads only prefixes that end where the previous request had a breakpoint: the
	// system prompt and the last three (tool results merged) messages.
	if sameSystem {
		shared = prefix(true, 0)
	}
	for _, end := range anthropicBreakpoints(prev.req.Messages) {
		if end <= k {
			shared = max(shared, prefix(true, end))
		}
	}
	return atLeastMin(shared)
}

func atLeastMin(n int64) int64 {
	if n < cacheMinTokens {
		return 0
	}
	return n
}

// anthropicBreakpoints are the message counts at which the Anthropic adapter ends its last three
// cache_control blocks: the ends of the last three wire messages, where consecutive tool results
// travel as one user message.
func anthropicBreakpoints(msgs []provider.Message) []int {
	var ends []int
	for i := range msgs {
		if i+1 < len(msgs) && msgs[i].Role == store.RoleTool && msgs[i+1].Role == store.RoleTool {
			continue
		}
		ends = append(ends, i+1)
	}
	if len(ends) > 3 {
		ends = ends[len(ends)-3:]
	}
	return ends
}
