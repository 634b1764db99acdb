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
	FactPath     = "path"
	FactSHA      = "sha"
	FactIssue    = "issue"
	FactError    = "error"
	FactDecision = "decision"
	FactGoal     = "goal"
)

// Where a fact is planted.
const (
	inUser      = "user"
	inAssistant = "assistant"
	inToolArgs  = "tool_args"
	inCommand   = "command"
	inOutput    = "tool_output"
)

// Fact is one planted fact: Text must survive verbatim, Query is the one search that may recover
// it (its identifier text).
type Fact struct {
	Kind  string `json:"kind"`
	Text  string `json:"text"`
	Query string `json:"-"`
	Turn  int    `json:"planted_turn"`
	Where string `json:"planted_in"`
	// at is the planting position as a fraction of the session, so scaled-down runs plant every
	// fact too.
	at float64
}

// UserAsk is the key sentence of one real user message.
type UserAsk struct {
	Turn     int
	Sentence string
}

// retentionSession is the generated coding session: turns of messages, the facts planted in
// them and every user ask.
type retentionSession struct {
	turns [][]store.Message
	facts []Fact
	asks  []UserAsk
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
	retFillers = []string{
		"Make sure the tests pass.", "Let's keep the diff small.", "Do not reformat unrelated code.",
		"Remember to update the changelog.", "We should avoid new dependencies.", "Keep the commit focused.",
	}
	retFuncs = []string{"Build", "Apply", "Validate", "Encode", "Decode", "Flush", "Reconcile", "Schedule", "Lookup", "Merge"}
)

// plantedFacts are the facts of the benchmark with their planting positions (fractions of the
// session) and places. SHAs and issue numbers are drawn from the seeded generator.
func plantedFacts(rng *Rng) []Fact {
	sha := func() string { return rng.hex(40) }
	issue := func() string { return fmt.Sprintf("#%d", 1000+rng.Intn(9000)) }
	facts := []Fact{
		{Kind: FactPath, Text: "internal/billing/invoice.go", Where: inToolArgs, at: 0.02},
		{Kind: FactPath, Text: "internal/db/pool.go", Where: inToolArgs, at: 0.10},
		{Kind: FactPath, Text: "cmd/ledgerd/main.go", Where: inUser, at: 0.15},
		{Kind: FactPath, Text: "migrations/0042_add_refunds.sql", Where: inOutput, at: 0.25},
		{Kind: FactPath, Text: "internal/auth/jwt_verify.go", Where: inOutput, at: 0.33},
		{Kind: FactPath, Text: "deploy/helm/values-prod.yaml", Where: inUser, at: 0.45},
		{Kind: FactPath, Text: "pkg/ratelimit/bucket.go", Where: inToolArgs, at: 0.55},
		{Kind: FactPath, Text: "scripts/backfill_ledger.sh", Where: inCommand, at: 0.65},
		{Kind: FactPath, Text: "internal/webhook/stripe_handler.go", Where: inAssistant, at: 0.78},
		{Kind: FactPath, Text: "docs/adr/0007-use-pgx.md", Where: inToolArgs, at: 0.90},

		{Kind: FactSHA, Text: sha(), Where: inOutput, at: 0.04},
		{Kind: FactSHA, Text: sha(), Where: inUser, at: 0.12},
		{Kind: FactSHA, Text: sha(), Where: inCommand, at: 0.30},
		{Kind: FactSHA, Text: sha(), Where: inAssistant, at: 0.42},
		{Kind: FactSHA, Text: sha(), Where: inOutput, at: 0.58},
		{Kind: FactSHA, Text: sha(), Where: inUser, at: 0.70},
		{Kind: FactSHA, Text: sha(), Where: inOutput, at: 0.83},
		{Kind: FactSHA, Text: sha(), Where: inAssistant, at: 0.95},

		{Kind: FactIssue, Text: issue(), Where: inUser, at: 0.03},
		{Kind: FactIssue, Text: issue(), Where: inOutput, at: 0.14},
		{Kind: FactIssue, Text: issue(), Where: inAssistant, at: 0.27},
		{Kind: FactIssue, Text: issue(), Where: inUser, at: 0.38},
		{Kind: FactIssue, Text: issue(), Where: inOutput, at: 0.52},
		{Kind: FactIssue, Text: issue(), Where: inUser, at: 0.67},
		{Kind: FactIssue, Text: issue(), Where: inAssistant, at: 0.81},
		{Kind: FactIssue, Text: issue(), Where: inUser, at: 0.93},

		{Kind: FactError, Text: `pq: duplicate key value violates unique constraint "invoices_number_key"`, Where: inOutput, at: 0.06},
		{Kind: FactError, Text: "panic: runtime error: invalid memory address or nil pointer dereference", Where: inOutput, at: 0.20},
		{Kind: FactError, Text: "dial tcp 10.0.3.17:5432: connect: connection refused", Where: inUser, at: 0.36},
		{Kind: FactError, Text: `ERROR: relation "refund_events" does not exist (SQLSTATE 42P01)`, Where: inOutput, at: 0.50},
		{Kind: FactError, Text: "context deadline exceeded while waiting for the ledger lock", Where: inOutput, at: 0.72},
		{Kind: FactError, Text: "x509: certificate signed by unknown authority", Where: inOutput, at: 0.88},

		{Kind: FactDecision, Text: "Never use sudo in any script or command.", Where: inUser, at: 0.01},
		{Kind: FactDecision, Text: "We decided to use pgx instead of lib/pq for the database layer.", Where: inUser, at: 0.08},
		{Kind: FactDecision, Text: "Always run go test -race before committing.", Where: inUser, at: 0.18},
		{Kind: FactDecision, Text: "Do not change the public API of package ledger.", Where: inUser, at: 0.31},
		{Kind: FactDecision, Text: "Migrations must stay backwards compatible: no column drops.", Where: inUser, at: 0.47},
		{Kind: FactDecision, Text: "From now on, log with slog, never with logrus.", Where: inUser, at: 0.62},
		{Kind: FactDecision, Text: "We decided to store amounts as int64 cents, never as float64.", Where: inUser, at: 0.76},

		{Kind: FactGoal, Text: "New goal: make the refund pipeline idempotent end to end, so a replayed webhook never pays twice.", Where: inUser, at: 0.86},
	}
	for i := range facts {
		facts[i].Query = facts[i].Text
	}
	return facts
}

// generateRetentionSession builds the deterministic session of turns turns. Every turn is a user
// ask, an assistant message calling read_file and terminal (every third turn also write_file),
// their results, and an assistant answer: a complete exchange, so any prefix of turns is a valid
// history.
func generateRetentionSession(seed uint64, turns int) retentionSession {
	rng := NewRng(seed)
	facts := plantedFacts(rng)
	byTurn := map[int][]int{}
	for i := range facts {
		t := min(int(facts[i].at*float64(turns)), turns-1)
		// Never plant in the first exchange: it is the protected head of the first compaction,
		// which would make the fact too easy.
		t = max(t, min(4, turns-1))
		facts[i].Turn = t
		byTurn[t] = append(byTurn[t], i)
	}
	s := retentionSession{facts: facts}
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
		s.asks = append(s.asks, UserAsk{Turn: t, Sentence: ask})

		user := []string{ask}
		var asstNote, writePath, readPath []string
		readPath = append(readPath, path)
		command := fmt.Sprintf("go test ./internal/%s/...", comp)
		var outputExtra []string
		for _, fi := range byTurn[t] {
			f := facts[fi]
			switch f.Where {
			case inUser:
				switch f.Kind {
				case FactDecision, FactGoal:
					user = append(user, f.Text)
				case FactPath:
					user = append(user, fmt.Sprintf("The entry point is %s; check how it wires the %s.", f.Text, noun))
				case FactSHA:
					user = append(user, fmt.Sprintf("Compare against commit %s, which is the last good deploy.", f.Text))
				case FactIssue:
					user = append(user, fmt.Sprintf("This is tracked in %s.", f.Text))
				case FactError:
					user = append(user, fmt.Sprintf("Production logs show: %s", f.Text))
				}
			case inAssistant:
				switch f.Kind {
				case FactPath:
					asstNote = append(asstNote, fmt.Sprintf("The signature check lives in %s.", f.Text))
				case FactSHA:
					asstNote = append(asstNote, fmt.Sprintf("Committed as %s.", f.Text))
				case FactIssue:
					asstNote = append(asstNote, fmt.Sprintf("This also closes %s.", f.Text))
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
				case FactError:
					outputExtra = append(outputExtra, f.Text)
				case FactPath:
					outputExtra = append(outputExtra, fmt.Sprintf("%s:%d:%d: undefined: ledger.Entry%d", f.Text, 10+t%90, 2+t%7, t))
				}
			}
		}
		if t%4 == 2 {
			user = append(user, retFillers[rng.Intn(len(retFillers))])
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
			t+1, comp, noun, strings.Repeat(fmt.Sprintf("The %s path was reviewed line by line for the %s change. ", noun, comp), 3))
		if len(asstNote) > 0 {
			answer += " " + strings.Join(asstNote, " ")
		}
		ms = append(ms, stamp(store.Message{Role: store.RoleAssistant, Content: answer, FinishReason: "stop"}))
		s.turns = append(s.turns, ms)
	}
	return s
}

func toolCall(id, name string, args map[string]any) store.ToolCall {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	return store.ToolCall{ID: id, Type: "function", Function: store.ToolFunction{Name: name, Arguments: string(raw)}}
}

// codeListing is a plausible numbered Go listing of about 2 KB.
func codeListing(rng *Rng, path, comp string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "// %s\npackage %s\n\n", path, comp)
	for i := range 20 {
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
	for i := range 5 {
		lines = append(lines, fmt.Sprintf("ok  \tgithub.com/acme/ledgerd/internal/%s/sub%d\t0.%03ds", comp, i, rng.Intn(1000)))
	}
	lines = append(lines, fmt.Sprintf("exit code: %d", status))
	return strings.Join(lines, "\n")
}
