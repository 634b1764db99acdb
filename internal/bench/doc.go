// Package bench runs the standard session-store workload (WORKLOAD.md v1, shared with the
// reference Python SessionDB) so spool's figures compare side by side with the peer's.
//
// The generator is deterministic: SplitMix64 streams over the embedded workload_vocab.json give
// byte-identical data to the peer's, proven by the messages_sha256, queries_sha256 and
// w5_messages_sha256 checksums in every report. Generation is never timed; each latency is the
// wall-clock time of one store call.
//
// RunStore runs W1 append, W2 resume, W3 search, W4 list and W5 contention against a fresh
// SQLite file in a scratch directory ($BENCH_TMPDIR, else the system temp dir) and prints one
// JSON object. BENCH_SEED, BENCH_SESSIONS, BENCH_MESSAGES, BENCH_QUERIES, BENCH_LIST_ITERS,
// BENCH_W5_PROCS and BENCH_W5_MSGS override the sizes and mark the run scaled_down.
//
// W5 uses real OS processes: RunStore starts StoreConfig.WorkerExe with StoreConfig.WorkerArgs
// once per worker (for the CLI: the spool binary with "bench", "store-worker"), and that command
// must call RunStoreWorker with its own stdin and stdout. The worker takes no flags: its
// parameters (WorkerParams) arrive as the first JSON line on stdin, it answers {"ready":true},
// waits for the line "go", appends its messages and writes one WorkerResult line.
//
// Replicas is the soak of two `spool serve` replicas on one PostgreSQL database:
// real processes, one fake model over HTTP that can hold one replica's calls so it is killed
// mid-turn, clients over HTTP, and verdicts that are counts (interleaved, lost, duplicated and
// foreign turns, stale writes accepted, the takeover against TTL + 1 s); its control adds an
// unfenced writer and must fail.
//
// IdleStreams (with Gateway's idle-streams figure) holds idle open streams against `spool serve`
// in a process of its own and reads that process's memory (VmRSS, Pss, the Go heap and stacks
// from its /metrics); its verdict is the memory at 10,000 streams against a limit (1 GiB), and a
// control padding each stream's message must fail it.
//
// RunRetention is the compaction retention benchmark: a generated, seeded 500-turn
// coding session with planted facts runs turn by turn through spool's agent (lease, preflight
// gate, compaction committed in place on a scratch SQLite file, the wire request) at windows of
// 4K, 8K, 32K, 128K and 1M tokens, against a scripted model that plays the generated turns and
// refuses what providers refuse (a prompt over the window, an orphan tool pair). Each window runs
// the default compressor with provider/fake's summarizer, with the deterministic fallback only,
// and two control engines wrapping the compressor the agent builds (agent.NewCompressor: tail only, blanked summary). Every
// fact is scored against the request the model is sent next: present (its text is in it),
// recoverable (the request holds a [mN] pointer, or N in a list [mA,B], or the fact's key, and one recall
// session_search for that alone returns a message holding the fact) or lost. The report gives
// per window and engine the shares, losses, user asks lost, orphan tool pairs, the active tokens
// after each compaction against the target, and the failed turns; a missed target (see
// retentionRules) makes it fail with ErrVerify. BENCH_RETENTION_DUMP=<dir> writes each run's
// scored request as text there, to see what a lost fact had left.
//
// RunCache is the prompt-cache benchmark: a scripted tool-heavy session through spool's agent
// and the real OpenAI and Anthropic adapters against provider/fake over HTTP, on a simulated
// clock the fake's cache expiry reads. Each call's cached tokens are compared with what an ideal
// agent could have had cached (idealCeiling): everything already sent in the same order, up to
// the first byte a compaction had to change, system prompt and tools included while their inputs
// did not change, nothing after a pause longer than the cache lifetime. Beside spool it runs a
// naive agent (the time in its prompt every turn) and a rebuild agent (its prompt rendered again
// at every compaction), which must score lower against the same ceiling.
//
// Scale grows one store (SQLite, or a PostgreSQL database) through sizes of 10^3 to 10^6
// messages over many sessions (the workload's W1 generator in chunks, written in batches) beside
// one long session compacted as it grows, and measures at each size append, resume of the long
// session (what the model sees), W3 search and list latencies, the database's size on disk and
// the process's resident memory. Its verdicts (scaleTargets) judge how each measure grows; a
// missed one fails it with ErrVerify, and its control (every search slowed past its limit) must.
package bench
