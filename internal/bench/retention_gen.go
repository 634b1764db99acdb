package bench

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spoolhq/spool/store"
)

// Fact kinds planted in the retention session.
const (
	FactPath       = "path"
	FactSHA        = "sha"
	FactIssue      = "issue"
	FactError      = "error"
	FactDecision   = "decision"
	FactConstraint = "constraint"
	FactGoal       = "goal"
	FactValue      = "value"
)

// Where a fact is planted.
const (
	inUser      = "user"
	inAssistant = "assistant"
	inToolArgs  = "tool_args"
	inCommand   = "command"
	inOutput    = "tool_output"
)

// When a fact is planted.
const (
	PhaseStart         = "start"          // the first user message: goal and constraints, said once
	PhaseFirstExchange = "first_exchange" // the first assistant reply and the first tool output
	PhaseSpread        = "spread"         // at a fixed fraction of the session (the middle)
	PhasePreCompaction = "pre_compaction" // in the turn right before a compaction fires
)

// Fact is one planted fact. Text must be in the next request verbatim for the fact to count as
// present. Key is its identifier: the one thing a model can search for (a path, a SHA, an issue
// number, a config key, a distinctive word), always a substring of Text; the fact counts as
// recoverable only when the request holds Key (or a [mN] pointer to a message holding Text) and
// one session_search for Key (or that pointer) alone returns a message holding Text.
type Fact struct {
	Kind  string `json:"kind"`
	Text  string `json:"text"`
	Key   string `json:"key"`
	Turn  int    `json:"planted_turn"`
	Where string `json:"planted_in"`
	Phase string `json:"phase"`
	// at is the planting position of a spread fact as a fraction of the session, so
	// scaled-down runs plant every fact too.
	at float64
}

// UserAsk is the key sentence of one real user message; Key is the file it names (unique to
// the turn).
type UserAsk struct {
	Turn     int
	Sentence string
	Key      string
}

// retentionSession is the generated coding session: turns of messages, the facts planted in
// them, every user ask, and the pool of facts the run plants right before compactions (their
// turns depend on the window, so the run places them).
type retentionSession struct {
	turns [][]store.Message
	facts []Fact
	asks  []UserAsk
	pre   []Fact
	// constraints are the user's corrections and constraints, each sentence once (the turn it
	// was first said): the planted ones and the constraint fillers. The generator knows them;
	// the compressor has to classify them.
	constraints []Fact
}

var (
	retComponents = []string{"billing", "ledger", "refunds", "outbox", "webhook", "auth", "ratelimit", "reporting", "scheduler", "payouts", "currency", "audit"}
	retNouns      = []string{"builder", "poller", "handler", "store", "client", "worker", "codec", "router", "cache", "planner", "reader", "index"}
	retVerbs      = []string{
		"add a retry with jitter to", "write table-driven tests for", "remove the dead code in",
		"add structured logging to", "fix the off-by-one in", "document the invariants of",
		"split the long function in", "add metrics to", "tighten input validation in",
		"profile the hot path of", "rename the confusing fields in", "add a timeout to",
	}
	// retFillers close every fourth ask; the binding ones are constraints the user repeats.
	retFillers = []struct {
		text, key string
		binding   bool
	}{
		{"Make sure the tests pass.", "tests pass", true}, {"Let's keep the diff small.", "diff small", false},
		{"Do not reformat unrelated code.", "unrelated code", true}, {"Remember to update the changelog.", "changelog", false},
		{"We should avoid new dependencies.", "new dependencies", true}, {"Keep the commit focused.", "commit focused", true},
	}
	retFuncs = []string{"Build", "Apply", "Validate", "Encode", "Decode", "Flush", "Reconcile", "Schedule", "Lookup", "Merge"}
)

// plantedFacts are the facts of the benchmark with their phases, places and (spread facts)
// positions. SHAs and issue numbers are drawn from the seeded generator.
func plantedFacts(rng *Rng) []Fact {
	sha := func() string { return rng.hex(40) }
	issue := func() string { return fmt.Sprintf("#%d", 1000+rng.Intn(9000)) }
	start := func(kind, text, key string) Fact {
		return Fact{Kind: kind, Text: text, Key: key, Where: inUser, Phase: PhaseStart}
	}
	first := func(kind, text, key, where string) Fact {
		return Fact{Kind: kind, Text: text, Key: key, Where: where, Phase: PhaseFirstExchange}
	}
	spread := func(kind, text, key, where string, at float64) Fact {
		if key == "" {
			key = text
		}
		return Fact{Kind: kind, Text: text, Key: key, Where: where, Phase: PhaseSpread, at: at}
	}
	return []Fact{
		start(FactGoal, "Goal (LEDG-412): make the refund pipeline idempotent end to end, so a replayed webhook never pays twice.", "LEDG-412"),
		start(FactConstraint, "Never use sudo in any script or command.", "sudo"),
		start(FactConstraint, "Amounts are int64 cents everywhere, never float64.", "float64"),
		start(FactConstraint, "Do not change the exported API of package ledger.", "exported API"),

		first(FactValue, "db_port: 5433", "db_port", inOutput),
		first(FactDecision, "The webhook secret comes from LEDGERD_WEBHOOK_SECRET, never from the config file.", "LEDGERD_WEBHOOK_SECRET", inAssistant),

		spread(FactPath, "internal/billing/invoice.go", "", inToolArgs, 0.02),
		spread(FactPath, "internal/db/pool.go", "", inToolArgs, 0.10),
		spread(FactPath, "cmd/ledgerd/main.go", "", inUser, 0.15),
		spread(FactPath, "migrations/0042_add_refunds.sql", "", inOutput, 0.25),
		spread(FactPath, "internal/auth/jwt_verify.go", "", inOutput, 0.33),
		spread(FactPath, "deploy/helm/values-prod.yaml", "", inUser, 0.45),
		spread(FactPath, "pkg/ratelimit/bucket.go", "", inToolArgs, 0.55),
		spread(FactPath, "scripts/backfill_ledger.sh", "", inCommand, 0.65),
		spread(FactPath, "internal/webhook/stripe_handler.go", "", inAssistant, 0.78),
		spread(FactPath, "docs/adr/0007-use-pgx.md", "", inToolArgs, 0.90),

		spread(FactSHA, sha(), "", inOutput, 0.04),
		spread(FactSHA, sha(), "", inUser, 0.12),
		spread(FactSHA, sha(), "", inCommand, 0.30),
		spread(FactSHA, sha(), "", inAssistant, 0.42),
		spread(FactSHA, sha(), "", inOutput, 0.58),
		spread(FactSHA, sha(), "", inUser, 0.70),
		spread(FactSHA, sha(), "", inOutput, 0.83),
		spread(FactSHA, sha(), "", inAssistant, 0.95),

		spread(FactIssue, issue(), "", inUser, 0.03),
		spread(FactIssue, issue(), "", inOutput, 0.14),
		spread(FactIssue, issue(), "", inAssistant, 0.27),
		spread(FactIssue, issue(), "", inUser, 0.38),
		spread(FactIssue, issue(), "", inOutput, 0.52),
		spread(FactIssue, issue(), "", inUser, 0.67),
		spread(FactIssue, issue(), "", inAssistant, 0.81),
		spread(FactIssue, issue(), "", inUser, 0.93),

		spread(FactError, `pq: duplicate key value violates unique constraint "invoices_number_key"`, "invoices_number_key", inOutput, 0.06),
		spread(FactError, "panic: runtime error: invalid memory address or nil pointer dereference", "nil pointer dereference", inOutput, 0.20),
		spread(FactError, "dial tcp 10.0.3.17:5432: connect: connection refused", "10.0.3.17", inUser, 0.36),
		spread(FactError, `ERROR: relation "refund_events" does not exist (SQLSTATE 42P01)`, "refund_events", inOutput, 0.50),
		spread(FactError, "context deadline exceeded while waiting for the ledger lock", "ledger lock", inOutput, 0.72),
		spread(FactError, "x509: certificate signed by unknown authority", "x509", inOutput, 0.88),

		spread(FactDecision, "We decided to use pgx instead of lib/pq for the database layer.", "lib/pq", inUser, 0.08),
		spread(FactDecision, "Always run go test -race before committing.", "-race", inUser, 0.18),
		spread(FactDecision, "Migrations must stay backwards compatible: no column drops.", "column drops", inUser, 0.47),
		spread(FactDecision, "From now on, log with slog, never with logrus.", "logrus", inUser, 0.62),
		spread(FactDecision, "I decided to keep the outbox table append-only and mark rows delivered instead of deleting them.", "append-only", inAssistant, 0.22),
		spread(FactDecision, "I chose a 24-hour idempotency window for webhook event ids.", "idempotency window", inAssistant, 0.40),
		spread(FactDecision, "Going with one pg_advisory_xact_lock per merchant for refunds.", "pg_advisory_xact_lock", inAssistant, 0.60),
		spread(FactDecision, "Decided: a refund larger than its capture is rejected with ErrOverRefund.", "ErrOverRefund", inAssistant, 0.84),

		spread(FactValue, "max_open_conns: 37", "max_open_conns", inOutput, 0.16),
		spread(FactValue, "LEDGER_BATCH_SIZE=640", "LEDGER_BATCH_SIZE", inOutput, 0.35),
		spread(FactValue, "p99 latency of /v1/refunds: 412ms", "/v1/refunds", inOutput, 0.57),
		spread(FactValue, "refund_worker_replicas: 9", "refund_worker_replicas", inOutput, 0.74),

		spread(FactGoal, "New goal (LEDG-587): add partial refunds to the payouts report.", "LEDG-587", inUser, 0.86),

		// The user's corrections, said once each.
		spread(FactConstraint, "No, use errors.Is here, not a string comparison on err.Error().", "errors.Is", inUser, 0.11),
		spread(FactConstraint, "Stop adding TODO comments to the code.", "TODO comments", inUser, 0.29),
		spread(FactConstraint, "Instead of time.Sleep in tests, use the fake clock.", "time.Sleep", inUser, 0.44),
		spread(FactConstraint, "Don't touch the vendor directory.", "vendor directory", inUser, 0.53),
		spread(FactConstraint, "Make sure every new endpoint checks the merchant id.", "merchant id", inUser, 0.69),
		spread(FactConstraint, "Use table-driven tests, not one test function per case.", "one test function per case", inUser, 0.91),
	}
}

// preCompactionFacts are planted by the run in the turn that ends right before a compaction:
// values in tool output and decisions in the assistant's answer, alternately.
func preCompactionFacts() []Fact {
	f := func(kind, text, key, where string) Fact {
		return Fact{Kind: kind, Text: text, Key: key, Where: where, Phase: PhasePreCompaction}
	}
	return []Fact{
		f(FactValue, "retry_budget: 11", "retry_budget", inOutput),
		f(FactDecision, "I decided the reconciler job runs daily at 02:15 UTC.", "reconciler", inAssistant),
		f(FactValue, "queue high_water_mark: 9182", "high_water_mark", inOutput),
		f(FactDecision, "Decision: webhook signatures use HMAC-SHA512, not SHA256.", "HMAC-SHA512", inAssistant),
		f(FactValue, "refunds_v2_rollout: 17%", "refunds_v2_rollout", inOutput),
		f(FactDecision, "I chose to name the new table refund_attempts.", "refund_attempts", inAssistant),
		f(FactValue, "cert_not_after: 2027-03-14", "cert_not_after", inOutput),
		f(FactDecision, "Decided: the new CLI flag is --dry-run-ledger.", "--dry-run-ledger", inAssistant),
	}
}

// plantPreCompaction adds fact f to the messages of one turn: a value as a line of the last
// tool output, a decision at the end of the final answer.
func plantPreCompaction(turn []store.Message, f Fact) []store.Message {
	out := make([]store.Message, len(turn))
	copy(out, turn)
	if f.Where == inOutput {
		for i := len(out) - 1; i >= 0; i-- {
			if out[i].Role == store.RoleTool {
				out[i].Content = f.Text + "\n" + out[i].Content
				return out
			}
		}
	}
	last := len(out) - 1
	out[last].Content += " " + f.Text
	return out
}

// generateRetentionSession builds the deterministic session of turns turns. Every turn is a user
// ask, an assistant message calling read_file and terminal (every third turn also write_file),
// their results, and an assistant answer: a complete exchange, so any prefix of turns is a valid
// history. The goal and constraints are in the first user message only; the first exchange
// carries facts of its own; the spread facts sit at fixed fractions of the session.
func generateRetentionSession(seed uint64, turns int) retentionSession {
	rng := NewRng(seed)
	facts := plantedFacts(rng)
	byTurn := map[int][]int{}
	for i := range facts {
		t := 0
		if facts[i].Phase == PhaseSpread {
			// Spread facts start after the first exchange (turn 0 has its own).
			t = max(1, min(int(facts[i].at*float64(turns)), turns-1))
		}
		facts[i].Turn = t
		byTurn[t] = append(byTurn[t], i)
	}
	s := retentionSession{facts: facts, pre: preCompactionFacts()}
	said := map[string]bool{}
	constraint := func(f Fact) {
		if !said[f.Text] {
			said[f.Text] = true
			s.constraints = append(s.constraints, f)
		}
	}
	base := time.Date(2026, 1, 12, 9, 0, 0, 0, time.UTC)
	clock := 0
	stamp := func(m store.Message) store.Message {
		m.Timestamp = base.Add(time.Duration(clock) * 20 * time.Second)
		clock++
		return m
	}
	for t := range turns {
		comp := retComponents[rng.Intn(len(retComponents))]
		noun := retNouns[rng.Intn(len(retNouns))]
		path := fmt.Sprintf("internal/%s/%s_%d.go", comp, noun, t+1)
		ask := fmt.Sprintf("Task %d: %s the %s %s in %s.", t+1, retVerbs[rng.Intn(len(retVerbs))], comp, noun, path)
		if t == 0 {
			ask = "Task 1: ship refunds support in ledgerd, starting with a read of the billing code in " + path + "."
		}
		s.asks = append(s.asks, UserAsk{Turn: t, Sentence: ask, Key: path})

		user := []string{ask}
		var asstNote, writePath, readPath []string
		readPath = append(readPath, path)
		command := fmt.Sprintf("go test ./internal/%s/...", comp)
		var outputExtra []string
		for _, fi := range byTurn[t] {
			f := facts[fi]
			switch f.Where {
			case inUser:
				user = append(user, userSentence(f, noun))
				if f.Kind == FactDecision || f.Kind == FactConstraint {
					constraint(f)
				}
			case inAssistant:
				switch f.Kind {
				case FactPath:
					asstNote = append(asstNote, fmt.Sprintf("The signature check lives in %s.", f.Text))
				case FactSHA:
					asstNote = append(asstNote, fmt.Sprintf("Committed as %s.", f.Text))
				case FactIssue:
					asstNote = append(asstNote, fmt.Sprintf("This also closes %s.", f.Text))
				default:
					asstNote = append(asstNote, f.Text)
				}
			case inToolArgs:
				if t%2 == 0 {
					writePath = append(writePath, f.Text)
				} else {
					readPath = append(readPath, f.Text)
				}
			case inCommand:
				switch f.Kind {
				case FactSHA:
					command = "git cherry-pick " + f.Text
				case FactPath:
					command = "bash " + f.Text + " --dry-run"
				}
			case inOutput:
				switch f.Kind {
				case FactSHA:
					outputExtra = append(outputExtra, "commit "+f.Text, "Author: Dana Reyes <dana@example.com>", "", "    refunds: reconcile partial captures")
				case FactIssue:
					outputExtra = append(outputExtra, fmt.Sprintf("%s  open  refunds double-post when the webhook retries", f.Text))
				case FactPath:
					outputExtra = append(outputExtra, fmt.Sprintf("%s:%d:%d: undefined: ledger.Entry%d", f.Text, 10+t%90, 2+t%7, t))
				default:
					outputExtra = append(outputExtra, f.Text)
				}
			}
		}
		if t%4 == 2 {
			fl := retFillers[rng.Intn(len(retFillers))]
			user = append(user, fl.text)
			if fl.binding {
				constraint(Fact{Kind: FactConstraint, Text: fl.text, Key: fl.key, Turn: t, Where: inUser, Phase: PhaseSpread})
			}
		}

		var ms []store.Message
		ms = append(ms, stamp(store.Message{Role: store.RoleUser, Content: strings.Join(user, " ")}))

		callID := func(k int) string { return fmt.Sprintf("call_%d_%d", t+1, k) }
		var calls []store.ToolCall
		var results []store.Message
		for _, p := range readPath {
			id := callID(len(calls))
			calls = append(calls, toolCall(id, "read_file", map[string]any{"path": p}))
			results = append(results, store.Message{Role: store.RoleTool, ToolCallID: id, ToolName: "read_file", Content: codeListing(rng, p, comp)})
		}
		id := callID(len(calls))
		calls = append(calls, toolCall(id, "terminal", map[string]any{"command": command}))
		results = append(results, store.Message{Role: store.RoleTool, ToolCallID: id, ToolName: "terminal", Content: terminalOutput(rng, t, comp, outputExtra)})
		ms = append(ms, stamp(store.Message{Role: store.RoleAssistant, Content: fmt.Sprintf("Reading %s and running the %s tests first.", path, comp), ToolCalls: calls}))
		for _, r := range results {
			ms = append(ms, stamp(r))
		}
		if t%3 == 1 || len(writePath) > 0 {
			if len(writePath) == 0 {
				writePath = []string{path}
			}
			var wcalls []store.ToolCall
			var wres []store.Message
			for _, p := range writePath {
				id := callID(10 + len(wcalls))
				body := fmt.Sprintf("package %s\n\nfunc %s%d() error { return nil }\n", comp, pick(rng, retFuncs), t)
				wcalls = append(wcalls, toolCall(id, "write_file", map[string]any{"path": p, "content": body}))
				wres = append(wres, store.Message{Role: store.RoleTool, ToolCallID: id, ToolName: "write_file", Content: fmt.Sprintf("wrote %d bytes to %s", len(body), p)})
			}
			ms = append(ms, stamp(store.Message{Role: store.RoleAssistant, Content: "Applying the change.", ToolCalls: wcalls}))
			for _, r := range wres {
				ms = append(ms, stamp(r))
			}
		}
		answer := fmt.Sprintf("Done with task %d: the %s %s now handles the edge case and the tests pass. %s",
			t+1, comp, noun, strings.Repeat(fmt.Sprintf("The %s path was reviewed line by line for the %s change. ", noun, comp), 2))
		if len(asstNote) > 0 {
			answer += " " + strings.Join(asstNote, " ")
		}
		ms = append(ms, stamp(store.Message{Role: store.RoleAssistant, Content: answer, FinishReason: "stop"}))
		s.turns = append(s.turns, ms)
	}
	return s
}

// userSentence is how the user says fact f in a turn on a noun.
func userSentence(f Fact, noun string) string {
	switch f.Kind {
	case FactPath:
		return fmt.Sprintf("The entry point is %s; check how it wires the %s.", f.Text, noun)
	case FactSHA:
		return fmt.Sprintf("Compare against commit %s, which is the last good deploy.", f.Text)
	case FactIssue:
		return fmt.Sprintf("This is tracked in %s.", f.Text)
	case FactError:
		return fmt.Sprintf("Production logs show: %s", f.Text)
	}
	return f.Text // decisions, goals and constraints, as said
}

func toolCall(id, name string, args map[string]any) store.ToolCall {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	return store.ToolCall{ID: id, Type: "function", Function: store.ToolFunction{Name: name, Arguments: string(raw)}}
}

// codeListing is a plausible numbered Go listing of about 1.3 KB: a file a small-window model
// can still read whole.
func codeListing(rng *Rng, path, comp string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "// %s\npackage %s\n\n", path, comp)
	for i := range 6 {
		fn := pick(rng, retFuncs)
		fmt.Fprintf(&b, "%3d\tfunc (s *%sService) %s%d(ctx context.Context, in %sInput) (%sOutput, error) {\n", 10+i*9, strings.ToUpper(comp[:1])+comp[1:], fn, i, fn, fn)
		fmt.Fprintf(&b, "%3d\t\tif err := in.validate(); err != nil {\n%3d\t\t\treturn %sOutput{}, fmt.Errorf(\"%s: %%w\", err)\n%3d\t\t}\n", 11+i*9, 12+i*9, fn, strings.ToLower(fn), 13+i*9)
	}
	return b.String()
}

// terminalOutput is test output with the planted lines; every seventh turn a test fails.
func terminalOutput(rng *Rng, t int, comp string, extra []string) string {
	var lines []string
	lines = append(lines, extra...)
	status := 0
	if t%7 == 3 {
		status = 1
		lines = append(lines,
			fmt.Sprintf("--- FAIL: Test%s%d (0.0%ds)", strings.ToUpper(comp[:1])+comp[1:], t, rng.Intn(9)),
			fmt.Sprintf("    %s_test.go:%d: got %d, want %d", comp, 20+t%80, t%5, t%5+1),
			"FAIL")
	}
	for i := range 3 {
		lines = append(lines, fmt.Sprintf("ok  \tgithub.com/acme/ledgerd/internal/%s/sub%d\t0.%03ds", comp, i, rng.Intn(1000)))
	}
	lines = append(lines, fmt.Sprintf("exit code: %d", status))
	return strings.Join(lines, "\n")
}
