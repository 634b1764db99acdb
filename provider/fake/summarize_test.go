package fake

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/spoolhq/spool/provider"
)

const summaryPreamble = `You are a summarization agent. Treat the turns below as source material. Output the summary only.
Use these sections:
## Goal
## Constraints & Preferences
## Completed Actions
## Active State
## Blocked
## Key Decisions
## Resolved Questions
## Relevant Files
## Remaining Work
## Critical Context
Target ~2000 tokens.`

const turnsFirst = `[USER]: Port the session store to SQLite. We must keep WAL mode and never use TRUNCATE checkpoints.

[ASSISTANT]: I will read the current schema first.
[Tool calls:
read_file({"path": "store/sqlite/schema.sql"})
]

[TOOL RESULT call_1]: CREATE TABLE sessions (id TEXT PRIMARY KEY);

[ASSISTANT]: We decided to use modernc.org/sqlite for a pure Go build.
[Tool calls:
run({"cmd": "go test ./store/..."})
]

[TOOL RESULT call_2]: FAIL store/sqlite: error: no such module: fts5

[USER]: Why did fts5 fail?

[ASSISTANT]: The driver needs the FTS5 module registered; commit 3f9a1c2 added it.

[USER]: Next, still need to add the trigram index for issue #42.`

func summaryRequest(system, user string) provider.Request {
	return provider.Request{Model: "fake", System: system, Messages: []provider.Message{{Role: "user", Content: user}}}
}

func sections(t *testing.T, text string) (order []string, body map[string][]string) {
	t.Helper()
	body = map[string][]string{}
	cur := ""
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if strings.HasPrefix(l, "## ") {
			cur = l[3:]
			order = append(order, cur)
			continue
		}
		if l != "" {
			body[cur] = append(body[cur], l)
		}
	}
	return order, body
}

// framing strips what the summarizer adds, leaving the copied pieces of an item.
var framing = regexp.MustCompile(`^(- |\d+\. )|( — | → | \[tool: [\w.\-]+\]$)`)

func assertNoInvention(t *testing.T, input, summary string) {
	t.Helper()
	for _, l := range strings.Split(summary, "\n") {
		if l == "" || strings.HasPrefix(l, "## ") || l == "None." {
			continue
		}
		for _, piece := range framing.Split(l, -1) {
			piece = strings.TrimSuffix(strings.TrimSpace(piece), "...")
			if piece != "" && !strings.Contains(input, piece) {
				t.Errorf("summary line %q has %q, which is not in its input", l, piece)
			}
		}
	}
}

func TestSummarizerFirstCompaction(t *testing.T) {
	t.Parallel()
	user := "TURNS TO SUMMARIZE:\n" + turnsFirst
	resp, err := New(Config{}).Chat(context.Background(), summaryRequest(summaryPreamble, user), nil)
	if err != nil {
		t.Fatal(err)
	}
	order, body := sections(t, resp.Content)
	if strings.Join(order, "|") != strings.Join(DefaultSummarySections, "|") {
		t.Fatalf("sections %q", order)
	}
	want := map[string][]string{
		"Goal":                      {"Port the session store to SQLite."},
		"Constraints & Preferences": {"never use TRUNCATE checkpoints"},
		"Completed Actions": {
			`1. read_file({"path": "store/sqlite/schema.sql"}) — CREATE TABLE sessions (id TEXT PRIMARY KEY); [tool: read_file]`,
			`2. run({"cmd": "go test ./store/..."}) — FAIL store/sqlite: error: no such module: fts5 [tool: run]`},
		"Active State":       {"commit 3f9a1c2 added it"},
		"Blocked":            {"no such module: fts5"},
		"Key Decisions":      {"We decided to use modernc.org/sqlite"},
		"Resolved Questions": {"- Why did fts5 fail? → The driver needs the FTS5 module registered"},
		"Relevant Files":     {"- store/sqlite/schema.sql"},
		"Remaining Work":     {"still need to add the trigram index for issue #42."},
		"Critical Context":   {"- 3f9a1c2", "- #42"},
	}
	for sec, items := range want {
		joined := strings.Join(body[sec], "\n")
		for _, it := range items {
			if !strings.Contains(joined, it) {
				t.Errorf("section %s lacks %q:\n%s", sec, it, joined)
			}
		}
	}
	assertNoInvention(t, summaryPreamble+"\n"+user, resp.Content)
}

func TestSummarizerIterativeKeepsPreviousAndContinuesNumbering(t *testing.T) {
	t.Parallel()
	previous := `## Goal
Port the session store to SQLite.
## Completed Actions
1. read_file(schema.sql) — ok [tool: read_file]
2. run(go test) — FAIL [tool: run]
## Blocked
None.
## Relevant Files
- store/sqlite/schema.sql`
	newTurns := `[ASSISTANT]: Registering the module now.
[Tool calls:
edit_file({"path": "store/sqlite/fts.go"})
]

[TOOL RESULT call_9]: wrote 12 lines

[USER]: Remember: the database file must stay mode 0600.`
	user := "PREVIOUS SUMMARY:\n" + previous + "\n\nNEW TURNS TO INCORPORATE:\n" + newTurns
	resp, err := New(Config{}).Chat(context.Background(), summaryRequest(summaryPreamble, user), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, body := sections(t, resp.Content)
	if got := strings.Join(body["Goal"], "\n"); got != "Port the session store to SQLite." {
		t.Errorf("goal %q", got)
	}
	actions := body["Completed Actions"]
	if len(actions) != 3 || !strings.HasPrefix(actions[0], "1. read_file") || !strings.HasPrefix(actions[2], `3. edit_file({"path": "store/sqlite/fts.go"}) — wrote 12 lines`) {
		t.Errorf("actions %q", actions)
	}
	files := strings.Join(body["Relevant Files"], "\n")
	if !strings.Contains(files, "store/sqlite/schema.sql") || !strings.Contains(files, "store/sqlite/fts.go") {
		t.Errorf("files %q", files)
	}
	if !strings.Contains(strings.Join(body["Critical Context"], "\n"), "Remember: the database file must stay mode 0600.") {
		t.Errorf("critical %q", body["Critical Context"])
	}
	if strings.Join(body["Blocked"], "") != "None." {
		t.Errorf("blocked %q", body["Blocked"])
	}
	assertNoInvention(t, summaryPreamble+"\n"+user, resp.Content)
}

func TestSummarizerFollowsTheTemplateAndIsNotTriggeredByASummaryInHistory(t *testing.T) {
	t.Parallel()
	m := New(Config{})
	ctx := context.Background()
	// Headings come from the template, in its order, including ones the defaults lack.
	sys := "Summarize.\n## Historical Task Snapshot\n## Goal\n## Relevant Files\n## Critical Context"
	resp, err := m.Chat(ctx, summaryRequest(sys, turnsFirst), nil)
	if err != nil {
		t.Fatal(err)
	}
	order, body := sections(t, resp.Content)
	if strings.Join(order, "|") != "Historical Task Snapshot|Goal|Relevant Files|Critical Context" {
		t.Errorf("order %q", order)
	}
	if got := strings.Join(body["Historical Task Snapshot"], ""); got != "Next, still need to add the trigram index for issue #42." {
		t.Errorf("snapshot %q", got)
	}
	// A compacted history that carries a summary is an ordinary chat.
	chat := provider.Request{Model: "fake", System: "You are spool.", Messages: []provider.Message{
		{Role: "user", Content: "[CONTEXT SUMMARY]\n## Goal\nPort the store.\n## Critical Context\nNone."},
		{Role: "assistant", Content: "Understood."},
		{Role: "user", Content: "What next?"},
	}}
	resp, err = m.Chat(ctx, chat, nil)
	if err != nil || !strings.HasPrefix(resp.Content, "Answer ") {
		t.Errorf("chat after compaction answered %q (%v)", resp.Content, err)
	}
}

func TestSummarizerIgnoresDirectivesQuotedInTurns(t *testing.T) {
	t.Parallel()
	m := New(Config{})
	turns := "TURNS TO SUMMARIZE:\n[USER]: Try it.\nFAULT server\nCALL read_file {}\n\n[ASSISTANT]: Done."
	resp, err := m.Chat(context.Background(), summaryRequest(summaryPreamble, turns), nil)
	if err != nil || !strings.HasPrefix(resp.Content, "## Goal\n") || len(resp.ToolCalls) != 0 {
		t.Errorf("quoted directives acted: %+v %v", resp, err)
	}
	// A directive before the turns still acts, so a test can fail the summarizer on purpose.
	_, err = m.Chat(context.Background(), summaryRequest(summaryPreamble, "FAULT overloaded\n"+turns), nil)
	if provider.ClassOf(err) != provider.ClassOverloaded {
		t.Errorf("leading FAULT: %v", err)
	}
}
