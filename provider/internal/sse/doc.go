// Package sse reads a text/event-stream body into events. Unlike the SDK decoders it
// dispatches a final event that the server ended without a blank line (Ollama, several
// recorded streams), keeps lines of any length, and reports a read failure as an error
// rather than as a clean end, so callers can tell a cut stream from a finished one.
package sse
