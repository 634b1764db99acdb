// Command gen writes the upgrade fixtures of store/testdata/v0.1.0: a database as spool v0.1.0
// leaves it, for the tests that open it with a newer spool and find everything working.
//
// It runs against the release, not this tree (testdata is not built with the module):
//
//	git worktree add /tmp/rel v0.1.0
//	mkdir /tmp/rel/cmd/fixturegen && cp store/testdata/v0.1.0/gen/main.go /tmp/rel/cmd/fixturegen/
//	cd /tmp/rel && go build -o /tmp/spool-v0.1.0 ./cmd/spool
//	go run ./cmd/fixturegen -spool /tmp/spool-v0.1.0 -out $REPO/store/testdata/v0.1.0
//	go run ./cmd/fixturegen -spool /tmp/spool-v0.1.0 -out $REPO/store/testdata/v0.1.0 \
//	    -pg 'postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable'
//
// The SQLite run writes spool.db and sqlite.json; the PostgreSQL run creates the database
// spool_fixture_v010 on that server, fills it the same way, and writes postgres.sql (pg_dump,
// plain SQL with INSERTs) and postgres.json. The JSON manifests name what the tests look for.
//
// What it writes: through the release's own spool serve (its offline model), a chain of
// responses with previous_response_id, a branch from an older response, a conversation with
// metadata, and requests with Idempotency-Keys; through the release's store, a CLI session with
// a compaction chain, a route of each platform, Discord read cursors and its watermark (the
// cursor of "@connected"), and the Telegram poller's lease (a compression lock).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/postgres"
	"github.com/spoolhq/spool/store/sqlite"
)

// Manifest is what a fixture holds, for the tests.
type Manifest struct {
	Release string `json:"release"`
	Backend string `json:"backend"`
	// Responses are the Responses API ids, each with its session.
	Responses map[string]string `json:"responses"`
	// Latest is the id of the newest response of the main chain (previous_response_id of the
	// upgrade test's next turn), Branch the response that branched from an older one.
	Latest string `json:"latest"`
	Branch string `json:"branch"`
	// Conversation is a conversation created with Metadata.
	Conversation string          `json:"conversation"`
	Metadata     json.RawMessage `json:"metadata"`
	// Idempotency maps each key to the session of the request that used it.
	Idempotency map[string]string `json:"idempotency"`
	// Chain is a compaction chain of a CLI session, root first.
	Chain []string `json:"chain"`
	// Routes maps each platform route key to its session.
	Routes map[string]string `json:"routes"`
	// Cursors are Discord read cursors (channel → last id) of Bot; Watermark its watermark.
	Bot       string            `json:"bot"`
	Cursors   map[string]string `json:"cursors"`
	Watermark string            `json:"watermark"`
	// PollerLease is the Telegram poller's lease name and holder.
	PollerLease  string `json:"poller_lease"`
	PollerHolder string `json:"poller_holder"`
	// Sessions are every session id.
	Sessions []string `json:"sessions"`
}

func main() {
	bin := flag.String("spool", "", "the release's spool binary")
	out := flag.String("out", "", "the fixture directory")
	pg := flag.String("pg", "", "a PostgreSQL server's DSN (empty: SQLite)")
	flag.Parse()
	if *bin == "" || *out == "" {
		log.Fatal("usage: gen -spool BIN -out DIR [-pg DSN]")
	}
	ctx := context.Background()
	home, err := os.MkdirTemp("", "spool-fixture-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(home)
	m := Manifest{Release: "v0.1.0", Backend: "sqlite", Responses: map[string]string{}, Idempotency: map[string]string{},
		Routes: map[string]string{}, Cursors: map[string]string{}}
	dsn := ""
	if *pg != "" {
		m.Backend = "postgres"
		dsn = freshDatabase(ctx, *pg, "spool_fixture_v010")
		cfg := fmt.Sprintf("database:\n  url: %s\n", dsn)
		if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
			log.Fatal(err)
		}
	}
	serveAPI(*bin, home, &m)
	var st store.Store
	if dsn != "" {
		st, err = postgres.Open(ctx, dsn, postgres.Options{})
	} else {
		st, err = sqlite.Open(ctx, filepath.Join(home, "spool.db"), sqlite.Options{})
	}
	if err != nil {
		log.Fatal(err)
	}
	fillStore(ctx, st, &m)
	list, err := st.ListSessions(ctx, store.ListOptions{IncludeChildren: true})
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range list {
		m.Sessions = append(m.Sessions, s.ID)
	}
	if err := st.Close(); err != nil {
		log.Fatal(err)
	}
	if dsn != "" {
		dump := exec.Command("pg_dump", "--inserts", "--no-owner", "--no-privileges", "--dbname", dsn)
		dump.Stderr = os.Stderr
		b, err := dump.Output()
		if err != nil {
			log.Fatalf("pg_dump: %v", err)
		}
		write(filepath.Join(*out, "postgres.sql"), b)
	} else {
		// One file: closing the store folds the WAL into the database.
		if fi, err := os.Stat(filepath.Join(home, "spool.db-wal")); err == nil && fi.Size() > 0 {
			log.Fatal("the WAL was not checkpointed at close")
		}
		b, err := os.ReadFile(filepath.Join(home, "spool.db"))
		if err != nil {
			log.Fatal(err)
		}
		write(filepath.Join(*out, "spool.db"), b)
	}
	j, _ := json.MarshalIndent(m, "", "  ")
	write(filepath.Join(*out, m.Backend+".json"), append(j, '\n'))
}

func write(path string, b []byte) {
	if err := os.WriteFile(path, b, 0o644); err != nil {
		log.Fatal(err)
	}
}

// freshDatabase drops and creates database name on the server of dsn and returns its DSN.
func freshDatabase(ctx context.Context, dsn, name string) string {
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)
	for _, q := range []string{"DROP DATABASE IF EXISTS " + name, "CREATE DATABASE " + name} {
		if _, err := c.Exec(ctx, q); err != nil {
			log.Fatalf("%s: %v", q, err)
		}
	}
	u, err := url.Parse(dsn)
	if err != nil {
		log.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

var listenRe = regexp.MustCompile(`listening on (http://\S+)`)

// serveAPI runs the release's spool serve on home and makes responses, a branch, a
// conversation with metadata, and idempotent requests through it.
func serveAPI(bin, home string, m *Manifest) {
	cmd := exec.Command(bin, "--home", home, "serve", "--listen", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		log.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	base := ""
	for base == "" && sc.Scan() {
		if mm := listenRe.FindStringSubmatch(sc.Text()); mm != nil {
			base = mm[1]
		}
	}
	if base == "" {
		log.Fatal("spool serve did not start")
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()

	r1, s1 := post(base, "/v1/responses", "", `{"model":"spool","input":"hello fixture"}`)
	m.Responses[r1] = s1
	r2, s2 := post(base, "/v1/responses", "", fmt.Sprintf(`{"model":"spool","input":"second turn","previous_response_id":%q}`, r1))
	m.Responses[r2] = s2
	r3, s3 := post(base, "/v1/responses", "", fmt.Sprintf(`{"model":"spool","input":"another way","previous_response_id":%q}`, r1))
	m.Responses[r3] = s3
	r4, s4 := post(base, "/v1/responses", "", fmt.Sprintf(`{"model":"spool","input":"third turn","previous_response_id":%q}`, r2))
	m.Responses[r4] = s4
	m.Latest, m.Branch = r4, r3

	m.Metadata = json.RawMessage(`{"topic":"upgrade fixture"}`)
	conv, _ := post(base, "/v1/conversations", "", `{"metadata":{"topic":"upgrade fixture"},"items":[{"type":"message","role":"user","content":"kept in a conversation"}]}`)
	m.Conversation = conv
	r5, s5 := post(base, "/v1/responses", "", fmt.Sprintf(`{"model":"spool","input":"in the conversation","conversation":%q}`, conv))
	m.Responses[r5] = s5

	_, s6 := post(base, "/v1/chat/completions", "fixture-chat-key", `{"model":"spool","messages":[{"role":"user","content":"idempotent chat"}]}`)
	m.Idempotency["fixture-chat-key"] = s6
	r7, s7 := post(base, "/v1/responses", "fixture-responses-key", `{"model":"spool","input":"idempotent response"}`)
	m.Idempotency["fixture-responses-key"] = s7
	m.Responses[r7] = s7

	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		log.Printf("spool serve: %v", err)
	}
}

// post sends body and returns the object's id and the session it went to.
func post(base, path, key, body string) (string, string) {
	req, err := http.NewRequest("POST", base+path, strings.NewReader(body))
	if err != nil {
		log.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		log.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
	}
	var v struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&v); err != nil || v.ID == "" {
		log.Fatalf("POST %s: no id in %s", path, b)
	}
	return v.ID, resp.Header.Get("X-Spool-Session-Id")
}

// fillStore writes what the release's platforms and CLI write, through its store.
func fillStore(ctx context.Context, st store.Store, m *Manifest) {
	must := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	msg := func(role, text string) store.Message {
		return store.Message{Role: role, Content: text, Timestamp: time.Now()}
	}
	root, err := st.CreateSession(ctx, store.NewSession{Source: "cli", Title: "fixture chain", Model: "fake-model"})
	must(err)
	_, err = st.AppendBatch(ctx, root.ID, []store.Message{msg("user", "plan the trip"), msg("assistant", "first we pack"),
		msg("user", "and then"), msg("assistant", "then we go")})
	must(err)
	ok, err := st.AcquireCompressionLock(ctx, root.ID, "fixture", time.Minute)
	must(err)
	if !ok {
		log.Fatal("compression lock refused")
	}
	tip, err := st.RotateCompaction(ctx, store.RotateRequest{ParentID: root.ID, LockHolder: "fixture",
		Messages: []store.Message{{Role: "user", Content: "Summary: a trip was planned.", Summary: true, Timestamp: time.Now()}, msg("user", "and then"), msg("assistant", "then we go")}})
	must(err)
	must(st.ReleaseCompressionLock(ctx, root.ID, "fixture"))
	_, err = st.AppendBatch(ctx, tip.ID, []store.Message{msg("user", "after the rotation"), msg("assistant", "still here")})
	must(err)
	m.Chain = []string{root.ID, tip.ID}

	for _, p := range []struct{ platform, key string }{
		{"telegram", "agent:main:telegram:dm:123456789"},
		{"slack", "agent:main:slack:channel:T01:C02:U03"},
		{"discord", "agent:main:discord:dm:900000000000000001"},
	} {
		s, err := st.CreateSession(ctx, store.NewSession{Source: p.platform, SessionKey: p.key})
		must(err)
		_, err = st.AppendBatch(ctx, s.ID, []store.Message{msg("user", "hi from "+p.platform), msg("assistant", "hello "+p.platform)})
		must(err)
		origin, _ := json.Marshal(map[string]string{"platform": p.platform, "chat_type": "dm"})
		must(st.PutRoute(ctx, store.Route{Key: p.key, SessionID: s.ID, Origin: origin}))
		m.Routes[p.key] = s.ID
	}

	m.Bot = "800000000000000001"
	m.Cursors["900000000000000002"] = "1100000000000000005"
	m.Cursors["900000000000000003"] = "1100000000000000009"
	m.Watermark = "1100000000000000007"
	for ch, id := range m.Cursors {
		must(st.AdvanceReadCursor(ctx, store.ReadCursor{Platform: "discord", Bot: m.Bot, Channel: ch, LastID: id}))
	}
	must(st.AdvanceReadCursor(ctx, store.ReadCursor{Platform: "discord", Bot: m.Bot, Channel: "@connected", LastID: m.Watermark}))

	// The poller's lease as the release's Telegram adapter names it, held for decades so the
	// upgraded database still finds it held.
	m.PollerLease, m.PollerHolder = "platform-poller:telegram:0123456789abcdef", "fixture-host:4242"
	ok, err = st.AcquireCompressionLock(ctx, m.PollerLease, m.PollerHolder, 50*365*24*time.Hour)
	must(err)
	if !ok {
		log.Fatal("poller lock refused")
	}
}
