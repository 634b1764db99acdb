package fake

import (
	"fmt"
	"time"
)

// prefixCache holds prompt prefixes by hash with a sliding expiry: an entry lives ttl after its
// last write or hit.
type prefixCache struct {
	entries map[prefixKey]cacheEntry
	calls   int
}

type cacheEntry struct {
	last time.Time
	ttl  time.Duration
}

func newPrefixCache() *prefixCache { return &prefixCache{entries: map[prefixKey]cacheEntry{}} }

func (c *prefixCache) hit(k prefixKey, now time.Time) bool {
	e, ok := c.entries[k]
	if !ok {
		return false
	}
	if now.Sub(e.last) > e.ttl {
		delete(c.entries, k)
		return false
	}
	e.last = now
	c.entries[k] = e
	return true
}

func (c *prefixCache) put(k prefixKey, now time.Time, ttl time.Duration) {
	if e, ok := c.entries[k]; ok && e.ttl > ttl && now.Sub(e.last) <= e.ttl {
		ttl = e.ttl
	}
	c.entries[k] = cacheEntry{last: now, ttl: ttl}
}

// sweep drops expired entries now and then, so a long benchmark does not keep every prefix.
func (c *prefixCache) sweep(now time.Time) {
	c.calls++
	if c.calls%256 != 0 {
		return
	}
	for k, e := range c.entries {
		if now.Sub(e.last) > e.ttl {
			delete(c.entries, k)
		}
	}
}

// promptUsage is the prompt side of one call's usage. prompt counts every prompt token;
// read and write are the parts served from and written to the cache.
type promptUsage struct {
	prompt  int
	read    int
	write5m int
	write1h int
}

func (u promptUsage) write() int { return u.write5m + u.write1h }

// openAIAccount applies OpenAI's automatic prefix caching: the prompt is cut in blocks of
// blockTokens; a request reads the longest run of leading blocks that an earlier request under
// the same key already sent, counted only from minTokens on, and every block boundary it sends
// becomes an entry.
func openAIAccount(c *prefixCache, key string, segs []segment, now time.Time, cfg cacheConfig) promptUsage {
	defer c.sweep(now)
	full := joinSegments(segs)
	u := promptUsage{prompt: CountTokens(full)}
	if u.prompt < cfg.minTokens {
		return u
	}
	blockBytes := cfg.blockTokens * BytesPerToken
	h := newPrefixHasher(key)
	var keys []prefixKey // keys[i] stands for the first (i+1) blocks
	for off := blockBytes; off <= len(full); off += blockBytes {
		h.write(full[off-blockBytes : off])
		keys = append(keys, h.key())
	}
	for i := len(keys) - 1; i >= 0; i-- {
		n := (i + 1) * cfg.blockTokens
		if n < cfg.minTokens {
			break
		}
		if c.hit(keys[i], now) {
			u.read = n
			break
		}
	}
	for i, k := range keys {
		if (i+1)*cfg.blockTokens >= cfg.minTokens {
			c.put(k, now, cfg.ttl)
		}
	}
	return u
}

// openAIPut caches every block prefix of segs of at least minTokens, without reading.
func openAIPut(c *prefixCache, key string, segs []segment, now time.Time, cfg cacheConfig) {
	full := joinSegments(segs)
	blockBytes := cfg.blockTokens * BytesPerToken
	h := newPrefixHasher(key)
	for off := blockBytes; off <= len(full); off += blockBytes {
		h.write(full[off-blockBytes : off])
		if off/BytesPerToken >= cfg.minTokens {
			c.put(h.key(), now, cfg.ttl)
		}
	}
}

// maxBreakpoints and lookbackBlocks are Anthropic's documented limits: four cache_control
// blocks per request, and a hit is searched about twenty blocks back from each breakpoint.
const (
	maxBreakpoints = 4
	lookbackBlocks = 20
)

// anthropicAccount applies Anthropic's explicit caching: each cache_control block ends a
// cacheable prefix. The request reads the longest prefix, ending on a block boundary within the
// lookback of a breakpoint, that is cached; it writes the breakpoint prefixes beyond that; the
// rest is plain input. Prefixes shorter than minTokens are neither read nor written.
func anthropicAccount(c *prefixCache, key string, segs []segment, now time.Time, cfg cacheConfig) (promptUsage, error) {
	defer c.sweep(now)
	var bps []int
	for i, s := range segs {
		if s.breakpoint {
			bps = append(bps, i)
		}
	}
	if len(bps) > maxBreakpoints {
		return promptUsage{}, fmt.Errorf("A maximum of %d blocks with cache_control may be provided. Found %d.", maxBreakpoints, len(bps))
	}
	h := newPrefixHasher(key)
	keys := make([]prefixKey, len(segs))
	ends := make([]int, len(segs)) // tokens in the prefix ending with segment i
	for i, s := range segs {
		h.write(s.text)
		keys[i] = h.key()
		ends[i] = prefixTokens(h.pos)
	}
	u := promptUsage{prompt: (h.pos + BytesPerToken - 1) / BytesPerToken}
	readEnd := -1
	for bi := len(bps) - 1; bi >= 0; bi-- {
		b := bps[bi]
		for j := b; j >= 0 && j > b-lookbackBlocks; j-- {
			if j <= readEnd || ends[j] < cfg.minTokens {
				break
			}
			if c.hit(keys[j], now) {
				readEnd = j
				break
			}
		}
	}
	prev := 0
	if readEnd >= 0 {
		u.read = ends[readEnd]
		prev = u.read
	}
	for _, b := range bps {
		if ends[b] < cfg.minTokens {
			continue
		}
		ttl := cfg.ttl
		if segs[b].ttl1h {
			ttl = time.Hour
		}
		c.put(keys[b], now, ttl)
		if b <= readEnd {
			continue
		}
		if segs[b].ttl1h {
			u.write1h += ends[b] - prev
		} else {
			u.write5m += ends[b] - prev
		}
		prev = ends[b]
	}
	return u, nil
}

type cacheConfig struct {
	ttl         time.Duration
	minTokens   int
	blockTokens int
}
