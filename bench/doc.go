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
// RunRetention is the compaction retention benchmark of issue 3: a generated, seeded 400-turn
// coding session with planted facts goes through the real compress.Compressor and
// store.ArchiveAndCompact on a scratch SQLite file, once with provider/fake's summarizer and once
// with the deterministic fallback, and every fact and user ask is scored as present in the active
// context, recoverable with one store Search, or lost. Compactions fire when the estimate reaches
// the resolved trigger (the preflight gate's cooldowns and anti-thrash are not in the loop, so the
// fallback mode keeps compacting); overhead is Compress's time minus the summarizer's.
package bench
