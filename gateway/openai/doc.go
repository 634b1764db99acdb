// Package openai is spool's OpenAI-compatible HTTP surface: POST /v1/chat/completions
// (streamed and not), the Responses API (POST /v1/responses, GET and DELETE
// /v1/responses/{id}, /cancel, /input_items, /v1/responses/compact), conversations
// (/v1/conversations and their items, backed by sessions), GET /v1/models, /health, /ready and /metrics,
// with OpenAI's JSON error shape ({"error":{"message","type","param","code"}}) on every failure. Session logic is asked
// of package gateway; this package only decodes requests and encodes answers.
//
// The wire contract is the one the official SDKs parse (openai-python, openai-node,
// openai-go): chat chunks are bare `data:` frames (no `event:` line) ending with `data: [DONE]`;
// with stream_options.include_usage the last chunk before it has `choices: []` and the usage,
// cached and reasoning token details included; `: keepalive` comments fill long silences; an
// error after the stream began is a `data:` frame holding an `error` object. A turn never waits
// for its stream's client: events are queued, and what a stream holds for a client that has not
// read it is bounded (Options.StreamBuffer): past it the stream is cut (the connection closes,
// one warning is logged without content) and the turn goes on and is stored.
//
// Headers: Authorization: Bearer <key> (when keys are configured); X-Spool-Session-Id and
// X-Spool-Session-Key choose the session (gateway), X-Spool-Busy the busy policy; every answer
// to a turn carries X-Spool-Session-Id (and X-Spool-Branched-From when a divergent history
// became a branch). A busy session is 409 with Retry-After and retry-after-ms, which the SDKs
// retry on their own; errors no retry can fix carry x-should-retry: false. Idempotency-Key
// replays the stored outcome of the same request (same key, method, path, session headers and
// body); another body is 409 idempotency_key_conflict.
//
// Responses: a response id names a position in a session (gateway.ResponseRecord);
// previous_response_id continues that session when it is the session's latest response and
// branches at it otherwise; conversation names a session; without either a new session starts.
// Input items are messages (text parts); the stream is the Responses grammar of `event:
// response.*` frames with an increasing sequence_number (created, in_progress,
// output_item.added, content_part.added, output_text.delta*, output_text.done,
// content_part.done, output_item.done, completed; response.failed on an error).
//
// A client that disconnects mid-stream stops receiving; the turn finishes and is stored.
// Writes have a deadline (a client that stops reading cannot hold a turn), and each open
// stream holds only its current chunk.
package openai
