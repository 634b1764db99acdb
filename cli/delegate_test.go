package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spoolhq/spool/store"
)

type delegateOut struct {
	SessionID string `json:"session_id"`
	Status    string `json:"status"`
	Answer    string `json:"answer"`
	Error     string `json:"error"`
}

func delegateLine(t *testing.T, args map[string]any) string {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return "CALL delegate " + string(b)
}

// delegations are the delegate results stored in a session, in order.
func delegations(t *testing.T, home, sid string) []delegateOut {
	t.Helper()
	var out []delegateOut
	withStore(t, home, func(st store.Backend) {
		ms := check(st.Conversation(context.Background(), sid, store.ViewActive))(t)
		for _, m := range ms {
			if m.Role == store.RoleTool && m.ToolName == "delegate" {
				var d delegateOut
				if err := json.Unmarshal([]byte(m.Content), &d); err != nil {
					t.Fatalf("delegate result is not JSON: %v\n%s", err, m.Content)
				}
				out = append(out, d)
			}
		}
	})
	return out
}

// The delegate tool through the real binary: two delegations in one turn, each a child session
// hidden from listings, search, session_search and --continue, yet shown under its parent,
// resumable by id and exported with --tree; a child of `spool run` without --yes cannot approve.
func TestDelegateCLI(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	input := delegateLine(t, map[string]any{"goal": "SAY the quillwort index is missing"}) + "\n" +
		delegateLine(t, map[string]any{"goal": `CALL terminal {"command":"echo hi"}`})
	r := spool(t, home, "run", "--provider", "fake", "--json", input).ok(t, "run with delegations")
	parent := decode[runOut](t, r).SessionID
	ds := delegations(t, home, parent)
	if len(ds) != 2 || ds[0].Status != "completed" || ds[0].Answer != "the quillwort index is missing" {
		t.Fatalf("delegations = %+v", ds)
	}
	// No privilege escalation: the child's terminal call was refused like the parent's would be.
	if !strings.Contains(ds[1].Answer, "not approved") {
		t.Fatalf("a child of spool run without --yes ran a command: %+v", ds[1])
	}
	withStore(t, home, func(st store.Backend) {
		ms := check(st.Conversation(context.Background(), ds[1].SessionID, store.ViewActive))(t)
		if len(ms) != 4 || ms[2].Role != store.RoleTool || !strings.Contains(ms[2].Content, "pass --yes") {
			t.Fatalf("the child's terminal result: %+v", ms)
		}
	})
	kids := []string{ds[0].SessionID, ds[1].SessionID}

	list := decode[[]struct {
		ID string `json:"id"`
	}](t, spool(t, home, "--json", "sessions", "list").ok(t, "list"))
	if len(list) != 1 || list[0].ID != parent {
		t.Fatalf("sessions list = %+v, want only the parent", list)
	}
	all := decode[[]struct {
		ID string `json:"id"`
	}](t, spool(t, home, "--json", "sessions", "list", "--all").ok(t, "list --all"))
	if len(all) != 3 {
		t.Fatalf("sessions list --all = %+v", all)
	}
	// In the table, the children follow their parent, indented.
	table := strings.Split(spool(t, home, "sessions", "list", "--all").ok(t, "list --all").stdout, "\n")
	isKid := func(line string) bool {
		return strings.HasPrefix(line, "  "+kids[0]) || strings.HasPrefix(line, "  "+kids[1])
	}
	if len(table) < 4 || !strings.HasPrefix(table[1], parent) || !isKid(table[2]) || !isKid(table[3]) {
		t.Fatalf("sessions list --all does not nest the children under the parent:\n%s", strings.Join(table, "\n"))
	}
	show := decode[struct {
		ParentID string `json:"parent_id"`
		Relation string `json:"relation"`
		Source   string `json:"source"`
		Reason   string `json:"end_reason"`
	}](t, spool(t, home, "--json", "sessions", "show", kids[0]).ok(t, "show child"))
	if show.ParentID != parent || show.Relation != "delegate" || show.Source != "subagent" || show.Reason != "delegate_done" {
		t.Fatalf("child = %+v", show)
	}
	text := spool(t, home, "sessions", "show", parent).ok(t, "show parent").stdout
	for _, k := range kids {
		if !strings.Contains(text, k+" (delegate)") {
			t.Fatalf("sessions show of the parent does not list child %s:\n%s", k, text)
		}
	}

	// Search finds the child's words but ranks the child last.
	hits := decode[[]struct {
		SessionID string `json:"session_id"`
		Source    string `json:"source"`
	}](t, spool(t, home, "--json", "search", "quillwort").ok(t, "search"))
	if len(hits) < 2 || hits[0].SessionID != parent || hits[len(hits)-1].Source != "subagent" {
		t.Fatalf("search hits = %+v, want the parent first and the child last", hits)
	}

	// --continue goes on with the parent, --resume CHILD with the child.
	if got := decode[runOut](t, spool(t, home, "run", "--provider", "fake", "--json", "-c", "SAY again").ok(t, "continue")).SessionID; got != parent {
		t.Fatalf("--continue picked %s, want the parent %s", got, parent)
	}
	if got := decode[runOut](t, spool(t, home, "run", "--provider", "fake", "--json", "--resume", kids[0], "SAY more").ok(t, "resume child")).SessionID; got != kids[0] {
		t.Fatalf("--resume of the child ran in %s", got)
	}

	// session_search leaves the child out unless asked.
	ask := func(args string) string {
		line := `CALL session_search ` + args
		return decode[runOut](t, spool(t, home, "run", "--provider", "fake", "--json", line).ok(t, "session_search")).SessionID
	}
	for _, c := range []struct {
		args string
		want bool
	}{{`{"query":"missing"}`, false}, {`{"query":"missing","subagents":true}`, true}} {
		sid := ask(c.args)
		found := false
		withStore(t, home, func(st store.Backend) {
			for _, m := range check(st.Conversation(context.Background(), sid, store.ViewActive))(t) {
				if m.Role != store.RoleTool {
					continue
				}
				var d struct {
					Results []struct {
						SessionID string `json:"session_id"`
					} `json:"results"`
				}
				if err := json.Unmarshal([]byte(m.Content), &d); err != nil {
					t.Fatalf("session_search answer: %v\n%s", err, m.Content)
				}
				for _, r := range d.Results {
					found = found || r.SessionID == kids[0]
				}
			}
		})
		if found != c.want {
			t.Fatalf("session_search %s found the child: %v, want %v", c.args, found, c.want)
		}
	}

	// export --tree brings the children.
	out := filepath.Join(t.TempDir(), "tree.jsonl")
	spool(t, home, "sessions", "export", parent, "--tree", "-o", out).ok(t, "export --tree")
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kids {
		if !bytes.Contains(b, []byte(`"id":"`+k+`"`)) {
			t.Fatalf("export --tree lacks child %s", k)
		}
	}
	// ... and imports as the same tree elsewhere.
	other := t.TempDir()
	spool(t, other, "sessions", "import", out).ok(t, "import the tree")
	moved := decode[struct {
		ParentID string `json:"parent_id"`
		Relation string `json:"relation"`
	}](t, spool(t, other, "--json", "sessions", "show", kids[1]).ok(t, "show the imported child"))
	if moved.ParentID != parent || moved.Relation != "delegate" {
		t.Fatalf("imported child = %+v", moved)
	}
	one := filepath.Join(t.TempDir(), "one.jsonl")
	spool(t, home, "sessions", "export", parent, "-o", one).ok(t, "export")
	if b, _ := os.ReadFile(one); bytes.Contains(b, []byte(kids[0])) && !bytes.Contains(b, []byte(`"id":"`+parent+`"`)) {
		t.Fatal("export without --tree is wrong")
	} else if bytes.Contains(b, []byte(`"id":"`+kids[0]+`"`)) {
		t.Fatal("export without --tree brought a child")
	}
}

// Ctrl-C while a sub-agent's model call is under way (held at a fakellm barrier): spool run
// exits 130, the child ends with its reason and keeps its transcript, the parent stores a
// cancelled result naming the child and resumes normally.
func TestDelegateInterrupted(t *testing.T) {
	t.Parallel()
	url := startFakeLLM(t)
	home := t.TempDir()
	input := delegateLine(t, map[string]any{"goal": "WAIT held 2\nSAY never"})
	cmd := exec.Command(spoolBin, append([]string{"--home", home}, viaFake(url, "--json", input)...)...)
	cmd.Env = cleanEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Blocks until the child's model call has arrived at the barrier.
	resp, err := http.Get(url + "/fake/barrier?name=held&n=1")
	if err != nil {
		_ = cmd.Process.Kill()
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("spool run ended with %v, want exit 130\n%s", err, stderr.String())
	}
	var parent, child string
	withStore(t, home, func(st store.Backend) {
		ls := check(st.ListSessions(context.Background(), store.ListOptions{IncludeChildren: true}))(t)
		for _, l := range ls {
			if l.Relation == store.RelationDelegate {
				child = l.ID
				if l.EndReason != "delegate_cancelled" {
					t.Errorf("child ended %q", l.EndReason)
				}
				ms := check(st.Conversation(context.Background(), l.ID, store.ViewActive))(t)
				if len(ms) == 0 || !strings.Contains(ms[0].Content, "WAIT held") {
					t.Errorf("the child's transcript was lost")
				}
			} else {
				parent = l.ID
			}
		}
	})
	ds := delegations(t, home, parent)
	if len(ds) != 1 || ds[0].Status != "cancelled" || ds[0].SessionID != child || child == "" {
		t.Fatalf("delegations = %+v (child %q)", ds, child)
	}
	r := spool(t, home, viaFake(url, "--json", "--resume", parent, "SAY back")...).ok(t, "resume after the interrupt")
	if o := decode[runOut](t, r); o.Reply != "back" || !slices.Contains([]string{parent}, o.SessionID) {
		t.Fatalf("resume = %+v", o)
	}
}
