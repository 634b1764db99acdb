package recall

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
	"github.com/spoolhq/spool/store/storetest"
)

var bg = context.Background()

// world is a store seeded with the sessions every test reads; it is never written after setup.
type world struct {
	st store.Backend
	// ids of interesting messages
	deployAsk     int64 // in "alpha": the user's question about the frobnicator
	alphaIDs      []int64
	branchID      string
	archivedOwn   int64 // in "current": archived by compaction, mentions zanzibar
	activeOwn     int64 // in "current": active, mentions quokka
	rotParentHit  int64 // in "rot-1" (ended with compression): mentions wombat
	rotTipHit     int64 // in "rot-2" (the live tip): mentions wombat too
	largeIDs      []int64
	cronHit       int64
	kanbanHit     int64
	bravoHit      int64
	alphaLastUser int64
}

func msg(role, content string, at time.Time) store.Message {
	return store.Message{Role: role, Content: content, Timestamp: at}
}

func seed(t *testing.T) *world {
	t.Helper()
	st, err := sqlite.Open(bg, filepath.Join(t.TempDir(), "spool.db"), sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	w := &world{st: st}
	base := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	create := func(id, source, title string, day int) {
		t.Helper()
		if _, err := st.CreateSession(bg, store.NewSession{ID: id, Source: source, Title: title, Model: "m1", StartedAt: base.AddDate(0, 0, day)}); err != nil {
			t.Fatal(err)
		}
	}
	appendAll := func(id string, day int, ms ...store.Message) []int64 {
		t.Helper()
		for i := range ms {
			if ms[i].Timestamp.IsZero() {
				ms[i].Timestamp = base.AddDate(0, 0, day).Add(time.Duration(i) * time.Minute)
			}
		}
		ids, err := st.AppendBatch(bg, id, ms)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	var zero time.Time

	// alpha: a session about deploying the frobnicator, 16 messages with tool traffic.
	create("alpha", "cli", "deploy notes", 1)
	var alpha []store.Message
	alpha = append(alpha, msg("user", "let us set up the repository layout first", zero), msg("assistant", "layout done", zero))
	for i := range 5 {
		alpha = append(alpha, msg("user", fmt.Sprintf("warmup question %d", i), zero), msg("assistant", fmt.Sprintf("warmup answer %d", i), zero))
	}
	alpha = append(alpha,
		msg("user", "how do we deploy the frobnicator to staging?", zero),
		store.Message{Role: "assistant", ToolCalls: []store.ToolCall{{ID: "c1", Type: "function", Function: store.ToolFunction{Name: "terminal", Arguments: `{"command":"ls deploy"}`}}}},
		store.Message{Role: "tool", ToolCallID: "c1", ToolName: "terminal", Content: "bluegreen.sh frobnicator.yaml"},
		msg("assistant", "run bluegreen.sh with frobnicator.yaml", zero),
	)
	for i := range 3 {
		alpha = append(alpha, msg("user", fmt.Sprintf("follow-up %d", i), zero), msg("assistant", fmt.Sprintf("follow-up answer %d", i), zero))
	}
	w.alphaIDs = appendAll("alpha", 1, alpha...)
	w.deployAsk = w.alphaIDs[12]
	w.alphaLastUser = w.alphaIDs[len(w.alphaIDs)-2]

	// bravo: an older, shorter mention.
	create("bravo", "cli", "", 0)
	w.bravoHit = appendAll("bravo", 0, msg("user", "the frobnicator crashed in prod", zero), msg("assistant", "restart it", zero))[0]

	// Hidden and demoted sources.
	create("kanban-1", "kanban", "", 2)
	w.kanbanHit = appendAll("kanban-1", 2, msg("user", "frobnicator card moved", zero))[0]
	create("cron-1", "cron", "", 3)
	w.cronHit = appendAll("cron-1", 3, msg("user", "nightly frobnicator check frobnicator frobnicator", zero), msg("assistant", "ok", zero))[0]

	// A branch of alpha: its own lineage, holding copies of alpha's messages.
	br, err := st.Branch(bg, "alpha", store.NewSession{ID: "alpha-branch", Title: "deploy notes (branch)", StartedAt: base.AddDate(0, 0, 4)})
	if err != nil {
		t.Fatal(err)
	}
	w.branchID = br.ID
	appendAll(br.ID, 4, msg("user", "on the branch we try the canary path", zero))
	// alpha goes on after the fork.
	appendAll("alpha", 1, msg("user", "after the fork we chose the rollback plan", base.AddDate(0, 0, 1).Add(time.Hour)))

	// current: the caller's session, compacted in place. The archived part mentions zanzibar;
	// the live part mentions quokka.
	create("current", "cli", "current work", 5)
	old := appendAll("current", 5,
		msg("user", "first we discussed the zanzibar migration", zero),
		msg("assistant", "zanzibar needs two phases", zero),
		msg("user", "and the quokka cache", zero),
		msg("assistant", "quokka cache is warm", zero),
	)
	w.archivedOwn = old[0]
	summary := store.Message{Role: "user", Content: "[CONTEXT COMPACTION] we discussed zanzibar and quokka", Summary: true, Timestamp: base.AddDate(0, 0, 5).Add(time.Hour)}
	if _, err := storetest.Compact(bg, st, store.CompactRequest{SessionID: "current", Messages: []store.Message{summary,
		msg("user", "and the quokka cache", base.AddDate(0, 0, 5).Add(2*time.Minute)),
		msg("assistant", "quokka cache is warm", base.AddDate(0, 0, 5).Add(3*time.Minute))}, TailCount: 2}); err != nil {
		t.Fatal(err)
	}
	live, err := st.Conversation(bg, "current", store.ViewActive)
	if err != nil {
		t.Fatal(err)
	}
	w.activeOwn = live[1].ID

	// A rotation chain: rot-1 ended with compression, rot-2 is its live tip.
	create("rot-1", "cli", "rotated", 6)
	w.rotParentHit = appendAll("rot-1", 6, msg("user", "the wombat parser is slow", zero), msg("assistant", "profile the wombat parser", zero))[0]
	tip, err := storetest.Rotate(bg, st, store.RotateRequest{ParentID: "rot-1", Child: store.NewSession{ID: "rot-2", StartedAt: base.AddDate(0, 0, 6).Add(time.Hour)},
		Messages: []store.Message{{Role: "user", Content: "[CONTEXT COMPACTION] wombat parser work", Summary: true, Timestamp: base.AddDate(0, 0, 6).Add(time.Hour)}}})
	if err != nil {
		t.Fatal(err)
	}
	w.rotTipHit = appendAll(tip.ID, 6, msg("user", "wombat parser now fast", base.AddDate(0, 0, 6).Add(2*time.Hour)))[0]

	// large: 70 user/assistant messages plus tool rows.
	create("large", "cli", "long haul", 7)
	var large []store.Message
	for i := range 35 {
		large = append(large, msg("user", fmt.Sprintf("large ask %02d", i), zero), msg("assistant", fmt.Sprintf("large answer %02d", i), zero),
			store.Message{Role: "tool", ToolCallID: "x", ToolName: "t", Content: "noise"})
	}
	w.largeIDs = appendAll("large", 7, large...)
	return w
}

// decode fills a zeroed v: json.Unmarshal would otherwise keep fields an earlier answer set.
func decode[T any](t *testing.T, b []byte, v *T) {
	t.Helper()
	var zero T
	*v = zero
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("answer is not JSON: %v\n%s", err, b)
	}
}

func run(t *testing.T, w *world, current, args string) []byte {
	t.Helper()
	return Run(bg, w.st, current, json.RawMessage(args))
}

func TestModeAndParse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args    string
		mode    string
		limit   int
		window  int
		roles   []string
		wantErr string
	}{
		{`{"session_id":"s","around_message_id":7,"query":"x"}`, ModeScroll, 3, 5, nil, ""},
		{`{"session_id":"s","query":"x"}`, ModeRead, 3, 5, nil, ""},
		{`{}`, ModeBrowse, 3, 5, nil, ""},
		{``, ModeBrowse, 3, 5, nil, ""},
		{`{"query":"   "}`, ModeBrowse, 3, 5, nil, ""},
		{`{"query":"x"}`, ModeDiscover, 3, 5, nil, ""},
		{`{"query":"x","limit":0,"window":0}`, ModeDiscover, 1, 1, nil, ""},
		{`{"query":"x","limit":99,"window":99}`, ModeDiscover, 10, 20, nil, ""},
		{`{"query":"x","limit":-4,"window":-1}`, ModeDiscover, 1, 1, nil, ""},
		{`{"query":"x","limit":"abc","window":{}}`, ModeDiscover, 3, 5, nil, ""},
		{`{"query":"x","limit":"7","window":2.0}`, ModeDiscover, 7, 2, nil, ""},
		{`{"query":"x","limit":2.5}`, ModeDiscover, 3, 5, nil, ""},
		{`{"query":"x","role_filter":"User, tool,user"}`, ModeDiscover, 3, 5, []string{"user", "tool"}, ""},
		{`{"query":"x","role_filter":["assistant"]}`, ModeDiscover, 3, 5, []string{"assistant"}, ""},
		{`{"session_id":"s","around_message_id":"12"}`, ModeScroll, 3, 5, nil, ""},
		{`{"query":"x","role_filter":"user,robot"}`, ModeDiscover, 3, 5, nil, `role_filter: unknown role "robot"`},
		{`{"query":"x","role_filter":5}`, ModeDiscover, 3, 5, nil, "role_filter must be a comma-separated string"},
		{`{"session_id":"s","around_message_id":"abc"}`, ModeRead, 3, 5, nil, `around_message_id must be a positive integer message id, got "abc"`},
		{`{"session_id":"s","around_message_id":1.5}`, ModeRead, 3, 5, nil, "around_message_id must be a positive integer message id, got 1.5"},
		{`{"session_id":"s","around_message_id":-3}`, ModeRead, 3, 5, nil, "around_message_id must be a positive integer"},
		{`{"around_message_id":3}`, ModeBrowse, 3, 5, nil, "around_message_id needs session_id"},
		{`[1]`, ModeBrowse, 0, 0, nil, "arguments are not a valid JSON object"},
	}
	for _, c := range cases {
		r, err := ParseArgs("me", json.RawMessage(c.args))
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: err %v, want %q", c.args, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.args, err)
			continue
		}
		if r.Mode() != c.mode || r.Limit != c.limit || r.Window != c.window || !slices.Equal(r.Roles, c.roles) || r.Current != "me" {
			t.Errorf("%s: mode=%s limit=%d window=%d roles=%v", c.args, r.Mode(), r.Limit, r.Window, r.Roles)
		}
	}
}

func TestDiscover(t *testing.T) {
	t.Parallel()
	w := seed(t)
	var d Discovery
	decode(t, run(t, w, "current", `{"query":"frobnicator","limit":10}`), &d)
	if !d.Success || d.Mode != ModeDiscover || d.Count != len(d.Results) {
		t.Fatalf("answer: %+v", d)
	}
	var sessions []string
	for _, r := range d.Results {
		sessions = append(sessions, r.SessionID)
	}
	// One result per lineage; alpha's branch holds only copies of alpha's matches, so the two
	// show once; kanban is hidden; cron, though it matches best, comes last.
	if len(sessions) != 3 || sessions[2] != "cron-1" || slices.Contains(sessions, "kanban-1") ||
		slices.Contains(sessions, "alpha") == slices.Contains(sessions, "alpha-branch") || !slices.Contains(sessions, "bravo") {
		t.Fatalf("sessions %v", sessions)
	}
	top := d.Results[0]
	if top.Detail != "full" || top.MatchMessageID == 0 || !strings.Contains(top.Snippet, ">>>") || top.When == "" || top.Source != "cli" {
		t.Fatalf("top result: %+v", top)
	}
	for _, r := range d.Results[1:] {
		if r.Detail != "compact" || len(r.Messages) != 1 || !r.Messages[0].Anchor || r.Messages[0].ID != r.MatchMessageID ||
			r.MessagesBefore != 0 || r.MessagesAfter != 0 || len(r.BookendStart) != 0 || r.BookendStart == nil {
			t.Fatalf("lower result: %+v", r)
		}
	}
}

// The top result's window: ±window user/assistant messages, the anchor kept, bookends outside.
func TestDiscoverHydratesTopResult(t *testing.T) {
	t.Parallel()
	w := seed(t)
	var d Discovery
	decode(t, run(t, w, "current", `{"query":"deploy staging","window":2}`), &d)
	if d.Count == 0 {
		t.Fatalf("no results: %+v", d)
	}
	top := d.Results[0]
	if top.MatchMessageID != w.deployAsk && top.SessionID != "alpha-branch" {
		t.Fatalf("top hit %d in %s, want the deploy question", top.MatchMessageID, top.SessionID)
	}
	var got []string
	for _, m := range top.Messages {
		mark := ""
		if m.Anchor {
			mark = "*"
		}
		got = append(got, m.Role+":"+m.Content+mark)
	}
	want := []string{"user:warmup question 4", "assistant:warmup answer 4", "user:how do we deploy the frobnicator to staging?*",
		"assistant:[called tools: terminal]", "assistant:run bluegreen.sh with frobnicator.yaml"}
	if !slices.Equal(got, want) || top.MessagesBefore != 2 || top.MessagesAfter != 2 {
		t.Fatalf("window %q (before %d, after %d), want %q", got, top.MessagesBefore, top.MessagesAfter, want)
	}
	if len(top.BookendStart) != 3 || top.BookendStart[0].Content != "let us set up the repository layout first" ||
		len(top.BookendEnd) != 3 || top.BookendEnd[2].Content != "after the fork we chose the rollback plan" && top.SessionID == "alpha" {
		t.Fatalf("bookends %+v / %+v", top.BookendStart, top.BookendEnd)
	}
	// detail=full expands every result.
	decode(t, run(t, w, "current", `{"query":"frobnicator","detail":"full","limit":10}`), &d)
	for _, r := range d.Results {
		if r.Detail != "full" || r.MessagesBefore+r.MessagesAfter == 0 && r.SessionID != "kanban-1" && len(r.Messages) < 2 {
			t.Fatalf("full result: %+v", r)
		}
	}
}

func TestDiscoverLineage(t *testing.T) {
	t.Parallel()
	w := seed(t)
	cases := []struct {
		name, current, query string
		want                 []string // session ids, in order
		archived             bool
		sort                 string
	}{
		// The live part of the caller's own session is already in context.
		{"own live rows hidden", "current", "quokka", nil, false, ""},
		// What compaction archived is recoverable.
		{"own archived rows found", "current", "zanzibar", []string{"current"}, true, ""},
		{"others see live rows", "alpha", "quokka", []string{"current"}, false, ""},
		// A rotated-away parent has left live context; the live tip has not.
		{"rotated parent found from the tip", "rot-2", "wombat", []string{"rot-1"}, false, ""},
		{"whole chain visible elsewhere", "alpha", "wombat", []string{"rot-1"}, false, "oldest"},
		// The branch is its own lineage, but it holds copies of alpha's history up to the fork:
		// those copies are in its context, so alpha's originals are not offered back; what alpha
		// did after the fork is. (bravo's messages were stored before alpha's post-fork one.)
		{"branch does not get its copies back", "alpha-branch", "frobnicator crashed OR bluegreen OR staging", []string{"bravo"}, false, ""},
		{"branch sees parent's later work", "alpha-branch", "frobnicator crashed OR rollback", []string{"bravo", "alpha"}, false, "oldest"},
		{"branch sees parent's later work, newest first", "alpha-branch", "frobnicator crashed OR rollback", []string{"alpha", "bravo"}, false, "newest"},
		{"others see one of parent and branch", "current", "bluegreen", []string{"alpha"}, false, "oldest"},
		// Grouped by lineage, a result keeps the session that owns the hit.
		{"newest hit of a chain is in its tip", "alpha", "wombat", []string{"rot-2"}, false, "newest"},
		{"parent sees branch", "alpha", "canary", []string{"alpha-branch"}, false, ""},
		{"unknown current excludes nothing", "not-stored-yet", "zanzibar", []string{"current"}, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var d Discovery
			decode(t, run(t, w, c.current, fmt.Sprintf(`{"query":%q,"limit":10,"sort":%q}`, c.query, c.sort)), &d)
			var got []string
			for _, r := range d.Results {
				got = append(got, r.SessionID)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("sessions %v, want %v", got, c.want)
			}
			if len(d.Results) > 0 && d.Results[0].Archived != c.archived {
				t.Fatalf("archived = %v, want %v", d.Results[0].Archived, c.archived)
			}
			if len(d.Results) == 0 && (d.Message != NoMatchMessage || d.Results == nil) {
				t.Fatalf("empty answer: %+v", d)
			}
		})
	}
}

func TestDiscoverTitleMatch(t *testing.T) {
	t.Parallel()
	w := seed(t)
	var d Discovery
	decode(t, run(t, w, "current", "{\"query\":\"`deploy notes`\"}"), &d)
	if d.Count == 0 || d.Results[0].SessionID != "alpha" || d.Results[0].MatchedRole != "session_title" ||
		d.Results[0].Detail != "full" || d.Results[0].Messages[0].Content != "let us set up the repository layout first" {
		t.Fatalf("title match: %+v", d.Results)
	}
	// The caller's own live session is not offered back by title.
	decode(t, run(t, w, "current", `{"query":"current work"}`), &d)
	for _, r := range d.Results {
		if r.SessionID == "current" {
			t.Fatalf("own session offered by title: %+v", r)
		}
	}
	// An id prefix is not a title.
	decode(t, run(t, w, "current", `{"query":"alph"}`), &d)
	if d.Count != 0 {
		t.Fatalf("id prefix matched: %+v", d.Results)
	}
}

func TestScroll(t *testing.T) {
	t.Parallel()
	w := seed(t)
	var s Scrolled
	decode(t, run(t, w, "current", fmt.Sprintf(`{"session_id":"alpha","around_message_id":%d,"window":3}`, w.deployAsk)), &s)
	if !s.Success || s.Mode != ModeScroll || s.SessionID != "alpha" || s.MessagesBefore != 3 || s.MessagesAfter != 3 ||
		len(s.Messages) != 7 || !s.Messages[3].Anchor || s.Messages[3].ID != w.deployAsk || s.SessionMeta.Title != "deploy notes" ||
		s.SessionMeta.Model != "m1" || s.Window != 3 {
		t.Fatalf("scroll: %+v", s)
	}
	// At the session's start a side has fewer than window messages.
	decode(t, run(t, w, "current", fmt.Sprintf(`{"session_id":"alpha","around_message_id":%d,"window":3}`, w.alphaIDs[1])), &s)
	if s.MessagesBefore != 1 || s.MessagesAfter != 3 {
		t.Fatalf("boundary: before %d after %d", s.MessagesBefore, s.MessagesAfter)
	}
	// role_filter widens the window to tool rows.
	decode(t, run(t, w, "current", fmt.Sprintf(`{"session_id":"alpha","around_message_id":%d,"window":2,"role_filter":"user,assistant,tool"}`, w.deployAsk)), &s)
	if s.Messages[4].Role != "tool" || s.Messages[4].ToolName != "terminal" {
		t.Fatalf("tool rows: %+v", s.Messages)
	}
	// Archived rows of the caller's own session can be scrolled.
	decode(t, run(t, w, "current", fmt.Sprintf(`{"session_id":"current","around_message_id":%d}`, w.archivedOwn)), &s)
	if !s.Success || !s.Messages[0].Archived || !s.Messages[0].Anchor {
		t.Fatalf("archived anchor: %+v", s)
	}
	// An anchor in a continuation is rebound to it, with a warning.
	decode(t, run(t, w, "alpha", fmt.Sprintf(`{"session_id":"rot-1","around_message_id":%d}`, w.rotTipHit)), &s)
	if !s.Success || s.SessionID != "rot-2" || !strings.Contains(s.Warning, "which continues rot-1") {
		t.Fatalf("rebind: %+v", s)
	}
}

func TestBadInputGivesErrorPayload(t *testing.T) {
	t.Parallel()
	w := seed(t)
	cases := []struct {
		name, current, args, want string
	}{
		{"non-integer anchor", "current", `{"session_id":"alpha","around_message_id":"seven"}`, `around_message_id must be a positive integer message id, got "seven"`},
		{"unknown session", "current", `{"session_id":"nope","around_message_id":3}`, `unknown session_id "nope"`},
		{"unknown session read", "current", `{"session_id":"nope"}`, `unknown session_id "nope"`},
		{"ambiguous session", "current", `{"session_id":"r"}`, `session_id "r" is ambiguous: matches rot-1, rot-2`},
		{"anchor not in session", "current", fmt.Sprintf(`{"session_id":"bravo","around_message_id":%d}`, w.deployAsk), fmt.Sprintf("around_message_id %d not in session_id bravo", w.deployAsk)},
		{"anchor in live context", "current", fmt.Sprintf(`{"session_id":"current","around_message_id":%d}`, w.activeOwn),
			"scroll rejected: anchor lives in the current session lineage (already in your active context)"},
		{"anchor in live tip", "rot-2", fmt.Sprintf(`{"session_id":"rot-2","around_message_id":%d}`, w.rotTipHit), "scroll rejected"},
		{"unknown role", "current", `{"query":"x","role_filter":"robot"}`, `unknown role "robot"`},
		{"not an object", "current", `"frobnicator"`, "arguments are not a valid JSON object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := run(t, w, c.current, c.args)
			var f Failure
			decode(t, out, &f)
			if f.Success || !strings.Contains(f.Error, c.want) || strings.Contains(f.Error, "\n") {
				t.Fatalf("answer %s, want error %q", out, c.want)
			}
		})
	}
	// The rotated parent is out of live context: scrolling it from the tip is allowed.
	var s Scrolled
	decode(t, run(t, w, "rot-2", fmt.Sprintf(`{"session_id":"rot-1","around_message_id":%d}`, w.rotParentHit)), &s)
	if !s.Success {
		t.Fatalf("scroll into a rotated parent refused: %+v", s)
	}
}

func TestRead(t *testing.T) {
	t.Parallel()
	w := seed(t)
	var r Reading
	decode(t, run(t, w, "current", `{"session_id":"bravo"}`), &r)
	if !r.Success || r.Mode != ModeRead || r.MessageCount != 2 || len(r.Messages) != 2 || r.Omitted != 0 || r.Messages[0].Content != "the frobnicator crashed in prod" {
		t.Fatalf("read: %+v", r)
	}
	// A title works as a reference too.
	decode(t, run(t, w, "current", `{"session_id":"long haul"}`), &r)
	if r.SessionID != "large" || r.MessageCount != 70 || len(r.Messages) != 30 || r.Omitted != 40 ||
		r.Messages[0].Content != "large ask 00" || r.Messages[19].Content != "large answer 09" ||
		r.Messages[20].Content != "large ask 30" || r.Messages[29].Content != "large answer 34" ||
		!strings.Contains(r.Message, "first 20 and last 10 of 70") {
		t.Fatalf("large read: count %d shown %d omitted %d %q", r.MessageCount, len(r.Messages), r.Omitted, r.Message)
	}
	// The caller's own compacted session reads back whole, archived rows included.
	decode(t, run(t, w, "current", `{"session_id":"current"}`), &r)
	if r.Messages[0].Content != "first we discussed the zanzibar migration" || !r.Messages[0].Archived {
		t.Fatalf("own read: %+v", r.Messages)
	}
}

func TestBrowse(t *testing.T) {
	t.Parallel()
	w := seed(t)
	var b Browsing
	decode(t, run(t, w, "current", `{"limit":10}`), &b)
	var got []string
	for _, s := range b.Results {
		got = append(got, s.SessionID)
	}
	// Newest activity first; no kanban, not the caller's session; the rotation chain lists once.
	want := []string{"large", "rot-1", "alpha-branch", "cron-1", "alpha", "bravo"}
	if !slices.Equal(got, want) || b.Count != 6 || !strings.HasPrefix(b.Message, "Showing 6 most recent sessions") {
		t.Fatalf("browse %v, want %v (%s)", got, want, b.Message)
	}
	if b.Results[1].TipSessionID != "rot-2" || b.Results[0].MessageCount != 105 || b.Results[0].Preview == "" || b.Results[0].Title != "long haul" {
		t.Fatalf("items: %+v", b.Results[:2])
	}
	// From inside the rotation chain, the chain itself is left out.
	decode(t, run(t, w, "rot-2", `{"limit":2}`), &b)
	if len(b.Results) != 2 || b.Results[0].SessionID != "large" || b.Results[1].SessionID != "current" {
		t.Fatalf("browse from the tip: %+v", b.Results)
	}
	// Default limit is 3.
	decode(t, run(t, w, "current", `{}`), &b)
	if b.Count != 3 {
		t.Fatalf("default browse count %d", b.Count)
	}
}

// Answers are deterministic bytes: the same question gives the same JSON.
func TestAnswersAreStable(t *testing.T) {
	t.Parallel()
	w := seed(t)
	for _, args := range []string{`{"query":"frobnicator"}`, `{}`, `{"session_id":"alpha"}`,
		fmt.Sprintf(`{"session_id":"alpha","around_message_id":%d}`, w.deployAsk)} {
		a, b := run(t, w, "current", args), run(t, w, "current", args)
		if !bytes.Equal(a, b) || !json.Valid(a) {
			t.Fatalf("%s: unstable or invalid answer\n%s\n%s", args, a, b)
		}
		if !bytes.HasPrefix(a, []byte(`{"success":true,"mode":`)) {
			t.Fatalf("%s: key order: %.60s", args, a)
		}
	}
}

// Huge messages are cut so a window stays bounded.
func TestOutputBounded(t *testing.T) {
	t.Parallel()
	w := seed(t)
	if _, err := w.st.CreateSession(bg, store.NewSession{ID: "paste", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("lorem ipsum ", 5_000) // 60 KB, far above any per-message bound
	var ms []store.Message
	for range 41 {
		ms = append(ms, store.Message{Role: "user", Content: "needle " + huge}, store.Message{Role: "assistant", Content: huge})
	}
	if _, err := w.st.AppendBatch(bg, "paste", ms); err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{`{"query":"needle","window":20,"detail":"full","limit":10}`, `{"session_id":"paste"}`} {
		out := run(t, w, "current", args)
		if len(out) > 48*1024 || !json.Valid(out) {
			t.Fatalf("%s: %d bytes", args, len(out))
		}
		if !bytes.Contains(out, []byte("more characters]")) {
			t.Fatalf("%s: no cut marker", args)
		}
	}
}

// TestParseArgsDetail: the configured default detail (recall.detail) applies only when the
// model names none.
func TestParseArgsDetail(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, args, def string
		summary, full   bool
	}{
		{"no default", `{"query":"x"}`, "", false, false},
		{"adaptive default", `{"query":"x"}`, "adaptive", false, false},
		{"summary default", `{"query":"x"}`, "summary", true, false},
		{"blank detail takes the default", `{"query":"x","detail":"  "}`, "summary", true, false},
		{"model's full wins", `{"query":"x","detail":"full"}`, "summary", false, true},
		{"model's adaptive wins", `{"query":"x","detail":"adaptive"}`, "summary", false, false},
		{"model's summary without default", `{"query":"x","detail":"summary"}`, "adaptive", true, false},
	}
	for _, c := range cases {
		r, err := ParseArgsDetail("cur", json.RawMessage(c.args), c.def)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if r.Summary != c.summary || r.Full != c.full {
			t.Errorf("%s: summary=%v full=%v, want %v %v", c.name, r.Summary, r.Full, c.summary, c.full)
		}
	}
}

// TestDiscoverQuestion: a question in plain words finds its answer though the answer holds only
// some of its words (in other forms), the result names the words it holds, and a search that
// finds nothing says how to search wider.
func TestDiscoverQuestion(t *testing.T) {
	t.Parallel()
	w := seed(t)
	var d Discovery
	decode(t, run(t, w, "current", `{"query":"how did we deploy the frobnicator to staging?","limit":10}`), &d)
	if d.Count == 0 {
		t.Fatalf("the question found nothing: %+v", d)
	}
	top := d.Results[0]
	if top.MatchMessageID != w.deployAsk || !slices.Equal(top.MatchedTerms, []string{"deploy", "frobnicator", "staging"}) {
		t.Fatalf("top result %d with terms %v, want message %d with deploy, frobnicator, staging", top.MatchMessageID, top.MatchedTerms, w.deployAsk)
	}
	decode(t, run(t, w, "current", `{"query":"frobnicators crashing","limit":10}`), &d)
	if !slices.ContainsFunc(d.Results, func(r Result) bool {
		return r.MatchMessageID == w.bravoHit && slices.Equal(r.MatchedTerms, []string{"frobnicators", "crashing"})
	}) {
		t.Fatalf("other word forms: %+v", d.Results)
	}
	decode(t, run(t, w, "current", `{"query":"xylophone quasar"}`), &d)
	if d.Count != 0 || d.Message != NoMatchMessage || !strings.Contains(d.Message, "wider") {
		t.Fatalf("empty answer: %+v", d)
	}
}
