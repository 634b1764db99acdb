// Package agent runs one turn of a conversation: lease → reload the active history → restore (or
// build once) the frozen system prompt → preflight compaction → model call, streamed → tool calls,
// several per response, results appended in call order → loop until a final answer (bounded) →
// persist incrementally under the lease fence → record usage, cost and cache forensics for every
// model call → release.
//
// The one rule (within a stretch of stable history every request starts with the bytes the
// previous one sent) is kept by construction: the system prompt is restored byte for byte
// from the store and rebuilt only after a compaction; the user message's wire text (with per-turn
// context) is composed once and persisted as its api_content sidecar before the first model
// call, so every later request replays the same bytes; tool definitions come from the registry in
// its stable order.
//
// A provider that refuses the prompt as too long (ClassContextLength) sends the turn back through
// the preflight gate with the overflow flag: it compacts and the call is tried again, at most
// compression.max_compression_attempts times per turn. Compact runs a manual compaction (/compress)
// under the lease without a model call. A user message larger than half the model's window is
// refused before anything is stored (InputTooLargeError). Registry adapts a tools.Registry.
//
// Fallback models (Deps.Fallbacks, fallback.go): a call that fails with a class that will not
// clear by retrying (provider.Class.Fallback; never auth) moves the turn to the next model. Its
// request is built again from the history through preflight for its own window, so a smaller
// window compacts first; the request record names the fallback, the cache break the switch
// causes has reason "fallback" and names both models. New turns pass over a model that failed
// for Config.FallbackCooldown (on the agent's clock), then try it again.
//
// An interrupted turn (its context cancelled) keeps what was said: the user message is persisted
// before the model is called, streamed text that arrived becomes an assistant message marked
// "interrupted", and every tool call left without a result gets a recorded cancellation result,
// so the history stays acceptable to every provider. Nothing is half-written: each flush is one
// fenced batch.
//
// Delegation (Config.Delegation, off when MaxDepth is 0): the agent offers a "delegate" tool
// (goal, optional context, optional tool subset, optional session_id of an earlier delegation
// to continue). Each delegation runs a sub-agent in a child session (parent = the caller,
// relation delegate, source subagent) with its own frozen prompt (the "subagent" platform
// hint), compaction, usage records and turn lease, on the caller's context: an interrupt stops
// the child, which keeps its transcript. The child's tools are the caller's (the same approver
// and secrets, so no more rights) or the named subset; it gets delegate itself only below
// MaxDepth. Consecutive delegate calls of one response run at once, at most MaxParallel
// together; the results (DelegateResult JSON: session_id, status, answer cut to
// MaxDelegateAnswer, error, counts) are stored in call order. The child ends with
// delegate_done, delegate_failed or delegate_cancelled.
//
// Cache forensics: every model call is fingerprinted (wire.FingerprintOf). When a call reads
// fewer cached tokens than the session's previous call, the request is diffed against the
// previous one's fingerprint, kept in memory per session. After a restart there is no fingerprint
// in memory; the previous request is then derived from the store — the restored system prompt,
// the current tools and the active history up to the last assistant message before this turn
// (the last request a previous process sent, when the history only grew since) — and the break
// is explained with the resume hint. A derived fingerprint cannot see a tool or model change
// made across the restart; those breaks are reported as "resume".
package agent
