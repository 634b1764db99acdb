// Package anthropic is the provider.Client for the Anthropic Messages API. It places
// ephemeral cache_control breakpoints on the system prompt and on the last block of the last
// three messages (four in all, the API's limit), each with Config.CacheTTL (five minutes, or one
// hour for sessions with long pauses; one-hour writes are reported as Usage.CacheWrite1h), merges consecutive tool results into one user
// message, turns assistant tool calls into tool_use blocks and replays thinking blocks, with
// their signatures, from Message.ReasoningDetails. Usage sums input, cache-read and cache-write
// tokens into InputTokens. The official SDK builds and sends the request; responses, SSE and
// errors are read here (see package openai for why). Credentials come only from Config.
package anthropic
