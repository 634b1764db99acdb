// Package openai is the provider.Client for OpenAI Chat Completions and every server that speaks
// it (OpenRouter, Ollama, vLLM, llama.cpp). The system prompt goes first as a system message,
// tool results as role "tool" with their tool_call_id; streams ask for
// stream_options.include_usage so cached and reasoning token counts arrive at the end. Reasoning
// text is read from reasoning_content or reasoning, whichever the server sends. The official SDK
// (openai-go/v3) builds and sends the request; responses, SSE and errors are read here, because
// the SDK drops a final SSE event without a trailing blank line and loses the status of error
// bodies without an "error" key. Equal Requests produce byte-identical bodies.
package openai
