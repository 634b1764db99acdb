// Package provider states how spool talks to a model: the Client interface (one chat call,
// streamed or not), the provider-neutral request and response shapes, usage with cached,
// cache-write and reasoning tokens, errors classified so callers can decide to retry, abort or
// fall back, and a small pricing table. Adapters live in sub-packages (openai, anthropic) and the
// deterministic scripted model in fake. Session logic never lives here.
package provider
