// Package openai is the provider.Client for OpenAI Chat Completions and every server that speaks
// it (OpenRouter, Ollama, vLLM, llama.cpp). The system prompt goes first as a system message,
// tool results as role "tool" with their tool_call_id; streams ask for
// stream_options.include_usage so cached and reasoning token counts arrive at the end. Reasoning
// text is read from reasoning_content or reasoning, whichever the server sends. Equal Requests
// produce byte-identical bodies.
//
// The official SDK (openai-go/v3) builds and sends the request; responses, SSE and errors are
// read here, because the SDK's stream decoder silently drops a final SSE event that lacks a
// trailing blank line (the recorded Ollama tool-call chunk yields nothing, and no error) and its
// errors carry no message for bodies without an "error" key (vLLM, proxies).
//
// With Config.API "responses" the same Client speaks the Responses API (POST /responses)
// instead: the system prompt is "instructions", history becomes input items (messages,
// function_call and function_call_output items), tools are function tools in the given order,
// and every request is stateless (store false) and asks for reasoning.encrypted_content. The
// output items of a turn that reasoned (reasoning, message, function_call, each compacted) are
// returned in Response.ReasoningDetails, so they are stored with the assistant message; on later
// requests the reasoning items go back byte for byte, each before the item it belongs to. A
// stream is complete only at response.completed or response.incomplete; response.failed and
// error events are classified by their code and message.
package openai
