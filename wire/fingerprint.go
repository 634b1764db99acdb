package wire

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"strings"
	"time"

	"github.com/spoolhq/spool/provider"
)

// Fingerprint is the per-layer sha256 (lowercase hex) of one request, in the order a provider's
// prompt cache sees the layers: model, tools, system, messages.
type Fingerprint struct {
	Model  string `json:"model"`
	Tools  string `json:"tools"`
	System string `json:"system"`
	// Tiers hashes each system tier when they were known (a fresh build); a restored prompt is
	// one opaque text and has none. System alone decides whether the system layer changed.
	Tiers    []string `json:"tiers,omitempty"`
	Messages []string `json:"messages"`
}

// FingerprintOf hashes req layer by layer. tiers are the system prompt's tiers when known; they
// are ignored unless they join ("\n\n") to exactly req.System.
func FingerprintOf(req provider.Request, tiers []string) Fingerprint {
	h := &hasher{h: sha256.New()}
	fp := Fingerprint{Messages: make([]string, len(req.Messages))}
	h.field(req.Model)
	fp.Model = h.sum()
	h.field(req.System)
	fp.System = h.sum()
	for _, t := range req.Tools {
		h.field(t.Name)
		h.field(t.Description)
		h.field(string(t.Parameters))
	}
	fp.Tools = h.sum()
	if len(tiers) > 0 && strings.Join(tiers, "\n\n") == req.System {
		fp.Tiers = make([]string, len(tiers))
		for i, t := range tiers {
			h.field(t)
			fp.Tiers[i] = h.sum()
		}
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		h.field(m.Role)
		h.field(m.Content)
		h.field(m.ToolCallID)
		h.field(m.ToolName)
		h.field(m.Reasoning)
		h.field(string(m.ReasoningDetails))
		h.count(len(m.ToolCalls))
		for _, tc := range m.ToolCalls {
			h.field(tc.ID)
			h.field(tc.Type)
			h.field(tc.Function.Name)
			h.field(tc.Function.Arguments)
		}
		fp.Messages[i] = h.sum()
	}
	return fp
}

// hasher writes length-prefixed fields, so adjacent fields can never run into each other, and
// reuses its buffers across layers.
type hasher struct {
	h   hash.Hash
	buf []byte
	num [8]byte
	out [sha256.Size]byte
}

func (h *hasher) field(s string) {
	h.count(len(s))
	h.buf = append(h.buf[:0], s...)
	h.h.Write(h.buf)
}

func (h *hasher) count(n int) {
	binary.BigEndian.PutUint64(h.num[:], uint64(n))
	h.h.Write(h.num[:])
}

// sum returns the hex digest of everything written since the last sum.
func (h *hasher) sum() string {
	d := h.h.Sum(h.out[:0])
	h.h.Reset()
	return hex.EncodeToString(d)
}

// Layer names a part of a request.
type Layer string

// Layers, in cache order.
const (
	LayerNone    Layer = ""
	LayerModel   Layer = "model"
	LayerTools   Layer = "tools"
	LayerSystem  Layer = "system"
	LayerMessage Layer = "message"
)

// Reason says why a cache break happened.
type Reason string

// Reasons, from the most to the least specific.
const (
	ReasonNone       Reason = ""
	ReasonCompaction Reason = "compaction" // history (and maybe the prompt) replaced by a compaction
	ReasonModel      Reason = "model"      // a different model has its own cache
	// ReasonFallback: the agent moved to a fallback model after a failure, or back to the main
	// model after the cooldown. Explain never picks it; the agent, which knows why, sets it.
	ReasonFallback Reason = "fallback"
	ReasonTools    Reason = "tools"   // the tool set or a schema changed
	ReasonTTL      Reason = "ttl"     // the cache entry expired between requests
	ReasonResume   Reason = "resume"  // the session was resumed (bytes changed across it, or a new cache)
	ReasonEdit     Reason = "edit"    // earlier bytes were rewritten outside a compaction
	ReasonUnknown  Reason = "unknown" // nothing changed that we can see: provider eviction
)

// Break locates the first change between two requests. Tier and Index are -1 when they do not
// apply (or, for Tier, are unknown).
type Break struct {
	Layer  Layer  `json:"layer,omitempty"`
	Tier   int    `json:"tier"`
	Index  int    `json:"index"`
	Reason Reason `json:"reason,omitempty"`
}

// Changed reports whether any layer's bytes changed.
func (b Break) Changed() bool { return b.Layer != LayerNone }

// String reads like "message 14 (edit)" or "system tier 2 (compaction)".
func (b Break) String() string {
	var s string
	switch b.Layer {
	case LayerNone:
		s = "no change"
	case LayerSystem:
		s = "system"
		if b.Tier >= 0 {
			s = fmt.Sprintf("system tier %d", b.Tier)
		}
	case LayerMessage:
		s = fmt.Sprintf("message %d", b.Index)
	default:
		s = string(b.Layer)
	}
	if b.Reason != ReasonNone {
		s += " (" + string(b.Reason) + ")"
	}
	return s
}

// Diff returns the first layer of cur whose bytes differ from prev. A request that only appends
// messages to prev (or drops some from its end) is no change: its shared prefix is identical.
func Diff(prev, cur Fingerprint) Break {
	b := Break{Tier: -1, Index: -1}
	switch {
	case prev.Model != cur.Model:
		b.Layer = LayerModel
	case prev.Tools != cur.Tools:
		b.Layer = LayerTools
	case prev.System != cur.System:
		b.Layer = LayerSystem
		if len(prev.Tiers) > 0 && len(prev.Tiers) == len(cur.Tiers) {
			for i := range cur.Tiers {
				if prev.Tiers[i] != cur.Tiers[i] {
					b.Tier = i
					break
				}
			}
		}
	default:
		for i := range min(len(prev.Messages), len(cur.Messages)) {
			if prev.Messages[i] != cur.Messages[i] {
				b.Layer, b.Index = LayerMessage, i
				break
			}
		}
	}
	return b
}

// Hints is what the caller knows happened between two requests.
type Hints struct {
	Compacted bool          // a compaction ran in between
	Resumed   bool          // the session was resumed (new process or restored state)
	Elapsed   time.Duration // time between the two requests
	TTL       time.Duration // the provider's cache lifetime; zero when unknown
}

// Explain diffs prev and cur and picks the reason: a compaction that changed the prompt or the
// history, then a model or tool change, then an expired TTL, then a resume, then an edit. With
// no changed bytes and no expiry or resume the reason is unknown (the provider evicted).
func Explain(prev, cur Fingerprint, h Hints) Break {
	b := Diff(prev, cur)
	ttl := h.TTL > 0 && h.Elapsed > h.TTL
	switch {
	case h.Compacted && (b.Layer == LayerSystem || b.Layer == LayerMessage):
		b.Reason = ReasonCompaction
	case b.Layer == LayerModel:
		b.Reason = ReasonModel
	case b.Layer == LayerTools:
		b.Reason = ReasonTools
	case ttl:
		b.Reason = ReasonTTL
	case h.Resumed:
		b.Reason = ReasonResume
	case b.Changed():
		b.Reason = ReasonEdit
	default:
		b.Reason = ReasonUnknown
	}
	return b
}
