package turn_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
	"github.com/spoolhq/spool/turn"
)

// Child processes: the test binary re-executed with childEnv naming a role, so the concurrency
// tests run real OS processes against one SQLite file.
const (
	childEnv     = "SPOOL_TURN_TEST_CHILD"
	childArgsEnv = "SPOOL_TURN_TEST_ARGS"
)

// childArgs configure a child; they travel as JSON in childArgsEnv.
type childArgs struct {
	DB      string
	Session string
	Name    string // prefix of the child's message contents ("p3")
	Turns   int
	TTL     time.Duration
	Renew   time.Duration
	Poll    time.Duration
	Holder  string
	Partial bool // hold: flush step0 and step1 (the tool call) before reporting
	Count   int  // append: how many messages
}

// holdReport is the hold child's first line.
type holdReport struct {
	Holder     string
	Generation int64
	ExpiresNS  int64
}

// flushReport is the hold child's answer to "flush".
type flushReport struct {
	FlushErr   string
	FlushLost  bool // errors.Is(flush error, store.ErrLeaseLost)
	CtxDone    bool
	Cause      string
	CauseLost  bool // the context's cause is a *turn.LeaseLostError
	EndErr     string
	Persisted  int
	Generation int64
}

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		var a childArgs
		if err := json.Unmarshal([]byte(os.Getenv(childArgsEnv)), &a); err != nil {
			fmt.Fprintln(os.Stderr, "turn test child: bad args:", err)
			os.Exit(2)
		}
		if err := runChild(role, a); err != nil {
			fmt.Fprintf(os.Stderr, "turn test child %s %s: %v\n", role, a.Name, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child is a running child process with its stdin and line-oriented stdout.
type child struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines *bufio.Scanner
}

func startChild(t *testing.T, role string, a childArgs) *child {
	t.Helper()
	b, _ := json.Marshal(a)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+role, childArgsEnv+"="+string(b))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return &child{cmd: cmd, in: in, lines: bufio.NewScanner(out)}
}

// line reads the child's next stdout line, failing the test when the child exits first.
func (c *child) line(t *testing.T) string {
	t.Helper()
	if !c.lines.Scan() {
		t.Fatalf("child exited early: %v", c.lines.Err())
	}
	return c.lines.Text()
}

func (c *child) json(t *testing.T, v any) {
	t.Helper()
	l := c.line(t)
	if err := json.Unmarshal([]byte(l), v); err != nil {
		t.Fatalf("child line %q: %v", l, err)
	}
}

func (c *child) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func runChild(role string, a childArgs) error {
	ctx := context.Background()
	if role == "lock" {
		return holdWriteLock(ctx, a.DB)
	}
	db, err := sqlite.Open(ctx, a.DB, sqlite.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	o := turn.Options{TTL: a.TTL, RenewEvery: a.Renew, Poll: a.Poll, Holder: a.Holder, Wait: time.Minute}
	out := json.NewEncoder(os.Stdout)
	switch role {
	case "turns":
		for k := range a.Turns {
			err := turn.Run(ctx, db, a.Session, o, func(ctx context.Context, t *turn.Turn) error {
				return playTurn(ctx, db, t, a.Name, k, 2*time.Millisecond)
			})
			if err != nil {
				return fmt.Errorf("turn %d: %w", k, err)
			}
			fmt.Println(k + 1)
		}
		return nil
	case "hold":
		t, err := turn.Begin(ctx, db, a.Session, o)
		if err != nil {
			return err
		}
		steps := turnSteps(a.Name, 0)
		if a.Partial {
			t.Add(steps[:2]...)
			if err := t.Flush(ctx); err != nil {
				return err
			}
			steps = steps[2:]
		}
		l := t.Lease()
		if err := out.Encode(holdReport{Holder: l.Holder, Generation: l.Generation, ExpiresNS: l.ExpiresAt.UnixNano()}); err != nil {
			return err
		}
		in := bufio.NewScanner(os.Stdin)
		if !in.Scan() || in.Text() != "flush" {
			return errors.New("expected the line flush")
		}
		var r flushReport
		t.Add(steps...)
		if err := t.Flush(ctx); err != nil {
			r.FlushErr, r.FlushLost = err.Error(), errors.Is(err, store.ErrLeaseLost)
		}
		if t.Context().Err() != nil {
			cause := context.Cause(t.Context())
			var lost *turn.LeaseLostError
			r.CtxDone, r.Cause, r.CauseLost = true, cause.Error(), errors.As(cause, &lost)
		}
		r.Generation = t.Lease().Generation
		if err := t.End(ctx); err != nil {
			r.EndErr = err.Error()
		}
		r.Persisted = len(t.Persisted())
		return out.Encode(r)
	case "append":
		// Unfenced appends (another writer, e.g. a gateway delivery) with a progress line each.
		for i := range a.Count {
			if _, err := db.Append(ctx, a.Session, store.Message{Role: store.RoleUser, Content: fmt.Sprintf("%s %d", a.Name, i)}); err != nil {
				return err
			}
			fmt.Println(i + 1)
			time.Sleep(3 * time.Millisecond)
		}
		return nil
	}
	return fmt.Errorf("unknown role %q", role)
}

// holdWriteLock is another process holding SQLite's write lock on path (BEGIN IMMEDIATE, as a
// writer stopped mid-transaction does, or a sqlite3 shell left in a transaction): it prints
// "held", then keeps the lock until its stdin says "release", and prints "released".
func holdWriteLock(ctx context.Context, path string) error {
	driver := ""
	for _, d := range sql.Drivers() {
		if d == "sqlite" || d == "sqlite3_spool" { // the default build's, the sqlite_cgo build's
			driver = d
		}
	}
	db, err := sql.Open(driver, "file:"+path)
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	fmt.Println("held")
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "release" {
		return errors.New("expected the line release")
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		return err
	}
	fmt.Println("released")
	return nil
}

// turnSteps are the four messages of one turn: ask, tool call, tool result, answer.
func turnSteps(name string, k int) []store.Message {
	call := fmt.Sprintf("%s-t%d", name, k)
	return []store.Message{
		{Role: store.RoleUser, Content: fmt.Sprintf("%s t%d step0", name, k)},
		{Role: store.RoleAssistant, Content: fmt.Sprintf("%s t%d step1", name, k),
			ToolCalls: []store.ToolCall{{ID: call, Type: "function", Function: store.ToolFunction{Name: "terminal", Arguments: `{"cmd":"ls"}`}}}},
		{Role: store.RoleTool, Content: fmt.Sprintf("%s t%d step2", name, k), ToolCallID: call, ToolName: "terminal"},
		{Role: store.RoleAssistant, Content: fmt.Sprintf("%s t%d step3", name, k)},
	}
}

// playTurn is one turn as an agent runs it: reload, then flush each step as it is produced. The
// reloaded history must end with a whole turn: a turn that began while another was still
// writing would see a half turn here.
func playTurn(ctx context.Context, db store.Backend, t *turn.Turn, name string, k int, pause time.Duration) error {
	hist, err := db.Conversation(ctx, t.SessionID(), store.ViewActive)
	if err != nil {
		return err
	}
	if n := len(hist); n > 0 && !strings.HasSuffix(hist[n-1].Content, "step3") {
		return fmt.Errorf("reloaded history ends mid-turn with %q", hist[n-1].Content)
	}
	steps := turnSteps(name, k)
	for i, m := range steps {
		t.Add(m)
		if i == len(steps)-1 {
			break // End flushes the answer
		}
		if err := t.Flush(ctx); err != nil {
			return err
		}
		time.Sleep(pause)
	}
	return nil
}

// openDB opens a fresh database in a temp dir with one session "conv".
func openDB(t *testing.T) (*sqlite.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spool.db")
	db := reopen(t, path)
	if _, err := db.CreateSession(context.Background(), store.NewSession{ID: "conv"}); err != nil {
		t.Fatal(err)
	}
	return db, path
}

func reopen(t *testing.T, path string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func conversation(t *testing.T, db store.Backend, v store.View) []store.Message {
	t.Helper()
	ms, err := db.Conversation(context.Background(), "conv", v)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func contents(ms []store.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Content
	}
	return out
}

// checkTurns parses a transcript of "<name> t<k> step<i>" rows: every turn's steps appear in
// order and contiguously (never interleaved with another turn), each turn at most once, every
// tool result follows its call, and only the last turn of a killed writer may be incomplete
// (allowed says which names may have one). It returns the whole turns per name.
func checkTurns(t *testing.T, ms []store.Message, allowPartial map[string]bool) map[string]int {
	t.Helper()
	whole := map[string]int{}
	seen := map[string]bool{}
	calls := map[string]bool{}
	var cur string // the turn in progress ("p1 t3"), "" between turns
	step := 0
	for i, m := range ms {
		f := strings.Fields(m.Content)
		if len(f) != 3 || !strings.HasPrefix(f[2], "step") {
			t.Fatalf("row %d: unexpected content %q", i, m.Content)
		}
		id, s := f[0]+" "+f[1], int(f[2][4]-'0')
		if s == 0 {
			if cur != "" {
				name := strings.Fields(cur)[0]
				if !allowPartial[name] {
					t.Fatalf("row %d: turn %q starts while %q is at step %d (interleaved or cut)", i, id, cur, step)
				}
				allowPartial[name] = false // one cut turn per killed writer
			}
			if seen[id] {
				t.Fatalf("row %d: turn %q appears twice", i, id)
			}
			seen[id], cur, step = true, id, 0
			continue
		}
		if id != cur || s != step+1 {
			t.Fatalf("row %d: %q follows %q step %d (interleaved, lost or duplicated)", i, m.Content, cur, step)
		}
		step = s
		switch m.Role {
		case store.RoleAssistant:
			for _, c := range m.ToolCalls {
				calls[c.ID] = true
			}
		case store.RoleTool:
			if !calls[m.ToolCallID] {
				t.Fatalf("row %d: tool result %q without its call", i, m.ToolCallID)
			}
		}
		if s == 3 {
			whole[f[0]]++
			cur = ""
		}
	}
	return whole
}
