package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/postgres"
	"github.com/spoolhq/spool/store/postgres/pgtest"
)

// TestTwoHostsOnePostgres is the multi-host proof without a gateway: `spool run --resume`
// processes from two host ids (SPOOL_HOST_ID, so neither can probe the other's processes, as on
// two machines), each with its own home, take turns on shared conversations in one PostgreSQL
// database through the fake model over HTTP. Every turn must land whole and once, never
// interleaved with another; then one host is killed with SIGKILL mid-turn, holding the lease,
// and the other continues once the lease's TTL has passed.
func TestTwoHostsOnePostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	llm := startFakeLLM(t)
	homes := map[string]string{"a": t.TempDir(), "b": t.TempDir()}
	env := func(host string) []string {
		return append(cleanEnv(), "SPOOL_DATABASE_URL="+url, "SPOOL_HOST_ID=host-"+host,
			"SPOOL_LEASES_TTL=3s", "SPOOL_LEASES_RENEW_EVERY=1s")
	}
	run := func(host string, args ...string) (runOut, string, error) {
		cmd := exec.Command(spoolBin, append([]string{"--home", homes[host]}, viaFake(llm, append([]string{"--json"}, args...)...)...)...)
		cmd.Env = env(host)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var r runOut
		if err == nil {
			err = json.Unmarshal(out.Bytes(), &r)
		}
		return r, errb.String(), err
	}

	const convs, rounds = 3, 3
	var ids []string
	for c := range convs {
		r, stderr, err := run("a", fmt.Sprintf("open conversation %d", c))
		if err != nil {
			t.Fatalf("first turn: %v %s", err, stderr)
		}
		ids = append(ids, r.SessionID)
	}
	// Both hosts run every round on every conversation at the same time.
	var wg sync.WaitGroup
	errs := make(chan error, 2*convs*rounds)
	for _, host := range []string{"a", "b"} {
		wg.Go(func() {
			for round := range rounds {
				for c, id := range ids {
					if _, stderr, err := run(host, "--resume", id, fmt.Sprintf("ask %s-%d-%d", host, round, c)); err != nil {
						errs <- fmt.Errorf("host %s round %d conversation %d: %v %s", host, round, c, err, stderr)
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	st, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for c, id := range ids {
		ms, err := st.Conversation(context.Background(), id, store.ViewAll)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for i, m := range ms {
			switch {
			case i%2 == 0 && m.Role != store.RoleUser, i%2 == 1 && m.Role != store.RoleAssistant:
				t.Fatalf("conversation %d: message %d is %s: turns interleaved: %v", c, i, m.Role, contentsOf(ms))
			case i%2 == 1 && !strings.Contains(m.Content, ms[i-1].Content):
				t.Fatalf("conversation %d: answer %d %q does not answer %q", c, i, m.Content, ms[i-1].Content)
			case i%2 == 0 && seen[m.Content]:
				t.Fatalf("conversation %d: turn %q stored twice", c, m.Content)
			}
			seen[m.Content] = true
		}
		if want := 2 * (1 + 2*rounds); len(ms) != want {
			t.Fatalf("conversation %d: %d messages, want %d (a turn was lost): %v", c, len(ms), want, contentsOf(ms))
		}
	}

	// Host a is killed mid-turn (its model answers after 60 s), holding the lease.
	slow := exec.Command(spoolBin, append([]string{"--home", homes["a"]}, viaFake(llm, "--resume", ids[0], "slow turn\nFAULT slow 60s")...)...)
	slow.Env = env("a")
	if err := slow.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = slow.Process.Kill(); _ = slow.Wait() }()
	conv, err := st.Root(context.Background(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	var held store.HeldLease
	for deadline := time.Now().Add(time.Minute); ; {
		leases, err := st.HeldLeases(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, l := range leases {
			if l.ConversationID == conv && strings.Contains(l.Holder, "host=host-a") {
				held, found = l, true
			}
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow turn never took the lease")
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, not a synchronisation by time
	}
	if err := slow.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = slow.Wait()
	killed := time.Now()
	r, stderr, err := run("b", "--resume", ids[0], "after the crash")
	if err != nil {
		t.Fatalf("host b after host a was killed: %v %s", err, stderr)
	}
	t.Logf("host b's turn finished %.2fs after the kill (lease TTL 3s; the holder's lease expired at %s)",
		time.Since(killed).Seconds(), held.ExpiresAt.Format(time.RFC3339Nano))
	if !strings.Contains(r.Reply, "after the crash") {
		t.Fatalf("reply %q", r.Reply)
	}
	after, err := st.HeldLeases(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range after {
		if l.ConversationID == conv {
			t.Fatalf("lease still held after host b's turn: %+v", l)
		}
	}
	ms, _ := st.Conversation(context.Background(), ids[0], store.ViewAll)
	if last := ms[len(ms)-1]; last.Role != store.RoleAssistant || !strings.Contains(last.Content, "after the crash") {
		t.Fatalf("last message after the crash: %+v", last)
	}
	for _, m := range ms {
		if m.Role == store.RoleAssistant && strings.Contains(m.Content, "slow turn") {
			t.Fatalf("the killed turn's answer was stored: %q", m.Content)
		}
	}
	if problems, err := st.Check(context.Background()); err != nil || len(problems) > 0 {
		t.Fatalf("check: %v %v", problems, err)
	}
}

func contentsOf(ms []store.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Role + ": " + m.Content
	}
	return out
}
