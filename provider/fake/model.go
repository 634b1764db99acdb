package fake

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

// OfflineNotice is the one line spool prints when it answers with this model because no
// provider is configured.
const OfflineNotice = "No model provider configured: answering with the built-in offline model (deterministic and scripted; no network, no real intelligence)."

// CacheStyle selects how the in-process client accounts prompt caching.
type CacheStyle string

// Cache styles for Config.InProcessCache.
const (
	CacheOpenAI    CacheStyle = "openai"    // automatic prefix caching (default)
	CacheAnthropic CacheStyle = "anthropic" // breakpoints on the system prompt and the last 3 messages
	CacheNone      CacheStyle = "none"
)

// Config tunes a Model. The zero value is usable: every zero field takes the default named in
// its comment.
type Config struct {
	Now func() time.Time // clock for cache expiry and timestamps; nil: time.Now

	OpenAICacheTTL         time.Duration // 0: 5m of inactivity
	OpenAIMinCacheTokens   int           // 0: 1024
	OpenAICacheBlockTokens int           // 0: 128

	AnthropicCacheTTL       time.Duration // 0: 5m, refreshed on every hit
	AnthropicMinCacheTokens int           // 0: 1024 (Sonnet/Opus; Haiku wants 2048)

	ContextWindow int // prompt tokens above this fail with context_length; 0: 200000

	Latency    time.Duration // added before every answer
	ChunkDelay time.Duration // between streamed chunks

	// APIKey, when set, is the only key the HTTP handlers accept (401 otherwise).
	APIKey string

	// InProcessCache is the cache accounting of Chat; "": CacheOpenAI.
	InProcessCache CacheStyle

	// Guide makes the model help a person trying spool without a provider: a plain message about
	// the files here is answered by listing them with the list_files tool (see guided).
	Guide bool
	// ConfigPath is the config file the guide tells the person to edit ("" names
	// ~/.spool/config.yaml, the default home's).
	ConfigPath string
}

func (c Config) withDefaults() Config {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.OpenAICacheTTL == 0 {
		c.OpenAICacheTTL = 5 * time.Minute
	}
	if c.OpenAIMinCacheTokens == 0 {
		c.OpenAIMinCacheTokens = 1024
	}
	if c.OpenAICacheBlockTokens == 0 {
		c.OpenAICacheBlockTokens = 128
	}
	if c.AnthropicCacheTTL == 0 {
		c.AnthropicCacheTTL = 5 * time.Minute
	}
	if c.AnthropicMinCacheTokens == 0 {
		c.AnthropicMinCacheTokens = 1024
	}
	if c.ContextWindow == 0 {
		c.ContextWindow = 200_000
	}
	if c.InProcessCache == "" {
		c.InProcessCache = CacheOpenAI
	}
	return c
}

// Stats are running totals over every answered call (failed calls count only in Requests and
// Failed).
type Stats struct {
	Requests         int64
	Failed           int64
	PromptTokens     int64 // every prompt token, cached ones included
	CachedTokens     int64 // prompt tokens read from the cache
	CacheWriteTokens int64
	OutputTokens     int64
	// Compactions counts POST /responses/compact calls answered (not in Requests).
	Compactions int64
}

// CacheHitRate is CachedTokens / PromptTokens, 0 before any prompt.
func (s Stats) CacheHitRate() float64 {
	if s.PromptTokens == 0 {
		return 0
	}
	return float64(s.CachedTokens) / float64(s.PromptTokens)
}

// Model is the deterministic scripted model. It is safe for concurrent use; one Model keeps one
// prompt cache per wire format, shared by every client of that format.
type Model struct {
	cfg Config

	mu     sync.Mutex
	caches map[string]*prefixCache // by wire: "openai", "anthropic", "inproc"
	queued []Fault
	fired  map[prefixKey]int // how often a counted FAULT directive fired for one prompt
	bars   map[string]*barrier
	stats  Stats
	byWire map[string]*Stats
}

// New returns a Model configured by cfg.
func New(cfg Config) *Model {
	return &Model{
		cfg:    cfg.withDefaults(),
		caches: map[string]*prefixCache{"openai": newPrefixCache(), "anthropic": newPrefixCache(), "inproc": newPrefixCache()},
		fired:  map[prefixKey]int{},
		bars:   map[string]*barrier{},
		byWire: map[string]*Stats{},
	}
}

// Name implements provider.Client.
func (m *Model) Name() string { return "fake" }

// FailNext makes the next n calls, on any wire, fail with f (a slow fault delays them; a cut
// fault cuts them). Calls queue up: FailNext(1, a) then FailNext(2, b) fails once with a, then
// twice with b.
func (m *Model) FailNext(n int, f Fault) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for range n {
		m.queued = append(m.queued, f)
	}
}

// Stats returns the running totals of all wires together.
func (m *Model) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

// WireStats returns the totals of one wire: "openai", "anthropic" or "inproc".
func (m *Model) WireStats(wire string) Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.byWire[wire]; s != nil {
		return *s
	}
	return Stats{}
}

// ResetStats zeroes the totals; the caches stay warm.
func (m *Model) ResetStats() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats = Stats{}
	m.byWire = map[string]*Stats{}
}

// call is one model call in provider-neutral form, whatever wire it came from.
type call struct {
	wire      string // "openai", "anthropic", "inproc"
	model     string
	cacheKey  string
	system    string
	msgs      []provider.Message
	tools     []provider.Tool
	segs      []segment
	maxTokens int
	idPrefix  string // tool call id prefix of the wire
	msgIndex  []int  // wire index of each neutral message, when they differ (Anthropic)
}

// result is what the model answers to a call.
type result struct {
	text   string
	calls  []store.ToolCall
	finish string // "stop", "tool_calls", "length"
	usage  promptUsage
	output int
	delay  time.Duration // slow fault plus configured latency
	cut    bool
	seed   string // hex hash of the prompt, for deterministic ids
	// wait is the WAIT barrier this call holds its answer at (nil: none).
	wait *barrier
}

// failure is a refused call: either an injected fault or a request the fake rejects.
type failure struct {
	kind    FaultKind
	message string // set for a rejected request: replaces the canned body text
	prompt  int
}

func (m *Model) process(c call) (result, *failure) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.cfg.Now()
	full := joinSegments(c.segs)
	promptKey := newPrefixHasher(c.wire + "\x00" + c.cacheKey)
	promptKey.write(full)
	pk := promptKey.key()
	res := result{delay: m.cfg.Latency, seed: hex.EncodeToString(pk[:])}
	ws := m.byWire[c.wire]
	if ws == nil {
		ws = &Stats{}
		m.byWire[c.wire] = ws
	}
	m.stats.Requests++
	ws.Requests++
	fail := func(f failure) (result, *failure) {
		m.stats.Failed++
		ws.Failed++
		return result{}, &f
	}

	if len(c.msgs) == 0 {
		return fail(failure{kind: FaultBadRequest, message: emptyMessagesText(c.wire)})
	}
	if msg := validatePairs(c); msg != "" {
		return fail(failure{kind: FaultBadRequest, message: msg})
	}
	var fault *Fault
	if len(m.queued) > 0 {
		f := m.queued[0]
		m.queued = m.queued[1:]
		fault = &f
	} else if d := callDirectives(c); d.fault != nil {
		if d.faultTimes == 0 || m.fired[pk] < d.faultTimes {
			m.fired[pk]++
			fault = d.fault
		}
	}
	if d := callDirectives(c); d.barrier != "" {
		res.wait = m.arrive(d.barrier, d.barrierN)
	}
	promptTokens := CountTokens(full)
	if fault != nil {
		switch fault.Kind {
		case FaultSlow:
			res.delay += fault.Delay
		case FaultCut:
			res.cut = true
		default:
			return fail(failure{kind: fault.Kind, prompt: promptTokens})
		}
	}
	if promptTokens > m.cfg.ContextWindow {
		return fail(failure{kind: FaultContextLength, prompt: promptTokens})
	}

	var err error
	switch style := m.cacheStyle(c.wire); style {
	case CacheOpenAI:
		res.usage = openAIAccount(m.caches[c.wire], c.cacheKey, c.segs, now, cacheConfig{
			ttl: m.cfg.OpenAICacheTTL, minTokens: m.cfg.OpenAIMinCacheTokens, blockTokens: m.cfg.OpenAICacheBlockTokens})
	case CacheAnthropic:
		res.usage, err = anthropicAccount(m.caches[c.wire], c.cacheKey, c.segs, now, cacheConfig{
			ttl: m.cfg.AnthropicCacheTTL, minTokens: m.cfg.AnthropicMinCacheTokens})
	default:
		res.usage = promptUsage{prompt: promptTokens}
	}
	if err != nil {
		return fail(failure{kind: FaultBadRequest, message: err.Error()})
	}

	var guidedOK bool
	if m.cfg.Guide {
		res.text, res.calls, res.finish, guidedOK = guided(c, res.seed, m.cfg.ConfigPath)
	}
	if !guidedOK {
		res.text, res.calls, res.finish = respond(c, res.seed)
	}
	res.output = CountTokens(res.text)
	for _, tc := range res.calls {
		res.output += CountTokens(tc.Function.Name) + CountTokens(tc.Function.Arguments)
	}
	if c.maxTokens > 0 && res.output > c.maxTokens {
		cut := min(len(res.text), c.maxTokens*BytesPerToken)
		res.text, res.calls, res.finish, res.output = res.text[:cut], nil, "length", c.maxTokens
	}

	for _, s := range []*Stats{&m.stats, ws} {
		s.PromptTokens += int64(res.usage.prompt)
		s.CachedTokens += int64(res.usage.read)
		s.CacheWriteTokens += int64(res.usage.write())
		s.OutputTokens += int64(res.output)
	}
	return res, nil
}

// cacheGenerated puts the prefixes of segs (a prompt and what was generated after it) into the
// OpenAI-style cache of c's wire, as a provider's cache holds the continuation it computed.
func (m *Model) cacheGenerated(c call, segs []segment) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cacheStyle(c.wire) != CacheOpenAI {
		return
	}
	openAIPut(m.caches[c.wire], c.cacheKey, segs, m.cfg.Now(), cacheConfig{
		ttl: m.cfg.OpenAICacheTTL, minTokens: m.cfg.OpenAIMinCacheTokens, blockTokens: m.cfg.OpenAICacheBlockTokens})
}

func (m *Model) cacheStyle(wire string) CacheStyle {
	switch wire {
	case "openai":
		return CacheOpenAI
	case "anthropic":
		return CacheAnthropic
	}
	return m.cfg.InProcessCache
}

// Chat implements provider.Client in process: no HTTP, the same script, cache accounting per
// Config.InProcessCache, faults returned as the *provider.Error a correct adapter would return.
func (m *Model) Chat(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	c := call{wire: "inproc", model: req.Model, cacheKey: req.Model, system: req.System,
		msgs: req.Messages, tools: req.Tools, maxTokens: req.MaxTokens, idPrefix: "call_"}
	if c.model == "" {
		c.model = "fake"
	}
	c.segs = neutralSegments(req.System, req.Messages, req.Tools)
	if m.cfg.InProcessCache == CacheAnthropic {
		markInProcessBreakpoints(c.segs, req)
	}
	res, f := m.process(c)
	if f != nil {
		w := openAIError(f.kind, c.model, "", f.prompt, m.cfg.ContextWindow)
		msg := w.message
		if f.message != "" {
			msg = f.message
		}
		return provider.Response{}, providerError(Fault{Kind: f.kind}, w.status, msg)
	}
	if err := res.hold(ctx); err != nil {
		return provider.Response{}, ctxError(err)
	}
	if onDelta != nil {
		pieces := splitText(res.text)
		if res.cut {
			pieces = pieces[:len(pieces)/2]
		}
		for _, p := range pieces {
			if err := sleep(ctx, m.cfg.ChunkDelay); err != nil {
				return provider.Response{}, ctxError(err)
			}
			onDelta(provider.Delta{Content: p})
		}
	}
	if res.cut {
		return provider.Response{}, &provider.Error{Class: provider.ClassNetwork, Provider: "fake",
			Message: "connection closed before the response ended", Err: errors.New("unexpected EOF")}
	}
	return provider.Response{
		Model:        c.model,
		Content:      res.text,
		ToolCalls:    res.calls,
		FinishReason: res.finish,
		Usage: provider.Usage{
			InputTokens:      int64(res.usage.prompt),
			OutputTokens:     int64(res.output),
			CacheReadTokens:  int64(res.usage.read),
			CacheWriteTokens: int64(res.usage.write()),
			CacheWrite1h:     int64(res.usage.write1h),
		},
	}, nil
}

// markInProcessBreakpoints places Anthropic breakpoints where a careful client would: at the
// end of the system prompt and of each of the last three messages.
func markInProcessBreakpoints(segs []segment, req provider.Request) {
	n := len(req.Tools)
	if req.System != "" {
		segs[n].breakpoint = true
		n++
	}
	ends := make([]int, 0, len(req.Messages))
	for _, msg := range req.Messages {
		n += len(messageSegments(msg))
		ends = append(ends, n-1)
	}
	for i := max(0, len(ends)-3); i < len(ends); i++ {
		segs[ends[i]].breakpoint = true
	}
}

func ctxError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &provider.Error{Class: provider.ClassTimeout, Provider: "fake", Message: "no answer before the deadline", Err: err}
	}
	return fmt.Errorf("fake: %w", err)
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// shortHash is a stable hex digest of s, n hex digits long (n <= 32).
func shortHash(s string, n int) string {
	h := fnv.New128a()
	h.Write([]byte(s))
	return hex.EncodeToString(h.Sum(nil))[:n]
}

// ManualClock is a settable clock for Config.Now, so tests and benchmarks can expire caches
// without waiting.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewManualClock starts a clock at t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{now: t} }

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
