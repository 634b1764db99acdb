// Package compress decides when a session's history must shrink and computes how.
//
// It owns the compaction contract of spool: threshold resolution (Resolve, printable for
// `spool config explain`), the preflight gate run before every model call and the post-response
// check (Gate, with a serializable per-session State), the Engine interface, and the default
// Compressor: prune old tool output, split head / middle / tail without separating tool calls
// from their results, summarise the middle with an auxiliary model into a structured hand-off
// (re-compaction updates the previous summary; one far over its token budget is cut back to
// it, newest items kept), append a mechanically extracted working-set ledger, then assemble
// and sanitise a provider-acceptable history. Each compacted message is scanned once; the
// ledger, the fallback summary and pruning share what was read.
//
// Every size is derived from the window: Budgets gives a compaction its target (the request's
// fixed part plus Config.TargetFill of the room under the trigger) and the shares of that room
// for head, tail, summary and ledger. Compress runs in phases (splitHistory, summarizeMiddle,
// ladder): one summary call, then rungs (summary, shorter summary, fallback, smaller tail,
// pointer only) until one reaches the target while saving a quarter of what it replaces; the
// Plan says which (Rung, TargetTokens, ActiveTokens).
//
// compress never persists anything. Compress returns a Plan that the agent commits with
// store.ArchiveAndCompact (Plan.CompactRequest) or rotation; a failure that must leave the history
// untouched returns *AbortError and no plan. Per-session bookkeeping (cooldowns, anti-thrash
// counters, usage anchors) lives in State, which the caller owns and persists.
package compress
