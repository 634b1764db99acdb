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

// recallFact is one planted fact: its evidence message and the two ways of asking for it.
// %[1]s is the session's project, %[2]s a part, %[3]d a number.
type recallFact struct {
	kind, role, evidence, asked, keywords string
}

// recallFacts are worded apart from their questions (other word forms, other words, no copied
// sentences), but each question shares a word or a stem that carries meaning with its evidence
// beyond the project's name (decide: decided, reproducing: reproduce, latencies: latency), as a
// person's question about a real session would: without one no search could find it.
var recallFacts = []recallFact{
	{"decision", store.RoleAssistant,
		"We decided the %[1]s %[2]s retries a failed call three times with exponential backoff, then gives up and alerts.",
		"What did we decide about retrying in %[1]s?", "%[1]s retrying decide"},
	{"file", store.RoleAssistant,
		"Found it: the data race is in internal/%[1]s/%[2]s_state.go, two goroutines write the map without the mutex.",
		"Which file had the race in %[1]s?", "%[1]s race file"},
	{"error", store.RoleTool,
		"migrate: applying 00%[3]d_%[1]s_accounts.sql: ERROR: column \"owner_ref\" of relation \"%[1]s_accounts\" does not exist",
		"What error did the %[1]s migrations print?", "%[1]s migrations error"},
	{"correction", store.RoleUser,
		"No, don't write the %[1]s settings as YAML. Config files are TOML here, always.",
		"What did I say about the format of %[1]s config files?", "%[1]s config format"},
	{"value", store.RoleTool,
		"benchmarked %[1]s %[2]s: p99 latency %[3]d ms, p50 11 ms over 10000 requests",
		"Which p99 latencies did we measure for %[1]s?", "%[1]s p99 latencies"},
	{"command", store.RoleAssistant,
		"I ran `go test -race -count=50 ./internal/%[1]s/...` to reproduce the flake; it failed on run 37.",
		"How did we reproduce the flaky %[1]s test?", "%[1]s reproducing flaky test"},
	{"goal", store.RoleUser,
		"The goal for %[1]s this week: ship the %[2]s rewrite behind a flag without downtime.",
		"What were we trying to ship in %[1]s?", "%[1]s shipping goal"},
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
		var pendingFacts []*recallFact
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
				if f := pendingFacts[i]; f != nil {
					questions = append(questions, recallQuestion{Kind: f.kind,
						Asked: fmt.Sprintf(f.asked, project), Keywords: fmt.Sprintf(f.keywords, project), evidence: []int64{ids[i]}})
				}
			}
			pending, pendingFacts = nil, nil
			return nil
		}
		add := func(role, text string, f *recallFact) {
			at = at.Add(time.Minute)
			m := store.Message{Role: role, Content: text, Timestamp: at}
			if role == store.RoleTool {
				m.ToolCallID, m.ToolName = "call", "terminal"
			}
			pending, pendingFacts = append(pending, m), append(pendingFacts, f)
		}
		for t := 0; t < cfg.Turns; t++ {
			if t == cfg.Turns/2 {
				if err := flush(); err != nil {
					return nil, nil, err
				}
				summary := store.Message{Role: store.RoleUser, Summary: true, Timestamp: at.Add(time.Second),
					Content: fmt.Sprintf("[CONTEXT COMPACTION] Earlier turns worked on the %s code: tests, config and fixes.", project)}
				if _, err := st.ArchiveAndCompact(ctx, store.CompactRequest{SessionID: sid, Messages: []store.Message{summary}}); err != nil {
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
				f := f
				add(f.role, fmt.Sprintf(f.evidence, project, part, 100+rng.Intn(900)), &f)
			}
		}
		if err := flush(); err != nil {
			return nil, nil, err
		}
	}
	return docs, questions, nil
}
