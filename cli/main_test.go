package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/testbin"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
	"github.com/spoolhq/spool/store/storetest"
)

// spoolBin is the real spool binary, built once for the package.
var spoolBin string

func TestMain(m *testing.M) {
	testbin.Main(m, map[string]*string{"github.com/spoolhq/spool/cmd/spool": &spoolBin})
}

// result is one finished spool process.
type result struct {
	stdout, stderr string
	code           int
}

// spool runs the binary with --home home and args; stdin is empty (not a terminal).
func spool(t testing.TB, home string, args ...string) result {
	t.Helper()
	return spoolIn(t, home, "", args...)
}

func spoolIn(t testing.TB, home, stdin string, args ...string) result {
	t.Helper()
	return spoolEnv(t, home, stdin, nil, args...)
}

// spoolEnv runs spool with extra environment variables ("K=V").
func spoolEnv(t testing.TB, home, stdin string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(spoolBin, append([]string{"--home", home}, args...)...)
	cmd.Env = append(cleanEnv(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run spool %v: %v", args, err)
	}
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// cleanEnv is the test's environment without SPOOL_* settings that could leak in.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SPOOL_") && !strings.HasPrefix(kv, "NO_COLOR=") {
			env = append(env, kv)
		}
	}
	return env
}

// ok fails the test unless r succeeded.
func (r result) ok(t testing.TB, what string) result {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("%s: exit %d\nstdout: %s\nstderr: %s", what, r.code, r.stdout, r.stderr)
	}
	return r
}

func decode[T any](t *testing.T, r result) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("stdout is not the expected JSON: %v\n%s", err, r.stdout)
	}
	return v
}

// withStore opens the home's database through the store API, runs fn and closes it again, so
// the spool processes find it as a user would.
func withStore(t *testing.T, home string, fn func(st store.Backend)) {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(home, "spool.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fn(db)
}

func check[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// Session ids of the seed. Two share the prefix "20261120_0930" (an ambiguous reference).
const (
	idRoot   = "20261120_093000_a1b2c3"
	idBranch = "20261120_093015_b4d5e6"
	idCont   = "20261120_094500_c7f8a9"
	idAPI    = "20261121_120000_d0e1f2"
	idOld    = "20250101_080000_e3f4a5"
)

// seedTime is two days ago, so "prune --older-than 30d" keeps the recent sessions whatever the
// date the tests run on; oldTime is over a year ago.
var (
	seedTime = time.Now().UTC().Add(-48 * time.Hour).Truncate(time.Second)
	oldTime  = time.Now().UTC().Add(-400 * 24 * time.Hour).Truncate(time.Second)
)

// seed fills home's database: a titled root with tool calls and archived rows, a branch, a
// compression continuation, an api session and an ended session from long ago.
func seed(t *testing.T, home string) {
	t.Helper()
	withStore(t, home, func(st store.Backend) {
		ctx := context.Background()
		at := func(s int) time.Time { return seedTime.Add(time.Duration(s) * time.Second) }
		check(st.CreateSession(ctx, store.NewSession{ID: idRoot, Title: "Parser fix", Model: "m-1", StartedAt: seedTime}))(t)
		check(st.SetSystemPrompt(ctx, idRoot, "You are careful."))(t)
		check(st.AppendBatch(ctx, idRoot, []store.Message{
			{Role: store.RoleUser, Content: "please fix the tokenizer bug in parse.go", Timestamp: at(1)},
			{Role: store.RoleAssistant, Content: "Reading the file.", Timestamp: at(2),
				ToolCalls: []store.ToolCall{{ID: "call_1", Type: "function", Function: store.ToolFunction{Name: "read_file", Arguments: `{"path":"parse.go"}`}}}},
			{Role: store.RoleTool, Content: "func tokenize() {}", ToolCallID: "call_1", ToolName: "read_file", Timestamp: at(3)},
			{Role: store.RoleAssistant, Content: "The tokenizer skips unicode; fixed.", Timestamp: at(4)},
		}))(t)
		check(storetest.Compact(ctx, st, store.CompactRequest{SessionID: idRoot, Messages: []store.Message{
			{Role: store.RoleUser, Content: "[summary] tokenizer fixed", Summary: true, Timestamp: at(5)},
		}}))(t)
		check(st.Append(ctx, idRoot, store.Message{Role: store.RoleUser, Content: "now write a test 测试", Timestamp: at(6)}))(t)
		check(st.Branch(ctx, idRoot, store.NewSession{ID: idBranch, Title: "Parser fix (alt)", StartedAt: at(15)}))(t)
		check(storetest.Rotate(ctx, st, store.RotateRequest{ParentID: idRoot,
			Child:    store.NewSession{ID: idCont, StartedAt: at(900)},
			Messages: []store.Message{{Role: store.RoleUser, Content: "[summary] continuing the parser", Summary: true, Timestamp: at(900)}}}))(t)
		check(st.CreateSession(ctx, store.NewSession{ID: idAPI, Source: "api", Title: "Gateway chat", StartedAt: seedTime.Add(27 * time.Hour)}))(t)
		check(st.Append(ctx, idAPI, store.Message{Role: store.RoleUser, Content: "hello from the gateway about tokenizer", Timestamp: seedTime.Add(27 * time.Hour)}))(t)
		check(st.CreateSession(ctx, store.NewSession{ID: idOld, Title: "Ancient", StartedAt: oldTime}))(t)
		check(st.Append(ctx, idOld, store.Message{Role: store.RoleUser, Content: "old news", Timestamp: oldTime.Add(time.Second)}))(t)
		if err := st.EndSession(ctx, idOld, store.EndUserExit); err != nil {
			t.Fatal(err)
		}
	})
}

// snapshot renders everything stored in home's database, for before/after comparisons.
func snapshot(t *testing.T, home string) string {
	t.Helper()
	var b strings.Builder
	withStore(t, home, func(st store.Backend) {
		ctx := context.Background()
		ls := check(st.ListSessions(ctx, store.ListOptions{IncludeChildren: true}))(t)
		for _, l := range ls {
			s := l.Session
			fmt.Fprintf(&b, "session %s title=%q parent=%s rel=%s ended=%v reason=%s msgs=%d\n",
				s.ID, s.Title, s.ParentID, s.Relation, s.EndedAt.UTC(), s.EndReason, s.MessageCount)
			for _, m := range check(st.Conversation(ctx, s.ID, store.ViewAll))(t) {
				fmt.Fprintf(&b, "  %d %s %q active=%v compacted=%v calls=%d\n", m.ID, m.Role, m.Content, m.Active, m.Compacted, len(m.ToolCalls))
			}
		}
	})
	return b.String()
}

func seededHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	seed(t, home)
	return home
}
