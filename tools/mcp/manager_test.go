package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/testbin"
	"github.com/spoolhq/spool/tools"
	"github.com/spoolhq/spool/tools/mcp"
)

// testServer is the path of the MCP server built from internal/testserver.
var testServer string

func TestMain(m *testing.M) {
	testbin.Main(m, map[string]*string{"github.com/spoolhq/spool/tools/mcp/internal/testserver": &testServer})
}

func start(t *testing.T, opts mcp.Options, servers ...mcp.Server) (*mcp.Manager, *tools.Registry) {
	t.Helper()
	m := mcp.Start(context.Background(), servers, opts)
	t.Cleanup(func() { m.Close() })
	reg, err := tools.New(m.Tools()...)
	if err != nil {
		t.Fatalf("registry: %v", err)
	}
	return m, reg
}

func stdio(name string, args ...string) mcp.Server {
	return mcp.Server{Name: name, Command: append([]string{testServer}, args...)}
}

var approve = tools.Env{Approver: tools.AutoApprove}

func TestStdioListAndCall(t *testing.T) {
	t.Parallel()
	m, reg := start(t, mcp.Options{}, stdio("t"))
	weird := mcp.ToolName("t", "weird.name/with spaces")
	want := []string{"mcp__t__add", "mcp__t__crash", "mcp__t__echo", "mcp__t__env", "mcp__t__fail", "mcp__t__grow", "mcp__t__hang", "mcp__t__zeta", weird}
	slices.Sort(want)
	if got := reg.Names(); !slices.Equal(got, want) {
		t.Fatalf("names = %v, want %v", got, want)
	}
	if !strings.HasPrefix(weird, "mcp__t__weird_name_with_spaces_") || len(weird) > 64 {
		t.Errorf("sanitised name = %q", weird)
	}
	for _, d := range reg.Definitions() {
		if !strings.HasPrefix(d.Description, "MCP server t: ") {
			t.Errorf("%s description = %q, want the server named first", d.Name, d.Description)
		}
	}
	cases := []struct {
		tool, args, want string
		isErr            bool
	}{
		{"mcp__t__echo", `{"text":"hi"}`, "echo: hi", false},
		{"mcp__t__add", `{"a":2,"b":3}`, "5", false},
		{weird, `{}`, "weird", false},
		{"mcp__t__fail", `{}`, "it went wrong on purpose", true},
		{"mcp__t__echo", `{"text":5}`, "invalid arguments", true},
	}
	for _, c := range cases {
		res := reg.Call(context.Background(), approve, c.tool, c.args)
		if res.IsError != c.isErr || !strings.Contains(res.Content, c.want) {
			t.Errorf("%s %s = %+v, want error=%v containing %q", c.tool, c.args, res, c.isErr, c.want)
		}
	}
	st := m.Status()
	if len(st) != 1 || st[0].State != mcp.Connected || len(st[0].Tools) != len(want) {
		t.Fatalf("status = %+v", st)
	}
}

func TestCallsNeedApproval(t *testing.T) {
	t.Parallel()
	_, reg := start(t, mcp.Options{}, stdio("t"))
	var asked []tools.ApprovalRequest
	record := func(_ context.Context, r tools.ApprovalRequest) error {
		asked = append(asked, r)
		return fmt.Errorf("%w: the user said no", tools.ErrDenied)
	}
	cases := []struct {
		name string
		env  tools.Env
		want string
	}{
		{"no approver", tools.Env{}, "non-interactive runs need --yes"},
		{"denied", tools.Env{Approver: record}, "the user said no"},
		{"spool run without --yes", tools.Env{Approver: tools.Deny("spool run cannot ask for approval; pass --yes to allow it")}, "pass --yes"},
	}
	for _, c := range cases {
		res := reg.Call(context.Background(), c.env, "mcp__t__echo", `{"text":"x"}`)
		if !res.IsError || !strings.Contains(res.Content, c.want) || strings.Contains(res.Content, "echo: x") {
			t.Errorf("%s: %+v, want a refusal containing %q", c.name, res, c.want)
		}
	}
	if len(asked) != 1 || asked[0].Tool != "mcp__t__echo" || !strings.Contains(asked[0].Question(), `mcp__t__echo {"text":"x"}`) {
		t.Errorf("approval requests = %+v", asked)
	}
}

func TestCrashingServerGivesErrorsAndRestartsAreBounded(t *testing.T) {
	t.Parallel()
	m, reg := start(t, mcp.Options{MaxRestarts: 2}, stdio("t"))
	ctx := context.Background()
	for round := 1; round <= 2; round++ {
		res := reg.Call(ctx, approve, "mcp__t__crash", `{}`)
		if !res.IsError || !strings.Contains(res.Content, "MCP server t") {
			t.Fatalf("round %d: crash = %+v, want an error result naming the server", round, res)
		}
		if round == 1 && !strings.Contains(res.Content, "restarted on the next call") {
			t.Errorf("round 1: crash = %q, want it to say the server restarts", res.Content)
		}
		if round < 2 {
			// The next call restarts the server.
			if res := reg.Call(ctx, approve, "mcp__t__echo", `{"text":"back"}`); res.IsError || res.Content != "echo: back" {
				t.Fatalf("round %d: echo after crash = %+v", round, res)
			}
		}
		if round == 2 {
			if res := reg.Call(ctx, approve, "mcp__t__echo", `{"text":"back"}`); res.IsError || res.Content != "echo: back" {
				t.Fatalf("echo after second crash = %+v", res)
			}
			// Both restarts are used: the third crash fails the server for good.
			res := reg.Call(ctx, approve, "mcp__t__crash", `{}`)
			if !res.IsError || !strings.Contains(res.Content, "gave up after 2 restarts") {
				t.Fatalf("third crash = %+v", res)
			}
		}
	}
	res := reg.Call(ctx, approve, "mcp__t__echo", `{"text":"x"}`)
	if !res.IsError || !strings.Contains(res.Content, "MCP server t failed") {
		t.Fatalf("echo on a failed server = %+v", res)
	}
	st := m.Status()[0]
	if st.State != mcp.Failed || st.Restarts != 2 || !strings.Contains(st.Error, "gave up") {
		t.Fatalf("status = %+v", st)
	}
}

func TestHungServerTimesOut(t *testing.T) {
	t.Parallel()
	m, reg := start(t, mcp.Options{CallTimeout: time.Second, MaxRestarts: -1}, stdio("t"))
	res := reg.Call(context.Background(), approve, "mcp__t__hang", `{}`)
	if !res.IsError || !strings.Contains(res.Content, "no answer within 1s") {
		t.Fatalf("hang = %+v, want a timeout error", res)
	}
	// No restarts allowed: the hung server is failed, and says why.
	if st := m.Status()[0]; st.State != mcp.Failed || !strings.Contains(st.Error, "did not answer") {
		t.Fatalf("status = %+v", st)
	}
}

func TestFailingServerDoesNotStopOthers(t *testing.T) {
	t.Parallel()
	m, reg := start(t, mcp.Options{}, stdio("bad", "-fail-start"), stdio("good"),
		mcp.Server{Name: "nothing"})
	st := m.Status()
	if len(st) != 3 || st[0].State != mcp.Failed || !strings.Contains(st[0].Error, "refusing to start") ||
		st[1].State != mcp.Connected || st[2].State != mcp.Failed || !strings.Contains(st[2].Error, "neither command nor url") {
		t.Fatalf("status = %+v", st)
	}
	for _, n := range reg.Names() {
		if !strings.HasPrefix(n, "mcp__good__") {
			t.Errorf("tool %s from a failed server", n)
		}
	}
}

func TestServerEnvironment(t *testing.T) {
	t.Parallel()
	s := stdio("t")
	s.Env = map[string]string{"MCP_TEST_GIVEN": "1"}
	_, reg := start(t, mcp.Options{Environ: []string{"PATH=" + os.Getenv("PATH")}}, s)
	for name, want := range map[string]string{"MCP_TEST_GIVEN": "is set", "HOME_NOT_PASSED_MCP": "is not set"} {
		res := reg.Call(context.Background(), approve, "mcp__t__env", `{"name":"`+name+`"}`)
		if res.IsError || !strings.Contains(res.Content, want) {
			t.Errorf("env %s = %+v, want %q", name, res, want)
		}
	}
}

// The tools prefix is part of the prompt cache: two processes that see the same server lists
// must send the same bytes.
func TestDefinitionsAreByteStable(t *testing.T) {
	t.Parallel()
	defs := func(servers ...mcp.Server) []byte {
		all, err := tools.New(append(tools.Builtins(), mustTools(t, servers...)...)...)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(all.Definitions())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a := defs(stdio("a"), stdio("b"))
	b := defs(stdio("b"), stdio("a")) // configuration order does not matter either
	if !bytes.Equal(a, b) {
		t.Fatalf("definitions differ between two registries from the same servers:\n%s\n%s", a, b)
	}
	c := defs(stdio("a"), stdio("b", "-extra"))
	if bytes.Equal(a, c) || !bytes.Contains(c, []byte("mcp__b__extra")) {
		t.Fatalf("a changed list must change the definitions")
	}
}

func mustTools(t *testing.T, servers ...mcp.Server) []tools.Tool {
	m := mcp.Start(context.Background(), servers, mcp.Options{})
	t.Cleanup(func() { m.Close() })
	return m.Tools()
}

func TestStreamableHTTP(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(testServer, "-http", "127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read the server's URL: %v", err)
	}
	m, reg := start(t, mcp.Options{}, mcp.Server{Name: "web", URL: strings.TrimSpace(url)})
	if st := m.Status()[0]; st.State != mcp.Connected || st.Transport != "http" {
		t.Fatalf("status = %+v", st)
	}
	if res := reg.Call(context.Background(), approve, "mcp__web__echo", `{"text":"over http"}`); res.IsError || res.Content != "echo: over http" {
		t.Fatalf("echo = %+v", res)
	}
}

func TestToolName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 80)
	cases := []struct{ server, tool, want string }{
		{"fs", "read_file", "mcp__fs__read_file"},
		{"fs", "read-file", "mcp__fs__read-file"},
	}
	for _, c := range cases {
		if got := mcp.ToolName(c.server, c.tool); got != c.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", c.server, c.tool, got, c.want)
		}
	}
	a, b := mcp.ToolName("s", long+"a"), mcp.ToolName("s", long+"b")
	if len(a) != 64 || len(b) != 64 || a == b || a != mcp.ToolName("s", long+"a") {
		t.Errorf("long names: %q %q", a, b)
	}
	if d, e := mcp.ToolName("s", "a.b"), mcp.ToolName("s", "a/b"); d == e {
		t.Errorf("a.b and a/b share the name %q", d)
	}
}

func TestRefreshBetweenTurns(t *testing.T) {
	t.Parallel()
	m, _ := start(t, mcp.Options{}, stdio("a"), stdio("b"))
	ctx := context.Background()
	defs := func() []byte {
		reg, err := tools.New(m.Tools()...)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(reg.Definitions())
		return b
	}
	before := defs()
	if got := m.Refresh(ctx); len(got) != 0 || !bytes.Equal(defs(), before) {
		t.Fatalf("refresh with no change: changed %v, same bytes %v", got, bytes.Equal(defs(), before))
	}
	reg, _ := tools.New(m.Tools()...)
	if res := reg.Call(ctx, approve, "mcp__b__grow", `{}`); res.IsError {
		t.Fatalf("grow: %+v", res)
	}
	// The list a registry was built from does not change by itself (a turn keeps its tools).
	if !bytes.Equal(defs(), before) {
		t.Fatal("tools changed without a refresh")
	}
	if got := m.Refresh(ctx); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("refresh after b grew: changed %v, want [b]", got)
	}
	after := defs()
	if bytes.Equal(after, before) || !bytes.Contains(after, []byte("mcp__b__extra")) || bytes.Contains(after, []byte("mcp__a__extra")) {
		t.Fatalf("definitions after refresh:\n%s", after)
	}
	if got := m.Refresh(ctx); len(got) != 0 || !bytes.Equal(defs(), after) {
		t.Fatalf("second refresh: changed %v", got)
	}
}
