package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/fts"
)

// recallProjects name the sessions' subjects: each session works on one, and the filler of
// every session mentions others, so a project's name alone does not find the answer.
var recallProjects = []string{"billing", "ledger", "refunds", "outbox", "webhook", "auth", "ratelimit", "reporting",
	"scheduler", "payouts", "currency", "audit", "invoices", "search", "ingest", "exporter", "notifier", "gateway",
	"inventory", "pricing"}

var recallParts = []string{"poller", "handler", "client", "worker", "codec", "router", "cache", "planner", "reader", "index"}

// recallFiller is the ordinary traffic of a session: asks, replies and tool output that share
// the planted facts' vocabulary (tests, config, errors, retries, latency, files) without being
// their answers. %[1]s is a project, %[2]s a part.
var recallFiller = []struct{ role, text string }{
	{store.RoleUser, "can you look at the %[1]s %[2]s again, the tests are flaky"},
	{store.RoleAssistant, "I read internal/%[1]s/%[2]s.go and the tests; the failure is a timeout in the setup, not the code."},
	{store.RoleTool, "ok  \tgithub.com/acme/app/internal/%[1]s\t0.412s\n--- PASS: Test%[2]s (0.02s)"},
	{store.RoleUser, "please add logging to the %[1]s %[2]s so we can see the retry count"},
	{store.RoleAssistant, "Added a debug line with the attempt number; the config loader now reads the log level too."},
	{store.RoleTool, "internal/%[1]s/%[2]s.go:42:2: declared and not used: err\nexit status 1"},
	{store.RoleUser, "what does the %[1]s %[2]s do when the file is missing?"},
	{store.RoleAssistant, "It returns an error wrapped with the path; the caller logs it and moves on to the next file."},
	{store.RoleTool, "BenchmarkDecode-2  \t  120000\t  9810 ns/op\t  2048 B/op"},
	{store.RoleUser, "rename the %[2]s in %[1]s to something clearer and update the docs"},
	{store.RoleAssistant, "Renamed it and updated the README section on the %[1]s %[2]s; the migration notes are unchanged."},
	{store.RoleTool, "$ git diff --stat\n internal/%[1]s/%[2]s.go | 14 +++++++-------\n 1 file changed"},
}

// recallFact is one kind of planted fact: the phrasings of its evidence message and the ways
// of asking for it. %[1]s is the session's project, %[2]s a part, %[3]d a number.
type recallFact struct {
	kind, role string
	evidence   []string
	questions  []recallAsk
}

// recallAsk is one question as a person asks it and as its keywords.
type recallAsk struct{ asked, keywords string }

// recallFacts are planted once per session, each in a phrasing drawn apart from the question
// asked about it, so a question is never a copy of its evidence: they share no run of four
// content words (TestRecallQuestionsAreNotCopies), and use other words and other word forms
// (decide: decision, retrying: retries, migrations: migrating). Every question still shares a
// word or a stem that carries meaning with every phrasing of its evidence beyond the project's
// name, as a person's question about a real session would: without one no search could find
// it.
var recallFacts = []recallFact{
	{"decision", store.RoleAssistant, []string{
		"We decided the %[1]s %[2]s retries a failed call three times with exponential backoff, then gives up and alerts.",
		"Decision for %[1]s: a failing request to the %[2]s is retried up to three times, exponential backoff in between, then an alert fires.",
		"Settled for the %[1]s %[2]s: when a call fails it makes three retry attempts with growing backoff, and only then pages someone.",
	}, []recallAsk{
		{"What did we decide about retrying in %[1]s?", "%[1]s retrying decide"},
		{"How many retries does %[1]s get before it gives up?", "%[1]s retries limit"},
		{"Which backoff policy did we pick for %[1]s?", "%[1]s backoff policy"},
		{"what happens in %[1]s when calls keep failing", "%[1]s failing calls"},
	}},
	{"file", store.RoleAssistant, []string{
		"Found it: the data race is in internal/%[1]s/%[2]s_state.go, two goroutines write the map without the mutex.",
		"The race detector points at internal/%[1]s/%[2]s_state.go: its map is written from two goroutines with no lock held.",
		"Root cause of the flaky crash in %[1]s: unsynchronized map writes in internal/%[1]s/%[2]s_state.go, a race between two goroutines.",
	}, []recallAsk{
		{"Which file had the race in %[1]s?", "%[1]s race file"},
		{"Where was the concurrent map write in %[1]s?", "%[1]s concurrent map write"},
		{"what source file did the data race come from in %[1]s", "%[1]s data race source"},
		{"which goroutines raced in %[1]s", "%[1]s goroutines raced"},
	}},
	{"error", store.RoleTool, []string{
		"migrate: applying 00%[3]d_%[1]s_accounts.sql: ERROR: column \"owner_ref\" of relation \"%[1]s_accounts\" does not exist",
		"migration 00%[3]d for %[1]s failed: pq: column \"owner_ref\" does not exist (SQLSTATE 42703)",
		"ERROR 42703 while migrating the %[1]s schema: unknown column owner_ref, migration 00%[3]d rolled back",
	}, []recallAsk{
		{"What error did the %[1]s migrations print?", "%[1]s migrations error"},
		{"Why did the %[1]s schema migration fail?", "%[1]s schema migration failure"},
		{"which column was missing when %[1]s migrated", "%[1]s missing column migrated"},
		{"what broke in the %[1]s database migration", "%[1]s database migration broke"},
	}},
	{"correction", store.RoleUser, []string{
		"No, don't write the %[1]s settings as YAML. Config files are TOML here, always.",
		"Stop producing YAML for %[1]s, I told you: our configuration format is TOML.",
		"Wrong format again for %[1]s: settings live in TOML files, never YAML.",
	}, []recallAsk{
		{"What did I say about the format of %[1]s config files?", "%[1]s config format"},
		{"Which settings format do I want for %[1]s?", "%[1]s settings format"},
		{"did I object to YAML in %[1]s", "%[1]s yaml objection"},
		{"what file type should %[1]s configuration use", "%[1]s configuration file type"},
	}},
	{"value", store.RoleTool, []string{
		"benchmarked %[1]s %[2]s: p99 latency %[3]d ms, p50 11 ms over 10000 requests",
		"load test %[1]s/%[2]s: 10000 req, median 11ms, p99 %[3]dms, latency within budget",
		"%[1]s %[2]s latency histogram: p50=11ms p99=%[3]dms (n=10000)",
	}, []recallAsk{
		{"Which p99 latencies did we measure for %[1]s?", "%[1]s p99 latencies"},
		{"how slow was the %[1]s tail latency", "%[1]s tail latency"},
		{"what were the %[1]s response times at p99", "%[1]s p99 response times"},
		{"What latency numbers did we get for %[1]s?", "%[1]s latency numbers"},
	}},
	{"command", store.RoleAssistant, []string{
		"I ran `go test -race -count=50 ./internal/%[1]s/...` to reproduce the flake; it failed on run 37.",
		"Reproduced the %[1]s flake with `go test -race -count=50 ./internal/%[1]s/...`: run 37 failed.",
		"To make the %[1]s flake show up on demand: `go test -race -count=50 ./internal/%[1]s/...` (breaks around run 37).",
	}, []recallAsk{
		{"How did we reproduce the flaky %[1]s test?", "%[1]s reproducing flaky test"},
		{"which command triggers the %[1]s flake", "%[1]s flake command"},
		{"what go test flags did we use to catch the %[1]s flake", "%[1]s go test flags"},
		{"how many runs until the %[1]s test failed", "%[1]s runs until failure"},
	}},
	{"goal", store.RoleUser, []string{
		"The goal for %[1]s this week: ship the %[2]s rewrite behind a flag without downtime.",
		"This week's goal in %[1]s: get the new %[2]s shipped behind a feature flag, zero downtime.",
		"What %[1]s ships this week: the rewritten %[2]s, flag-gated, no outage or downtime.",
	}, []recallAsk{
		{"What were we trying to ship in %[1]s?", "%[1]s shipping goal"},
		{"what was the plan for %[1]s this week", "%[1]s week plan"},
		{"Is the %[1]s rewrite supposed to go out behind a flag?", "%[1]s rewrite flag"},
		{"Did we plan any downtime for the %[1]s release?", "%[1]s downtime release"},
	}},
}

// generateRecall writes cfg.Sessions sessions of cfg.Turns user turns each (a turn is a user
// ask, an assistant reply and sometimes a tool row), plants every fact once per session at a
// drawn turn, and compacts each session halfway (the first half is archived, still searchable).
// It returns every message as the BM25 baselines index it and the questions with their
// evidence ids.
func generateRecall(ctx context.Context, st store.Backend, cfg RecallConfig) ([]recallDoc, []recallQuestion, error) {
	rng := NewRng(cfg.Seed)
	var docs []recallDoc
	var questions []recallQuestion
	base := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	for s := 0; s < cfg.Sessions; s++ {
		project := recallProjects[s%len(recallProjects)]
		if s >= len(recallProjects) {
			project = fmt.Sprintf("%s%d", project, s/len(recallProjects)+1)
		}
		sid := fmt.Sprintf("recall-%03d", s)
		if _, err := st.CreateSession(ctx, store.NewSession{ID: sid, Source: "cli", StartedAt: base.Add(time.Duration(s) * time.Hour)}); err != nil {
			return nil, nil, err
		}
		plantAt := map[int]recallFact{}
		for _, f := range recallFacts {
			for {
				t := rng.Intn(cfg.Turns)
				if _, taken := plantAt[t]; !taken {
					plantAt[t] = f
					break
				}
			}
		}
		var pending []store.Message
		var pendingQuestions []*recallQuestion
		at := base.Add(time.Duration(s) * time.Hour)
		flush := func() error {
			if len(pending) == 0 {
				return nil
			}
			ids, err := st.AppendBatch(ctx, sid, pending)
			if err != nil {
				return err
			}
			for i, m := range pending {
				docs = append(docs, recallDoc{id: ids[i], words: fts.Tokens(fts.IndexedText(m.Role, m.Content))})
				if q := pendingQuestions[i]; q != nil {
					q.evidence = []int64{ids[i]}
					questions = append(questions, *q)
				}
			}
			pending, pendingQuestions = nil, nil
			return nil
		}
		add := func(role, text string, q *recallQuestion) {
			at = at.Add(time.Minute)
			m := store.Message{Role: role, Content: text, Timestamp: at}
			if role == store.RoleTool {
				m.ToolCallID, m.ToolName = "call", "terminal"
			}
			pending, pendingQuestions = append(pending, m), append(pendingQuestions, q)
		}
		for t := 0; t < cfg.Turns; t++ {
			if t == cfg.Turns/2 {
				if err := flush(); err != nil {
					return nil, nil, err
				}
				summary := store.Message{Role: store.RoleUser, Summary: true, Timestamp: at.Add(time.Second),
					Content: fmt.Sprintf("[CONTEXT COMPACTION] Earlier turns worked on the %s code: tests, config and fixes.", project)}
				_, err := store.UnderLease(ctx, st, sid, func(f store.Fence) (int, error) {
					return st.ArchiveAndCompact(ctx, store.CompactRequest{SessionID: sid, Messages: []store.Message{summary}}, f)
				})
				if err != nil {
					return nil, nil, fmt.Errorf("compact %s: %w", sid, err)
				}
			}
			other := recallProjects[rng.Intn(len(recallProjects))]
			part := recallParts[rng.Intn(len(recallParts))]
			k := rng.Intn(len(recallFiller) / 3)
			for j := 0; j < 3; j++ {
				fl := recallFiller[k*3+j]
				if fl.role == store.RoleTool && rng.Intn(2) == 0 {
					continue
				}
				subject := project
				if rng.Intn(3) == 0 {
					subject = other
				}
				add(fl.role, fmt.Sprintf(fl.text, subject, part), nil)
			}
			if f, ok := plantAt[t]; ok {
				// The phrasing and the question are drawn apart.
				ev, qi := rng.Intn(len(f.evidence)), rng.Intn(len(f.questions))
				text := fmt.Sprintf(f.evidence[ev], project, part, 100+rng.Intn(900))
				add(f.role, text, &recallQuestion{Kind: f.kind, Asked: fmt.Sprintf(f.questions[qi].asked, project),
					Keywords: fmt.Sprintf(f.questions[qi].keywords, project), evidenceText: text, phrasing: ev, template: qi})
			}
		}
		if err := flush(); err != nil {
			return nil, nil, err
		}
	}
	return docs, questions, nil
}
