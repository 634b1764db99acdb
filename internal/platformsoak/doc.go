// Package platformsoak is the chat-platform soak: the real Telegram, Slack and Discord adapters
// against the local fakes of their APIs (internal/platformfake), a real router on a scratch
// SQLite file and the offline model, with injected faults, duplicate deliveries, messages into
// running turns and gateway restarts. Run measures it and checks the verdicts: no message lost,
// no send or turn duplicated, no turns interleaved, no idempotency keys mixed up. A missed target
// is returned as bench.ErrVerify beside the report.
//
// It lives apart from internal/bench so that the spool binary, which links the benchmarks behind
// `spool bench`, does not link the platform fakes; the command internal/cmd/spool-soak runs it.
package platformsoak
