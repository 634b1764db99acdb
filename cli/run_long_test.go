package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/spoolhq/spool/provider/fake"
)

// bodyRecorder serves provider/fake over HTTP and keeps the agent's request bodies (those that
// offer tools; summary calls offer none).
type bodyRecorder struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (r *bodyRecorder) serve(t *testing.T) string {
	h := fake.New(fake.Config{}).Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if req.URL.Path == "/v1/chat/completions" && bytes.Contains(body, []byte(`"tools":`)) {
			r.mu.Lock()
			r.bodies = append(r.bodies, body)
			r.mu.Unlock()
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

type wireReq struct {
	Tools    json.RawMessage
	Messages []json.RawMessage
}

func parseWire(t *testing.T, b []byte) wireReq {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	w := wireReq{Tools: m["tools"]}
	if err := json.Unmarshal(m["messages"], &w.Messages); err != nil {
		t.Fatal(err)
	}
	return w
}

// extendsWire reports whether cur repeats every byte of prev's tools and messages, in order.
func extendsWire(prev, cur wireReq) bool {
	if !bytes.Equal(prev.Tools, cur.Tools) || len(cur.Messages) < len(prev.Messages) {
		return false
	}
	for i := range prev.Messages {
		if !bytes.Equal(prev.Messages[i], cur.Messages[i]) {
			return false
		}
	}
	return true
}

// segment is the model requests one spool process sent on one line of a conversation.
type segment struct {
	what        string
	bodies      [][]byte
	compactions int
}

// take returns the bodies recorded since the last take.
func (r *bodyRecorder) take(from *int) [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.bodies[*from:]
	*from = len(r.bodies)
	return out
}

// checkLine walks one line's requests in order: each repeats its predecessor's tools and
// messages byte for byte, except once per compaction, and the first request of every new
// process repeats the last one of the process before it unless that turn compacted.
func checkLine(t *testing.T, name string, segs []segment) (requests, compactions int, systems map[string]bool) {
	t.Helper()
	systems = map[string]bool{}
	var prev *wireReq
	rewritten := 0
	for _, sg := range segs {
		compactions += sg.compactions
		for j, b := range sg.bodies {
			w := parseWire(t, b)
			systems[string(w.Messages[0])] = true
			if prev != nil && !extendsWire(*prev, w) {
				rewritten++
				if j == 0 && sg.compactions == 0 {
					t.Errorf("%s: the first request of %s does not repeat the previous process's last request byte for byte", name, sg.what)
				}
			}
			prev = &w
			requests++
		}
	}
	if rewritten != compactions {
		t.Errorf("%s: %d requests did not repeat their predecessor's bytes, but %d compactions happened", name, rewritten, compactions)
	}
	return requests, compactions, systems
}

// TestLongSessionAcrossProcesses runs a 200-turn tool-heavy session with automatic compactions:
// 170 turns typed into one spool chat process, then 30 turns each in its own spool run process
// (so each is a resume in a new process), then a /branch in a new chat process and both lines
// continued by alternating spool run processes. On every line each request repeats the previous
// one byte for byte (across process boundaries too), except once per compaction.
func TestLongSessionAcrossProcesses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a 200-turn session through 40 spool processes; run without -short")
	}
	rec := &bodyRecorder{}
	url := rec.serve(t)
	home := t.TempDir()
	env := []string{"SPOOL_COMPRESSION_THRESHOLD_TOKENS=6000"}
	window := []string{"--context-length", "20000"}
	const chatTurns, runTurns = 170, 30
	taken := 0

	// One chat process: one line per turn, so one tool call per turn.
	var typed strings.Builder
	for i := range chatTurns {
		switch i % 5 {
		case 0:
			fmt.Fprintf(&typed, "CALL read_file {\"path\":\"doc.go\",\"offset\":%d}\n", 1+i%4)
		case 1:
			typed.WriteString("CALL list_files {}\n")
		case 2:
			fmt.Fprintf(&typed, "CALL search_files {\"pattern\":\"func\",\"path\":\"run.go\"}\n")
		case 3:
			fmt.Fprintf(&typed, "Turn %d: what did we learn so far?\n", i)
		default:
			fmt.Fprintf(&typed, "SAY noted %d\n", i)
		}
	}
	chatArgs := append([]string{"chat", "--provider", "openai", "--base-url", url + "/v1", "--model", "fake-model"}, window...)
	r := spoolEnv(t, home, typed.String(), env, chatArgs...).ok(t, "chat")
	// Error lines start with "spool: "; tool results shown under their calls are indented and
	// may quote spool's source.
	if n := len(regexp.MustCompile(`(?m)^spool: `).FindAllString(r.stderr, -1)); n > 0 {
		t.Fatalf("%d errors in the chat:\n%s", n, r.stderr)
	}
	trunk := []segment{{what: "the chat", bodies: rec.take(&taken), compactions: strings.Count(r.stderr, "(Compacted ")}}
	ls := decode[[]struct {
		ID string `json:"id"`
	}](t, spool(t, home, "sessions", "list", "--json").ok(t, "list"))
	if len(ls) != 1 {
		t.Fatalf("%d sessions after the chat, want 1", len(ls))
	}
	sid := ls[0].ID

	type runResult struct {
		runOut
		Compactions int `json:"compactions"`
		Breaks      []struct {
			Reason string `json:"reason"`
		} `json:"cache_breaks"`
	}
	// run is one turn in its own process; it returns what the process sent.
	run := func(session, input, what string) segment {
		t.Helper()
		args := viaFake(url, append(append([]string{"--json"}, window...), "--resume", session, input)...)
		out := decode[runResult](t, spoolEnv(t, home, "", env, args...).ok(t, what))
		if out.SessionID != session {
			t.Fatalf("%s answered in %s, want %s", what, out.SessionID, session)
		}
		for _, b := range out.Breaks {
			if b.Reason != "compaction" {
				t.Errorf("%s: cache break %q across processes", what, b.Reason)
			}
		}
		return segment{what: what, bodies: rec.take(&taken), compactions: out.Compactions}
	}
	runInput := func(i int) string {
		if i%2 == 0 {
			return fmt.Sprintf("CALL list_files {}\nCALL read_file {\"path\":\"doc.go\",\"offset\":%d}", 1+i%3)
		}
		return fmt.Sprintf("Turn %d: and now?", chatTurns+i)
	}
	for i := range runTurns {
		trunk = append(trunk, run(sid, runInput(i), fmt.Sprintf("run turn %d", chatTurns+i)))
	}

	// Branch in a new chat process and take one turn on the branch there.
	r = spoolEnv(t, home, "/branch side line\nCALL read_file {\"path\":\"chat.go\"}\n", env,
		append(chatArgs, "--resume", sid)...).ok(t, "branch chat")
	m := regexp.MustCompile(`Branched (\S+) into (\S+);`).FindStringSubmatch(r.stdout)
	if m == nil || m[1] != sid {
		t.Fatalf("no branch of %s in:\n%s\n%s", sid, r.stdout, r.stderr)
	}
	child := m[2]
	side := append(slices.Clone(trunk), segment{what: "the branching chat", bodies: rec.take(&taken), compactions: strings.Count(r.stderr, "(Compacted ")})
	// Both lines go on, alternating processes.
	for i := range 4 {
		trunk = append(trunk, run(sid, fmt.Sprintf("SAY main %d", i), fmt.Sprintf("main-line run %d", i)))
		side = append(side, run(child, fmt.Sprintf("CALL list_files {}\nSAY side %d", i), fmt.Sprintf("branch run %d", i)))
	}

	reqs, compactions, systems := checkLine(t, "main line", trunk)
	if compactions < 3 {
		t.Errorf("%d compactions on the main line, want several", compactions)
	}
	if len(systems) != 2 {
		t.Errorf("%d distinct system prompts on the main line, want 2 (before and after the first compaction's note)", len(systems))
	}
	sideReqs, sideCompactions, _ := checkLine(t, "branch", side)

	// Both lines hold their own last turns; the parent has none of the branch's.
	parent := decode[shownMessages](t, spool(t, home, "sessions", "show", sid, "--json").ok(t, "show parent"))
	branch := decode[shownMessages](t, spool(t, home, "sessions", "show", child, "--json").ok(t, "show branch"))
	lastOf := func(s shownMessages) string { return s.Messages[len(s.Messages)-1].Content }
	if lastOf(parent) != "main 3" || lastOf(branch) != "side 3" || strings.Contains(fmt.Sprint(parent.Messages), "side ") {
		t.Errorf("parent ends %q, branch ends %q", lastOf(parent), lastOf(branch))
	}
	t.Logf("main line: %d turns, %d requests, %d compactions; branch: %d requests, %d compactions (shared history included)",
		chatTurns+runTurns+4, reqs, compactions, sideReqs, sideCompactions)
}
