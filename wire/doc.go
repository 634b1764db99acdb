// Package wire turns a session's canonical history into the messages of a provider request,
// keeping every earlier message's bytes exactly as they were first sent.
//
// User and assistant messages with an api_content sidecar are sent as that sidecar. Per-turn
// context (memory recall, plugin context) goes into the current user message only, fenced in
// <memory-context> … </memory-context>, and the composed text is handed back so the caller
// persists it as that message's sidecar; later requests then replay the same bytes. Store-private
// fields (ids, flags, counts, timestamps) have no place in provider.Message and never leave the
// process. The history passed in is never modified. Rewriting a message's content drops its
// sidecar (Rewrite): one cache miss, never stale text.
//
// Fingerprint and Diff are the pure half of cache-break forensics: per-layer hashes of a request
// (model, tools, each system tier, each message) and the first layer whose bytes changed between
// two requests, with a reason chosen from what the caller knows (Explain).
package wire
