// Package fake is a deterministic scripted model. It implements provider.Client in process
// (Name "fake": spool's offline model) and serves the real HTTP wire formats of OpenAI Chat
// Completions, the OpenAI Responses API (stateless; every answer carries a reasoning item with
// deterministic encrypted_content, and a replayed reasoning item without it, or without its
// following item, gets the real 400) and Anthropic Messages (Model.Handler), streamed and not, with the bodies, usage
// fields, SSE framing and error bodies of the recordings in shared/fixtures/providers. Tests
// and benchmarks run real client code against it; cmd/fakellm serves it as a process.
//
// # Script
//
// The same input gives the same output. The model reads the last message:
//
//   - a user message with plain text: "Answer <hash8>: you said "<first 80 chars>"." where
//     hash8 is derived from the text;
//   - a user message with directive lines (other lines are ignored for the answer):
//     CALL <tool> <json-object>   call a tool (one line per call; several lines are parallel
//     calls). Only tools offered in the request may be called; otherwise the model says so
//     in text. Omitted arguments mean {}.
//     SAY <text>                  answer exactly <text> (lines joined with newlines).
//     REPEAT <n>                  the CALL lines again after their results, for n rounds in
//     all within the turn (a long agent turn), then the tool-results answer.
//     WAIT <name> <n>             hold this call's answer until n calls (this one included)
//     have arrived at barrier <name>, or the call's context ends; later arrivals pass at once.
//     It proves calls are in flight together without a clock (Model.AwaitBarrier, over HTTP
//     GET /fake/barrier?name=B&n=N, waits for the arrivals).
//     FAULT <kind> [arg] [xN]     fail this call (see Faults); with xN only the first N times
//     this exact prompt is sent, so a retry can succeed.
//     Directives act only while the last message is the user's: after tool results come back
//     the model answers "Tool results: <tool> returned "<first line>"; ...", naming each.
//   - a summary request (system prompt or last user message with "TURNS TO SUMMARIZE" or "NEW
//     TURNS TO INCORPORATE", or a system prompt holding the "## Goal" ... "## Critical Context"
//     template): the summarizer answers with the template's "## " headings in order (the ten of
//     DefaultSummarySections when the template names none). It parses the turns ("[USER]: ",
//     "[ASSISTANT]: " with "[Tool calls:" lines "name(args)", "[TOOL RESULT id]: "), keeps a
//     "PREVIOUS SUMMARY"'s items and appends what the new turns add, picked mechanically (tool
//     calls with their results, lines with constraint, error, decision or to-do words, paths,
//     identifiers). Every item is copied from the input; it never invents a fact. Empty sections
//     read "None.".
//
// Tool call ids are derived from the prompt, so they are stable across runs and distinct across
// turns. With max_tokens below the answer's size the text is cut and finish is "length".
//
// # Tokens
//
// The prompt is serialized canonically, in order tools, system, messages (each tool, system
// block, message text, tool call and tool result is one block). One token is 4 bytes of that
// serialization (CountTokens, PromptTokens): crude, but consistent and prefix-monotonic.
//
// # Prompt caching
//
// OpenAI (automatic): the cached part is the longest prefix shared with an earlier request
// under the same key (API key, model, prompt_cache_key), in whole 128-token blocks, and only
// from 1024 tokens on; entries expire after 5 minutes without use. Anthropic (explicit): each
// cache_control block (at most 4) ends a cacheable prefix; a request reads the longest cached
// prefix ending on a block boundary within 20 blocks before a breakpoint, writes the breakpoint
// prefixes beyond it (cache_creation_input_tokens, split 5m / 1h by the ttl asked), and the
// rest is input_tokens; prefixes under 1024 tokens are not cached; the TTL (5 minutes) restarts
// on every hit. The in-process client uses the OpenAI rule by default (Config.InProcessCache).
// The clock is Config.Now, so expiry is testable without waiting; Stats and WireStats total
// prompt, cached and written tokens for benchmarks.
//
// # Faults
//
// Kinds (FaultKind) and what each wire sends: auth 401; quota OpenAI 429 insufficient_quota,
// Anthropic 400 "credit balance is too low"; rate_limit 429 with Retry-After: 1; overloaded
// Anthropic 529, OpenAI 503; context_length 400 (also raised by itself when the prompt exceeds
// Config.ContextWindow); bad_request 400; server 500; cut: the response starts, then the
// connection drops mid-body or mid-stream; slow <duration>: the answer comes after the delay.
// Inject them per request with a FAULT directive, or for the next N calls with FailNext (over
// HTTP: POST /fake/fail?fault=rate_limit&n=2). In process, a fault is the *provider.Error a
// correct adapter would return (a cut is ClassNetwork, a slow call past its context deadline
// ClassTimeout).
//
// The fake also refuses what the real APIs refuse and clients get wrong: a tool result that
// answers no call of the previous message, a tool call left without a result, more than four
// cache_control blocks, and (Anthropic) a request without anthropic-version or max_tokens.
package fake
