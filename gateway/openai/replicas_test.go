package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/postgres"
	"github.com/spoolhq/spool/store/postgres/pgtest"
)

// replicas starts two `spool serve` processes on one PostgreSQL database, each with its own
// home and host id (SPOOL_HOST_ID: neither can probe the other's processes, as on two
// machines), both talking to one fake model.
func replicas(t *testing.T, up *upstream, url string) (a, b *server) {
	t.Helper()
	cfg := up.providerConfig() + "database:\n  url: " + url + "\n" +
		"serve:\n  busy_wait: 0s\n  retry_after: 20ms\n" +
		"leases:\n  ttl: 3s\n  renew_every: 1s\n  wait: 2m\n"
	a = startServeEnv(t, t.TempDir(), cfg, []string{"SPOOL_HOST_ID=replica-a"})
	b = startServeEnv(t, t.TempDir(), cfg, []string{"SPOOL_HOST_ID=replica-b"})
	return a, b
}

// chatResult is one POST /v1/chat/completions.
type chatResult struct {
	status     int
	code       string // error.code of a refusal
	retryAfter string
	session    string
	answer     string
	err        error // the request failed before an answer (the server died)
}

// chat sends one user message to s for session sid ("" starts one) under the busy policy
// ("" is the server's default).
func chat(s *server, sid, text, busy string) chatResult {
	body, _ := json.Marshal(map[string]any{"model": "spool", "messages": []map[string]string{{"role": "user", "content": text}}})
	req, err := http.NewRequest(http.MethodPost, s.url+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return chatResult{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	if sid != "" {
		req.Header.Set("X-Spool-Session-Id", sid)
	}
	if busy != "" {
		req.Header.Set("X-Spool-Busy", busy)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return chatResult{err: err}
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var v struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(raw, &v)
	r := chatResult{status: res.StatusCode, code: v.Error.Code, retryAfter: res.Header.Get("Retry-After"),
		session: res.Header.Get("X-Spool-Session-Id")}
	if len(v.Choices) > 0 {
		r.answer = v.Choices[0].Message.Content
	}
	return r
}

// checkTurns fails t unless the conversation is whole turns, each a user message answered by
// the next, in the order want lists them (want nil: any order), none twice.
func checkTurns(t *testing.T, ms []store.Message, want []string) []string {
	t.Helper()
	var users []string
	seen := map[string]bool{}
	for i, m := range ms {
		switch {
		case i%2 == 0 && m.Role != store.RoleUser, i%2 == 1 && m.Role != store.RoleAssistant:
			t.Fatalf("message %d is %s: turns interleaved: %v", i, m.Role, contents(ms))
		case i%2 == 1 && !strings.Contains(m.Content, ms[i-1].Content):
			t.Fatalf("answer %d %q does not answer %q: %v", i, m.Content, ms[i-1].Content, contents(ms))
		case i%2 == 0 && seen[m.Content]:
			t.Fatalf("turn %q stored twice: %v", m.Content, contents(ms))
		}
		if i%2 == 0 {
			seen[m.Content] = true
			users = append(users, m.Content)
		}
	}
	if len(ms)%2 != 0 {
		t.Fatalf("a turn without its answer: %v", contents(ms))
	}
	if want != nil && strings.Join(users, "|") != strings.Join(want, "|") {
		t.Fatalf("turns %q, want %q", users, want)
	}
	return users
}

func contents(ms []store.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Role+":"+m.Content)
	}
	return out
}

// TestReplicasFenceTurns: two `spool serve` replicas on one PostgreSQL database serve one
// session. While replica A runs a turn, replica B answers a request for the same session 409
// (session_busy, with Retry-After: the lease is held on another host); a queued request on B
// waits for A's turn and runs after it; nothing interleaves. Then A is killed with SIGKILL
// mid-turn, holding the lease: B's queued request runs once the lease's TTL has passed, and
// nothing of the killed turn is stored.
func TestReplicasFenceTurns(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	up := newUpstream(t)
	a, b := replicas(t, up, url)

	first := chat(a, "", "open the shared session", "")
	if first.status != 200 || first.session == "" {
		t.Fatalf("first turn: %+v", first)
	}
	sid := first.session

	held := make(chan chatResult, 1)
	go func() { held <- chat(a, sid, "long turn on A gate:held", "") }()
	up.arrived(t, "held") // A holds the conversation's lease now

	r := chat(b, sid, "refused on B", "reject")
	if r.status != http.StatusConflict || r.code != "session_busy" || r.retryAfter == "" {
		t.Fatalf("B during A's turn: %+v, want 409 session_busy with Retry-After", r)
	}
	r = chat(b, sid, "refused on B too", "") // the default policy with busy_wait 0
	if r.status != http.StatusConflict || r.code != "session_busy" {
		t.Fatalf("B during A's turn (default policy): %+v, want 409 session_busy", r)
	}
	queued := make(chan chatResult, 1)
	go func() { queued <- chat(b, sid, "queued on B", "queue") }()
	up.open("held")
	if r := <-held; r.status != 200 {
		t.Fatalf("A's turn: %+v", r)
	}
	if r := <-queued; r.status != 200 || !strings.Contains(r.answer, "queued on B") {
		t.Fatalf("B's queued request: %+v", r)
	}

	st, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ms, err := st.Conversation(context.Background(), sid, store.ViewAll)
	if err != nil {
		t.Fatal(err)
	}
	checkTurns(t, ms, []string{"open the shared session", "long turn on A gate:held", "queued on B"})

	// A dies mid-turn, holding the lease. The agent stored the user message before calling the
	// model (an interrupted turn keeps what was said); no answer of it may ever be stored.
	go func() { chat(a, sid, "killed with A gate:killed", "") }()
	up.arrived(t, "killed")
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if r := chat(b, sid, "after A died", "queue"); r.status != 200 || !strings.Contains(r.answer, "after A died") {
		t.Fatalf("B after A was killed: %+v\n%s", r, b.stderr.String())
	}
	t.Logf("B's turn answered %.2fs after A was killed (lease TTL 3s)", time.Since(killed).Seconds())
	up.open("killed") // the model's answer to the dead replica goes nowhere
	if ms, err = st.Conversation(context.Background(), sid, store.ViewAll); err != nil {
		t.Fatal(err)
	}
	if len(ms) != 9 || ms[6].Role != store.RoleUser || ms[6].Content != "killed with A gate:killed" {
		t.Fatalf("after the kill: %v", contents(ms))
	}
	checkTurns(t, append(ms[:6:6], ms[7:]...), []string{"open the shared session", "long turn on A gate:held", "queued on B", "after A died"})
	leases, err := st.HeldLeases(context.Background())
	if err != nil || len(leases) != 0 {
		t.Fatalf("leases held after B's turn: %+v %v", leases, err)
	}
}

// TestReplicasUnderLoad: 8 clients send 3 turns each, alternating between two replicas, on 4
// shared sessions; a client answered 409 retries after the Retry-After it was given, half of
// them ask to queue instead. Every request is answered once, every conversation holds exactly
// the turns sent to it, whole, each once, never interleaved.
func TestReplicasUnderLoad(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	up := newUpstream(t)
	a, b := replicas(t, up, url)
	servers := []*server{a, b}
	const sessions, clients, rounds = 4, 8, 3
	var sids []string
	for i := range sessions {
		r := chat(servers[i%2], "", fmt.Sprintf("open %d", i), "")
		if r.status != 200 {
			t.Fatalf("open %d: %+v", i, r)
		}
		sids = append(sids, r.session)
	}
	var mu sync.Mutex
	sent := map[string][]string{} // session → the turns answered 200
	conflicts := 0
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			busy := ""
			if c%2 == 1 {
				busy = "queue"
			}
			for round := range rounds {
				sid := sids[(c+round)%sessions]
				s := servers[(c+round)%2]
				text := fmt.Sprintf("client %d round %d", c, round)
				for attempt := 0; ; attempt++ {
					r := chat(s, sid, text, busy)
					if r.status == http.StatusConflict && r.code == "session_busy" && attempt < 1000 {
						mu.Lock()
						conflicts++
						mu.Unlock()
						time.Sleep(20 * time.Millisecond) // the client honours Retry-After (20ms here)
						continue
					}
					if r.err != nil || r.status != 200 || !strings.Contains(r.answer, text) {
						t.Errorf("%s: %+v", text, r)
						return
					}
					mu.Lock()
					sent[sid] = append(sent[sid], text)
					mu.Unlock()
					break
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	st, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	total := 0
	for i, sid := range sids {
		ms, err := st.Conversation(context.Background(), sid, store.ViewAll)
		if err != nil {
			t.Fatal(err)
		}
		users := checkTurns(t, ms, nil)
		want := map[string]bool{fmt.Sprintf("open %d", i): true}
		for _, s := range sent[sid] {
			want[s] = true
		}
		if len(users) != len(want) {
			t.Fatalf("session %d holds %d turns, %d were answered: %q", i, len(users), len(want), users)
		}
		for _, u := range users {
			if !want[u] {
				t.Fatalf("session %d holds a turn nobody was answered for: %q", i, u)
			}
		}
		total += len(users)
	}
	if total != sessions+clients*rounds {
		t.Fatalf("%d turns stored, want %d", total, sessions+clients*rounds)
	}
	t.Logf("%d turns on %d sessions through 2 replicas, %d answered 409 and retried", total, sessions, conflicts)
}
