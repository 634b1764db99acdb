package fake

import (
	"fmt"
	"testing"
	"time"
)

func TestOpenAIPrefixCacheGrowsByBlocks(t *testing.T) {
	t.Parallel()
	clock := NewManualClock(epoch)
	m, srv := newServer(t, Config{Now: clock.Now})
	url := srv.URL + "/v1/chat/completions"
	send := func(headers map[string]string, msgs []map[string]any) (prompt, cached int, answer string) {
		t.Helper()
		a := oaDecode(t, post(t, nil, url, headers, oaBody(msgs, nil)))
		return a.Usage.PromptTokens, a.Usage.PromptTokensDetails.CachedTokens, *a.Choices[0].Message.Content
	}
	msgs := []map[string]any{{"role": "system", "content": "You are helpful. " + padding(1100)}}
	prevPrompt, prevCached := 0, 0
	for turn := range 8 {
		msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("Question %d. %s", turn, padding(150))})
		prompt, cached, answer := send(openAIHeaders, msgs)
		msgs = append(msgs, map[string]any{"role": "assistant", "content": answer})
		if turn == 0 {
			if cached != 0 || prompt < 1024 {
				t.Fatalf("first request: prompt %d cached %d", prompt, cached)
			}
		} else {
			// The previous prompt is a prefix of this one: all its whole blocks are cached.
			if cached%128 != 0 || cached < prevPrompt-128 || cached > prevPrompt || cached <= prevCached {
				t.Errorf("turn %d: cached %d after a previous prompt of %d (previous cached %d)", turn, cached, prevPrompt, prevCached)
			}
		}
		prevPrompt, prevCached = prompt, cached
		clock.Advance(time.Minute)
	}

	// The same conversation sent again is cached up to its last whole block.
	prompt, cached, _ := send(openAIHeaders, msgs[:len(msgs)-1])
	if cached != prompt/128*128 && cached != (prompt-1)/128*128 {
		t.Errorf("resend: prompt %d cached %d", prompt, cached)
	}
	// Another API key shares nothing.
	if _, cached, _ := send(map[string]string{"Authorization": "Bearer sk-other-key-99"}, msgs[:len(msgs)-1]); cached != 0 {
		t.Errorf("other key: cached %d", cached)
	}
	// One changed byte at the start of the system prompt drops the whole cache.
	changed := append([]map[string]any{{"role": "system", "content": "you are helpful. " + padding(1100)}}, msgs[1:len(msgs)-1]...)
	if _, cached, _ := send(openAIHeaders, changed); cached != 0 {
		t.Errorf("changed first byte: cached %d", cached)
	}
	// A change in the middle keeps the blocks before it.
	mid := append([]map[string]any{}, msgs[:len(msgs)-1]...)
	mid[5] = map[string]any{"role": "user", "content": "edited"}
	if p, cached, _ := send(openAIHeaders, mid); cached < 1024 || cached >= p-128 {
		t.Errorf("changed middle: prompt %d cached %d", p, cached)
	}
	s := m.WireStats("openai")
	if s.CachedTokens == 0 || s.CachedTokens >= s.PromptTokens || s.CacheHitRate() <= 0.5 {
		t.Errorf("stats %+v hit rate %.2f", s, s.CacheHitRate())
	}
}

func TestOpenAICacheMinimumAndTTL(t *testing.T) {
	t.Parallel()
	clock := NewManualClock(epoch)
	_, srv := newServer(t, Config{Now: clock.Now, OpenAICacheTTL: 5 * time.Minute})
	url := srv.URL + "/v1/chat/completions"
	cachedOf := func(content string) int {
		t.Helper()
		a := oaDecode(t, post(t, nil, url, openAIHeaders, oaBody([]map[string]any{{"role": "user", "content": content}}, nil)))
		return a.Usage.PromptTokensDetails.CachedTokens
	}
	small := "short prompt " + padding(900)
	cachedOf(small)
	if c := cachedOf(small); c != 0 {
		t.Errorf("prompt under 1024 tokens cached %d", c)
	}
	long := "long prompt " + padding(1500)
	steps := []struct {
		advance time.Duration
		hit     bool
	}{
		{0, false},                           // first send writes
		{4 * time.Minute, true},              // within the TTL
		{4 * time.Minute, true},              // 8 minutes after the write, but 4 after the last hit: sliding
		{5*time.Minute + time.Second, false}, // idle past the TTL
		{time.Second, true},                  // rewritten by the miss
	}
	for i, s := range steps {
		clock.Advance(s.advance)
		if c := cachedOf(long); (c > 0) != s.hit || (s.hit && c < 1024) {
			t.Errorf("step %d (+%s): cached %d, want hit=%v", i, s.advance, c, s.hit)
		}
	}
}

// anUse sends an Anthropic request and returns its usage.
func anUse(t *testing.T, url string, body map[string]any) anTestResponse {
	t.Helper()
	return anDecode(t, post(t, nil, url, anthropicHeaders, body))
}

func cached(text string) []map[string]any {
	return []map[string]any{{"type": "text", "text": text, "cache_control": map[string]any{"type": "ephemeral"}}}
}

func TestAnthropicBreakpointsWriteThenRead(t *testing.T) {
	t.Parallel()
	clock := NewManualClock(epoch)
	m, srv := newServer(t, Config{Now: clock.Now})
	url := srv.URL + "/v1/messages"
	system := cached("You are helpful. " + padding(1200))

	// Breakpoint on the system prompt only.
	body := anBody([]map[string]any{{"role": "user", "content": "Hello"}}, map[string]any{"system": system})
	first := anUse(t, url, body)
	u := first.Usage
	if u.CacheReadInputTokens != 0 || u.CacheCreationInputTokens < 1200 || u.CacheCreation.Ephemeral5m != u.CacheCreationInputTokens || u.InputTokens == 0 || u.InputTokens > 20 {
		t.Fatalf("first: %+v", u)
	}
	second := anUse(t, url, body)
	if v := second.Usage; v.CacheReadInputTokens != u.CacheCreationInputTokens || v.CacheCreationInputTokens != 0 || v.InputTokens != u.InputTokens {
		t.Errorf("second: %+v after %+v", v, u)
	}

	// A growing conversation with a breakpoint on its last block: each request reads what the
	// previous one wrote and writes only the new turns.
	msgs := []map[string]any{}
	prevEnd := 0
	for turn := range 6 {
		msgs = append(msgs, map[string]any{"role": "user", "content": cached(fmt.Sprintf("Turn %d: %s", turn, padding(100)))})
		r := anUse(t, url, anBody(msgs, map[string]any{"system": system}))
		v := r.Usage
		if turn > 0 && v.CacheReadInputTokens != prevEnd {
			t.Errorf("turn %d: read %d, want the previous breakpoint prefix %d", turn, v.CacheReadInputTokens, prevEnd)
		}
		if v.CacheCreationInputTokens == 0 || v.InputTokens > 5 {
			t.Errorf("turn %d: %+v", turn, v)
		}
		prevEnd = v.CacheReadInputTokens + v.CacheCreationInputTokens
		// The next request carries the answer without cache_control, then a new user block.
		msgs[len(msgs)-1]["content"] = []map[string]any{{"type": "text", "text": fmt.Sprintf("Turn %d: %s", turn, padding(100))}}
		msgs = append(msgs, map[string]any{"role": "assistant", "content": r.Content[0].Text})
	}

	// One changed byte early: nothing is read, everything up to the last breakpoint is written.
	early := anBody(msgs[:1], map[string]any{"system": cached("you are helpful. " + padding(1200))})
	if v := anUse(t, url, early).Usage; v.CacheReadInputTokens != 0 || v.CacheCreationInputTokens == 0 {
		t.Errorf("changed first byte: %+v", v)
	}
	if s := m.WireStats("anthropic"); s.CachedTokens == 0 || s.CacheWriteTokens == 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestAnthropicCacheTTLAndLimits(t *testing.T) {
	t.Parallel()
	clock := NewManualClock(epoch)
	_, srv := newServer(t, Config{Now: clock.Now})
	url := srv.URL + "/v1/messages"
	body := anBody([]map[string]any{{"role": "user", "content": "Hello"}}, map[string]any{"system": cached("Five minutes. " + padding(1200))})
	steps := []struct {
		advance time.Duration
		read    bool
	}{
		{0, false},
		{4 * time.Minute, true},
		{4 * time.Minute, true}, // refreshed by the hit
		{5*time.Minute + time.Second, false},
		{time.Minute, true},
	}
	for i, s := range steps {
		clock.Advance(s.advance)
		v := anUse(t, url, body).Usage
		if (v.CacheReadInputTokens > 0) != s.read || (v.CacheCreationInputTokens > 0) == s.read {
			t.Errorf("step %d (+%s): %+v, want read=%v", i, s.advance, v, s.read)
		}
	}

	// A 1h breakpoint is written as such and outlives five minutes.
	hour := []map[string]any{{"type": "text", "text": "One hour. " + padding(1200), "cache_control": map[string]any{"type": "ephemeral", "ttl": "1h"}}}
	body = anBody([]map[string]any{{"role": "user", "content": "Hello"}}, map[string]any{"system": hour})
	if v := anUse(t, url, body).Usage; v.CacheCreation.Ephemeral1h == 0 || v.CacheCreation.Ephemeral5m != 0 {
		t.Errorf("1h write: %+v", v)
	}
	clock.Advance(30 * time.Minute)
	if v := anUse(t, url, body).Usage; v.CacheReadInputTokens == 0 {
		t.Errorf("1h entry gone after 30m: %+v", v)
	}

	// Under the minimum nothing is cached.
	body = anBody([]map[string]any{{"role": "user", "content": "Hello"}}, map[string]any{"system": cached("Tiny.")})
	for range 2 {
		if v := anUse(t, url, body).Usage; v.CacheReadInputTokens != 0 || v.CacheCreationInputTokens != 0 {
			t.Errorf("tiny prompt cached: %+v", v)
		}
	}

	// Without breakpoints Anthropic caches nothing, however long the prompt.
	body = anBody([]map[string]any{{"role": "user", "content": "Hello " + padding(2000)}}, nil)
	for range 2 {
		if v := anUse(t, url, body).Usage; v.CacheReadInputTokens != 0 || v.CacheCreationInputTokens != 0 {
			t.Errorf("no breakpoint, cached: %+v", v)
		}
	}
}

func TestAnthropicLookbackIsTwentyBlocks(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, Config{})
	url := srv.URL + "/v1/messages"
	blocks := func(tag string, n int, bpLast bool) []map[string]any {
		var bs []map[string]any
		for i := range n {
			b := map[string]any{"type": "text", "text": fmt.Sprintf("%s block %d %s", tag, i, padding(60))}
			if bpLast && i == n-1 {
				b["cache_control"] = map[string]any{"type": "ephemeral"}
			}
			bs = append(bs, b)
		}
		return bs
	}
	// Write a prefix of 20 blocks, then ask with 19 and with 21 new blocks after it.
	anUse(t, url, anBody([]map[string]any{{"role": "user", "content": blocks("base", 20, true)}}, nil))
	for _, tc := range []struct {
		more int
		hit  bool
	}{{19, true}, {21, false}} {
		grown := append(blocks("base", 20, false), blocks(fmt.Sprint("more", tc.more), tc.more, true)...)
		v := anUse(t, url, anBody([]map[string]any{{"role": "user", "content": grown}}, nil)).Usage
		if (v.CacheReadInputTokens > 0) != tc.hit {
			t.Errorf("%d blocks after the cached prefix: %+v, want hit=%v", tc.more, v, tc.hit)
		}
	}
}
