package storetest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

const childEnv = "SPOOL_STORETEST_CHILD"

// Main is the TestMain of a backend's test package: in a child process started by the suite it
// runs the child's role against open and exits; otherwise it runs the tests.
func Main(m *testing.M, open func(ctx context.Context, dsn string) (store.Backend, error)) {
	if role := os.Getenv(childEnv); role != "" {
		if err := runChild(role, open); err != nil {
			fmt.Fprintln(os.Stderr, "storetest child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startChild runs this test binary as a child process in the given role.
func startChild(t *testing.T, role, dsn string, args ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+role, "SPOOL_STORETEST_DSN="+dsn, "SPOOL_STORETEST_ARGS="+strings.Join(args, ","))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, bufio.NewScanner(out)
}

func runChild(role string, open func(ctx context.Context, dsn string) (store.Backend, error)) error {
	ctx := context.Background()
	st, err := open(ctx, os.Getenv("SPOOL_STORETEST_DSN"))
	if err != nil {
		return err
	}
	defer st.Close()
	args := strings.Split(os.Getenv("SPOOL_STORETEST_ARGS"), ",")
	switch role {
	case "append":
		// args: worker, count. Appends alternately to the shared session and the worker's own.
		worker, count := args[0], atoi(args[1])
		own := "own-" + worker
		if _, err := st.CreateSession(ctx, store.NewSession{ID: own}); err != nil {
			return err
		}
		fmt.Println("ready")
		for i := 0; i < count; i++ {
			for _, sid := range []string{"shared", own} {
				if _, err := st.Append(ctx, sid, store.Message{Role: store.RoleUser, Content: fmt.Sprintf("%s-%d", worker, i)}); err != nil {
					return fmt.Errorf("append %s %d: %w", sid, i, err)
				}
			}
		}
		fmt.Println("done")
		return nil
	case "turns":
		// Appends whole turns (user, calling assistant, tool result, answer) until killed,
		// printing the number of committed turns after each commit.
		for i := 0; ; i++ {
			call := fmt.Sprintf("call-%d", i)
			turn := []store.Message{
				{Role: store.RoleUser, Content: fmt.Sprintf("turn %d ask %s", i, strings.Repeat("x", 2000))},
				{Role: store.RoleAssistant, Content: fmt.Sprintf("turn %d calling", i), ToolCalls: []store.ToolCall{
					{ID: call, Type: "function", Function: store.ToolFunction{Name: "terminal", Arguments: `{"cmd":"ls"}`}}}},
				{Role: store.RoleTool, Content: fmt.Sprintf("turn %d result %s", i, strings.Repeat("y", 20000)), ToolCallID: call, ToolName: "terminal"},
				{Role: store.RoleAssistant, Content: fmt.Sprintf("turn %d answer", i)},
			}
			if _, err := st.AppendBatch(ctx, "victim", turn); err != nil {
				return err
			}
			fmt.Println(i + 1)
		}
	case "history":
		// args: op, session. One change to the session's history (testHistoryStaysCurrent).
		return changeHistory(ctx, st, args[0], args[1])
	}
	return fmt.Errorf("unknown role %q", role)
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func testConcurrentProcesses(t *testing.T, h Harness) {
	h.processes(t)
	st, dsn := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "shared"})
	const procs, per = 4, 100
	var scanners []*bufio.Scanner
	var cmds []*exec.Cmd
	for w := 0; w < procs; w++ {
		cmd, sc := startChild(t, "append", dsn, fmt.Sprint("w", w), fmt.Sprint(per))
		cmds = append(cmds, cmd)
		scanners = append(scanners, sc)
	}
	for i, sc := range scanners {
		for sc.Scan() {
		}
		if err := cmds[i].Wait(); err != nil {
			t.Fatalf("writer process %d failed: %v", i, err)
		}
	}
	shared := mustConversation(t, st, "shared", store.ViewActive)
	if len(shared) != procs*per {
		t.Fatalf("shared session has %d messages, want %d", len(shared), procs*per)
	}
	seen := map[string]bool{}
	next := map[string]int{}
	for _, m := range shared {
		if seen[m.Content] {
			t.Fatalf("duplicate message %q", m.Content)
		}
		seen[m.Content] = true
		w, i, _ := strings.Cut(m.Content, "-")
		if atoi(i) != next[w] {
			t.Fatalf("writer %s: message %s out of order (want %d)", w, i, next[w])
		}
		next[w]++
	}
	for w := 0; w < procs; w++ {
		expectCounts(t, st, fmt.Sprint("own-w", w), per, 0)
	}
	expectCounts(t, st, "shared", procs*per, 0)
	expectHealthy(t, st)
}

func testKilledMidWrite(t *testing.T, h Harness) {
	h.processes(t)
	st, dsn := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "victim"})
	// Two rounds: kill soon after start, and after a longer run.
	committed := 0
	for round, after := range []int{3, 40} {
		cmd, sc := startChild(t, "turns", dsn)
		// No deadline: under -race on a loaded machine 40 turns can take minutes. A writer that
		// stops reporting ends the scan (its output closes) and fails the round.
		last := 0
		for sc.Scan() {
			last = atoi(sc.Text())
			if last >= after {
				break
			}
		}
		if last < after {
			t.Fatalf("round %d: the writer exited after reporting %d turns (%v)", round, last, sc.Err())
		}
		// Let it get into its next write, then kill it without warning.
		time.Sleep(time.Duration(round+1) * 3 * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		committed += last
	}
	after := h.reopen(t, dsn)
	expectHealthy(t, after)
	ms := mustConversation(t, after, "victim", store.ViewActive)
	if len(ms)%4 != 0 {
		t.Fatalf("%d messages: a turn was half written", len(ms))
	}
	if len(ms)/4 < committed {
		t.Fatalf("%d whole turns stored, but %d were reported committed", len(ms)/4, committed)
	}
	calls := map[string]bool{}
	for i, m := range ms {
		switch i % 4 {
		case 1:
			if len(m.ToolCalls) != 1 {
				t.Fatalf("message %d: calling assistant lost its tool call", i)
			}
			calls[m.ToolCalls[0].ID] = true
		case 2:
			if m.Role != store.RoleTool || !calls[m.ToolCallID] || len(m.Content) < 20000 {
				t.Fatalf("message %d: orphan or truncated tool result (%q, %d bytes)", i, m.ToolCallID, len(m.Content))
			}
		}
	}
	expectCounts(t, after, "victim", len(ms), len(ms)/4)
}
