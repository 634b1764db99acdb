package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
)

// reliabilityReport is what 'spool bench reliability' measured. Every count but the trial
// counts is a failure: the target is 0 in each.
type reliabilityReport struct {
	Kill struct {
		Trials     int `json:"trials"`
		Corrupt    int `json:"corrupt"`    // db check found a problem after the kill
		Lost       int `json:"lost"`       // acknowledged turns missing
		Duplicated int `json:"duplicated"` // a turn stored twice
		Torn       int `json:"torn"`       // a turn stored in part
	} `json:"kill"`
	Mixed struct {
		Minutes      float64  `json:"minutes"`
		Commands     int      `json:"commands"`      // reader/writer commands run (real processes)
		Appends      int      `json:"appends"`       // turns the writer processes committed
		Errors       int      `json:"errors"`        // commands that failed or wrote to stderr
		LockedErrors int      `json:"locked_errors"` // of which said "database is locked"
		Samples      []string `json:"samples,omitempty"`
	} `json:"mixed"`
	Fence struct {
		Trials      int `json:"trials"`
		StaleWrites int `json:"stale_writes"` // rows, request rows or usage a fenced-out process added
	} `json:"fence"`
	Import struct {
		Files    int `json:"files"`
		Partial  int `json:"partial"`  // a rejected file left sessions behind
		Rejected int `json:"rejected"` // a good file that was refused
	} `json:"import"`
	Search struct {
		Queries      int      `json:"queries"`
		EngineErrors int      `json:"engine_errors"`
		Samples      []string `json:"samples,omitempty"`
	} `json:"search"`
}

func (r *reliabilityReport) failures() int {
	return r.Kill.Corrupt + r.Kill.Lost + r.Kill.Duplicated + r.Kill.Torn + r.Mixed.Errors +
		r.Fence.StaleWrites + r.Import.Partial + r.Import.Rejected + r.Search.EngineErrors
}

func (a *app) benchReliabilityCommand() *cobra.Command {
	var (
		minutes float64
		kills   int
		fences  int
		imports int
		queries int
		dir     string
	)
	cmd := &cobra.Command{
		Use:   "reliability",
		Short: "Kill, pause and load real spool processes; count corrupt, lost, duplicated and stale writes and user-visible errors",
		Long: "Runs, with real spool processes on scratch SQLite files:\n" +
			"  kill    --kills writer processes SIGKILLed mid-write (fresh and long-lived databases,\n" +
			"          synchronous NORMAL and FULL): corrupt databases, lost acknowledged turns, duplicates, torn turns\n" +
			"  mixed   --minutes of 3 writer processes beside reader loops of sessions list, search, sessions show\n" +
			"          and db check, and sessions import: commands that fail or print anything on stderr\n" +
			"  fence   --fences lease holders SIGSTOPped until their lease is taken, then resumed to write\n" +
			"          (messages, usage, compaction): stale writes that landed\n" +
			"  import  --imports hostile and good bundles through sessions import: partial imports\n" +
			"  search  --queries random queries on the loaded database: engine errors\n" +
			"Exit status 1 when any count is not 0.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("bench reliability: find the spool binary: %w", err)
			}
			if dir == "" {
				if dir, err = os.MkdirTemp("", "spool-reliability-"); err != nil {
					return fmt.Errorf("bench reliability: %w", err)
				}
				defer os.RemoveAll(dir)
			}
			rb := &reliability{exe: exe, dir: dir, log: a.stderr, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))}
			var rep reliabilityReport
			ctx := cmd.Context()
			steps := []struct {
				name string
				fn   func(context.Context, *reliabilityReport) error
			}{
				{"kill", func(ctx context.Context, r *reliabilityReport) error { return rb.kills(ctx, r, kills) }},
				{"fence", func(ctx context.Context, r *reliabilityReport) error { return rb.fences(ctx, r, fences) }},
				{"import", func(ctx context.Context, r *reliabilityReport) error { return rb.imports(ctx, r, imports) }},
				{"mixed", func(ctx context.Context, r *reliabilityReport) error {
					return rb.mixed(ctx, r, time.Duration(minutes*float64(time.Minute)))
				}},
				{"search", func(ctx context.Context, r *reliabilityReport) error { return rb.search(ctx, r, queries) }},
			}
			for _, s := range steps {
				fmt.Fprintf(a.stderr, "reliability: %s...\n", s.name)
				if err := s.fn(ctx, &rep); err != nil {
					return fmt.Errorf("bench reliability: %s: %w", s.name, err)
				}
			}
			if a.json {
				if err := a.printJSON(rep); err != nil {
					return err
				}
			} else {
				printReliability(a.stdout, &rep)
			}
			if rep.failures() > 0 {
				a.exit = ExitError
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Float64Var(&minutes, "minutes", 10, "minutes of mixed load")
	f.IntVar(&kills, "kills", 500, "SIGKILL trials")
	f.IntVar(&fences, "fences", 20, "SIGSTOP fencing trials")
	f.IntVar(&imports, "imports", 100, "import files (hostile and good)")
	f.IntVar(&queries, "queries", 5000, "random search queries")
	f.StringVar(&dir, "dir", "", "scratch directory (default: a temporary one, removed after)")
	return cmd
}

func printReliability(w io.Writer, r *reliabilityReport) {
	fmt.Fprintf(w, "kill trials %d: corrupt %d, lost %d, duplicated %d, torn %d\n",
		r.Kill.Trials, r.Kill.Corrupt, r.Kill.Lost, r.Kill.Duplicated, r.Kill.Torn)
	fmt.Fprintf(w, "mixed load %.1f min: %d commands, %d turns appended, %d user-visible errors (%d 'database is locked')\n",
		r.Mixed.Minutes, r.Mixed.Commands, r.Mixed.Appends, r.Mixed.Errors, r.Mixed.LockedErrors)
	for _, s := range r.Mixed.Samples {
		fmt.Fprintf(w, "  e.g. %s\n", visible(s))
	}
	fmt.Fprintf(w, "fence trials %d: stale writes %d\n", r.Fence.Trials, r.Fence.StaleWrites)
	fmt.Fprintf(w, "import files %d: partial imports %d, good files refused %d\n", r.Import.Files, r.Import.Partial, r.Import.Rejected)
	fmt.Fprintf(w, "search queries %d: engine errors %d\n", r.Search.Queries, r.Search.EngineErrors)
	for _, s := range r.Search.Samples {
		fmt.Fprintf(w, "  e.g. %s\n", visible(s))
	}
}

// reliability runs the trials.
type reliability struct {
	exe string
	dir string
	log io.Writer
	rng *rand.Rand
}

func (rb *reliability) open(ctx context.Context, path, sync string) (*sqlite.DB, error) {
	return sqlite.Open(ctx, path, sqlite.Options{Synchronous: sync, Logger: storeLogger(io.Discard)})
}

// worker starts 'spool bench reliability-worker role args...' with its stdout piped.
func (rb *reliability) worker(ctx context.Context, args ...string) (*exec.Cmd, *bufio.Scanner, io.WriteCloser, *bytes.Buffer, error) {
	cmd := exec.CommandContext(ctx, rb.exe, append([]string{"bench", "reliability-worker"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, nil, err
	}
	return cmd, bufio.NewScanner(out), in, &stderr, nil
}

// kills: a writer appends whole turns (user, calling assistant, tool result, answer) and
// prints each committed turn number; it is SIGKILLed after a random number of them, at a
// random moment. Every 50 trials start on a fresh database; the synchronous mode alternates.
func (rb *reliability) kills(ctx context.Context, r *reliabilityReport, n int) error {
	var path string
	next := 0
	for trial := 0; trial < n; trial++ {
		if trial%50 == 0 {
			path = filepath.Join(rb.dir, fmt.Sprintf("kill-%d.db", trial/50))
			next = 0
		}
		sync := "NORMAL"
		if trial%2 == 1 {
			sync = "FULL"
		}
		cmd, lines, in, stderr, err := rb.worker(ctx, "append", path, sync, strconv.Itoa(next))
		if err != nil {
			return err
		}
		acked := next - 1
		want := 1 + rb.rng.IntN(6)
		for i := 0; i < want && lines.Scan(); i++ {
			if v, err := strconv.Atoi(lines.Text()); err == nil {
				acked = v
			}
		}
		time.Sleep(time.Duration(rb.rng.IntN(3000)) * time.Microsecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		in.Close()
		if acked < next {
			return fmt.Errorf("trial %d: the writer acknowledged nothing: %s", trial, strings.TrimSpace(stderr.String()))
		}
		db, err := rb.open(ctx, path, sync)
		if err != nil {
			r.Kill.Corrupt++
			fmt.Fprintf(rb.log, "reliability: kill trial %d: open after the kill: %v\n", trial, err)
			continue
		}
		problems, err := db.Check(ctx)
		if err != nil || len(problems) > 0 {
			r.Kill.Corrupt++
			fmt.Fprintf(rb.log, "reliability: kill trial %d: check: %v %q\n", trial, err, problems)
		}
		ms, err := db.Conversation(ctx, "victim", store.ViewActive)
		db.Close()
		if err != nil {
			r.Kill.Corrupt++
			continue
		}
		seen := map[int]int{}
		for _, m := range ms {
			num, _, _ := strings.Cut(m.Content, " ")
			v, _ := strconv.Atoi(strings.TrimPrefix(num, "t"))
			seen[v]++
		}
		top := -1
		for v, c := range seen {
			top = max(top, v)
			switch {
			case c > 4:
				r.Kill.Duplicated++
			case c < 4:
				r.Kill.Torn++
			}
		}
		for v := 0; v <= acked; v++ {
			if seen[v] == 0 {
				r.Kill.Lost++
			}
		}
		next = top + 1
		r.Kill.Trials++
		if (trial+1)%100 == 0 {
			fmt.Fprintf(rb.log, "reliability: %d kill trials\n", trial+1)
		}
	}
	return nil
}

// fences: a holder takes the lease (short TTL), is SIGSTOPped until the TTL passed and another
// holder took the lease and wrote, then is resumed and tries every kind of write with its stale
// lease. Any of them that lands is a stale write.
func (rb *reliability) fences(ctx context.Context, r *reliabilityReport, n int) error {
	path := filepath.Join(rb.dir, "fence.db")
	db, err := rb.open(ctx, path, "NORMAL")
	if err != nil {
		return err
	}
	defer db.Close()
	const ttl = 300 * time.Millisecond
	for trial := 0; trial < n; trial++ {
		sid := fmt.Sprintf("fence-%03d", trial)
		if _, err := db.CreateSession(ctx, store.NewSession{ID: sid}); err != nil {
			return err
		}
		cmd, lines, in, stderr, err := rb.worker(ctx, "stale", path, sid, ttl.String())
		if err != nil {
			return err
		}
		if !lines.Scan() || lines.Text() != "held" {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return fmt.Errorf("fence trial %d: holder did not start: %s", trial, strings.TrimSpace(stderr.String()))
		}
		_ = cmd.Process.Signal(syscall.SIGSTOP)
		time.Sleep(ttl + 200*time.Millisecond)
		var l store.Lease
		for {
			l, err = db.AcquireLease(ctx, sid, "new-holder", time.Minute)
			if err == nil {
				break
			}
			if !errors.Is(err, store.ErrLeaseHeld) {
				return err
			}
			time.Sleep(50 * time.Millisecond)
		}
		if _, err := db.Append(ctx, sid, store.Message{Role: store.RoleUser, Content: "new holder"}, store.WithLease(l)); err != nil {
			return err
		}
		before, err := db.GetSession(ctx, sid)
		if err != nil {
			return err
		}
		_ = cmd.Process.Signal(syscall.SIGCONT)
		fmt.Fprintln(in, "go")
		in.Close()
		for lines.Scan() {
		}
		_ = cmd.Wait()
		after, err := db.GetSession(ctx, sid)
		if err != nil {
			return err
		}
		ms, err := db.Conversation(ctx, sid, store.ViewAll)
		if err != nil {
			return err
		}
		reqs, err := db.Requests(ctx, sid, 0)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if strings.HasPrefix(m.Content, "stale") {
				r.Fence.StaleWrites++
			}
		}
		r.Fence.StaleWrites += len(reqs)
		if after.Usage != before.Usage || after.MessageCount != before.MessageCount {
			r.Fence.StaleWrites++
		}
		_ = db.ReleaseLease(ctx, l)
		r.Fence.Trials++
	}
	return nil
}

// hostileIDs are ids and titles an import must refuse.
var hostileFields = []string{
	`"id":"../evil"`, `"id":"a/b"`, `"id":"a\\b"`, `"id":"nul\u0000id"`, `"id":" edge"`, `"id":"edge "`,
	`"id":"two\nlines"`, `"id":"two words"`, `"id":"\u001b[2Jx"`, `"id":"` + strings.Repeat("x", 129) + `"`,
	`"id":"ok-id","title":"` + strings.Repeat("t", 101) + `"`, `"id":"ok-id","parent_id":"../p","relation":"branch"`,
	`"id":"ok-id","relation":"wizard"`, `"id":"ok-id","model_config":[1]`, `"id":""`,
}

// imports: bundles of good sessions with one hostile line at a random place (or none: a good
// file), imported through the real CLI into a database holding other sessions.
func (rb *reliability) imports(ctx context.Context, r *reliabilityReport, n int) error {
	home := filepath.Join(rb.dir, "import-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	count := func() (int, error) {
		out, err := exec.CommandContext(ctx, rb.exe, "--home", home, "sessions", "list", "--all", "--json", "--limit", "0").Output()
		if err != nil {
			return 0, fmt.Errorf("sessions list: %w", err)
		}
		var ls []json.RawMessage
		if err := json.Unmarshal(out, &ls); err != nil {
			return 0, err
		}
		return len(ls), nil
	}
	for i := 0; i < n; i++ {
		good := i%5 == 0
		sessions := 1 + rb.rng.IntN(30)
		bad := -1
		if !good {
			bad = rb.rng.IntN(sessions + 1)
		}
		var b strings.Builder
		fmt.Fprintf(&b, `{"spool_export":1,"exported_at":"2026-11-30T00:00:00Z","sessions":%d}`+"\n", sessions)
		for s := 0; s <= sessions; s++ {
			if s == bad {
				b.WriteString(`{"type":"session",` + hostileFields[rb.rng.IntN(len(hostileFields))] +
					`,"source":"cli","started_at":"2026-11-30T00:00:00Z","message_count":0,"tool_call_count":0,"usage":{}}` + "\n")
				continue
			}
			if s == sessions {
				break
			}
			id := fmt.Sprintf("imp%04d_%02d", i, s)
			fmt.Fprintf(&b, `{"type":"session","id":%q,"title":"t %d %d","source":"cli","started_at":"2026-11-30T00:00:00Z","message_count":1,"tool_call_count":0,"usage":{}}`+"\n", id, i, s)
			fmt.Fprintf(&b, `{"type":"message","session_id":%q,"id":1,"role":"user","content":"imported %d","timestamp":"2026-11-30T00:00:00Z","summary":false,"active":true,"compacted":false}`+"\n", id, i)
		}
		file := filepath.Join(rb.dir, "import.jsonl")
		if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
			return err
		}
		before, err := count()
		if err != nil {
			return err
		}
		err = exec.CommandContext(ctx, rb.exe, "--home", home, "sessions", "import", file).Run()
		after, cerr := count()
		if cerr != nil {
			return cerr
		}
		switch {
		case good && (err != nil || after != before+sessions):
			r.Import.Rejected++
		case !good && after != before:
			r.Import.Partial++
		case !good && err == nil:
			r.Import.Partial++ // accepted a hostile line
		}
		r.Import.Files++
	}
	return nil
}

// mixed: three writer processes append turns without pause while reader loops run the real
// CLI (sessions list, search, sessions show, db check) and an import loop writes through it,
// for d. Every command that fails or prints on stderr is a user-visible error.
func (rb *reliability) mixed(ctx context.Context, r *reliabilityReport, d time.Duration) error {
	home := filepath.Join(rb.dir, "mixed-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	path := filepath.Join(home, "spool.db")
	db, err := rb.open(ctx, path, "NORMAL")
	if err != nil {
		return err
	}
	db.Close()
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var mu sync.Mutex
	fail := func(what, msg string) {
		mu.Lock()
		defer mu.Unlock()
		r.Mixed.Errors++
		if strings.Contains(msg, "database is locked") {
			r.Mixed.LockedErrors++
		}
		sample := what + ": " + oneLine(msg)
		if len(r.Mixed.Samples) < 5 && !slices.Contains(r.Mixed.Samples, sample) {
			r.Mixed.Samples = append(r.Mixed.Samples, sample)
		}
	}
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd, lines, in, stderr, err := rb.worker(context.WithoutCancel(ctx), "append-loop", path, fmt.Sprintf("writer-%d", w))
			if err != nil {
				fail("writer", err.Error())
				return
			}
			go func() { <-ctx.Done(); in.Close() }() // EOF on stdin: stop
			n := 0
			for lines.Scan() {
				n++
			}
			if err := cmd.Wait(); err != nil || stderr.Len() > 0 {
				fail("writer", fmt.Sprintf("%v %s", err, stderr.String()))
			}
			mu.Lock()
			r.Mixed.Appends += n
			mu.Unlock()
		}()
	}
	readers := [][]string{
		// show reads a session that stays small (one the import loop made): a writer's session
		// soon passes sessions.max_export_messages, which show refuses on purpose.
		{"sessions", "list"}, {"search", "turn"}, {"db", "check"}, {"sessions", "show", "mixed_0_3"},
		{"search", "answer OR result", "--role", "tool"},
	}
	for i, args := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ctx.Err() == nil; k++ {
				argv := args
				if i == 0 && k%4 == 3 {
					argv = []string{"sessions", "import", rb.tinyBundle(fmt.Sprintf("mixed_%d_%d", i, k))}
				}
				cmd := exec.Command(rb.exe, append([]string{"--home", home}, argv...)...)
				var stderr bytes.Buffer
				cmd.Stderr, cmd.Stdout = &stderr, io.Discard
				err := cmd.Run()
				mu.Lock()
				r.Mixed.Commands++
				mu.Unlock()
				if err != nil || stderr.Len() > 0 {
					if argv[len(argv)-1] == "mixed_0_3" && strings.Contains(stderr.String(), "not found") {
						continue // the import loop has not made it yet
					}
					fail(strings.Join(argv, " "), fmt.Sprintf("%v: %s", err, stderr.String()))
				}
			}
		}()
	}
	wg.Wait()
	r.Mixed.Minutes = time.Since(start).Minutes()
	return nil
}

// tinyBundle writes a one-session export file for id and returns its path.
func (rb *reliability) tinyBundle(id string) string {
	file := filepath.Join(rb.dir, id+".jsonl")
	body := `{"spool_export":1,"exported_at":"2026-11-30T00:00:00Z","sessions":1}` + "\n" +
		fmt.Sprintf(`{"type":"session","id":%q,"source":"cli","started_at":"2026-11-30T00:00:00Z","message_count":1,"tool_call_count":0,"usage":{}}`, id) + "\n" +
		fmt.Sprintf(`{"type":"message","session_id":%q,"id":1,"role":"user","content":"tiny import","timestamp":"2026-11-30T00:00:00Z","summary":false,"active":true,"compacted":false}`, id) + "\n"
	_ = os.WriteFile(file, []byte(body), 0o600)
	return file
}

// search: random queries built from operators, quotes, punctuation, CJK and control bytes on
// the mixed-load database; any error is an engine error (user text must never break a search).
func (rb *reliability) search(ctx context.Context, r *reliabilityReport, n int) error {
	db, err := rb.open(ctx, filepath.Join(rb.dir, "mixed-home", "spool.db"), "NORMAL")
	if err != nil {
		return err
	}
	defer db.Close()
	parts := []string{"turn", "answer", "result", "AND", "OR", "NOT", "NEAR", "NEAR(", "(", ")", `"`, "'", "*", "^", ":", "-",
		"+", "{", "}", "[", "]", "col:", "content:", "桂林", "北京", "漓江", "测试", "🙂", "\x00", "\x1b[2J", "\\", "%", "_",
		"..", "/", "writer-1", "t12", "x*", "\"unterminated", "AND OR", "NOT NOT", ",", ";", "'; DROP TABLE messages; --", "\u202e"}
	roles := [][]string{nil, {"user"}, {"tool"}, {"assistant"}}
	for i := 0; i < n; i++ {
		var b strings.Builder
		for k := 0; k <= rb.rng.IntN(6); k++ {
			if k > 0 && rb.rng.IntN(3) > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(parts[rb.rng.IntN(len(parts))])
		}
		q := b.String()
		_, err := db.Search(ctx, store.SearchQuery{Text: q, Roles: roles[rb.rng.IntN(len(roles))], Limit: 1 + rb.rng.IntN(30)})
		r.Search.Queries++
		if err != nil && !errors.Is(err, store.ErrInvalid) {
			r.Search.EngineErrors++
			if len(r.Search.Samples) < 5 {
				r.Search.Samples = append(r.Search.Samples, fmt.Sprintf("%q: %v", q, err))
			}
		}
	}
	return nil
}

func (a *app) benchReliabilityWorkerCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "reliability-worker ROLE ARGS...",
		Short:  "One process of 'bench reliability' (internal)",
		Hidden: true,
		Args:   args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if err := reliabilityWorker(cmd.Context(), argv, a.stdin, a.stdout); err != nil {
				return fmt.Errorf("reliability worker %s: %w", argv[0], err)
			}
			return nil
		},
	}
}

func reliabilityWorker(ctx context.Context, argv []string, stdin io.Reader, stdout io.Writer) error {
	need := func(n int) error {
		if len(argv) != n+1 {
			return fmt.Errorf("want %d arguments, got %d", n, len(argv)-1)
		}
		return nil
	}
	open := func(path, sync string) (*sqlite.DB, error) {
		return sqlite.Open(ctx, path, sqlite.Options{Synchronous: sync, Logger: storeLogger(os.Stderr)})
	}
	turn := func(st store.Backend, sid, tag string) error {
		call := "call-" + tag
		_, err := st.AppendBatch(ctx, sid, []store.Message{
			{Role: store.RoleUser, Content: tag + " ask " + strings.Repeat("x", 500)},
			{Role: store.RoleAssistant, Content: tag + " calling", ToolCalls: []store.ToolCall{{ID: call, Type: "function",
				Function: store.ToolFunction{Name: "terminal", Arguments: `{"cmd":"ls"}`}}}},
			{Role: store.RoleTool, Content: tag + " result " + strings.Repeat("y", 2000), ToolCallID: call, ToolName: "terminal"},
			{Role: store.RoleAssistant, Content: tag + " answer"},
		})
		return err
	}
	switch argv[0] {
	case "append": // path sync first: append turns t<first>, t<first+1>, ... until killed
		if err := need(3); err != nil {
			return err
		}
		first, _ := strconv.Atoi(argv[3])
		db, err := open(argv[1], argv[2])
		if err != nil {
			return err
		}
		defer db.Close()
		if _, err := db.CreateSession(ctx, store.NewSession{ID: "victim"}); err != nil {
			return err
		}
		for i := first; ; i++ {
			if err := turn(db, "victim", fmt.Sprintf("t%d", i)); err != nil {
				return err
			}
			fmt.Fprintln(stdout, i)
		}
	case "append-loop": // path session: append turns until stdin closes
		if err := need(2); err != nil {
			return err
		}
		db, err := open(argv[1], "NORMAL")
		if err != nil {
			return err
		}
		defer db.Close()
		if _, err := db.CreateSession(ctx, store.NewSession{ID: argv[2]}); err != nil {
			return err
		}
		done := make(chan struct{})
		go func() { _, _ = io.Copy(io.Discard, stdin); close(done) }()
		for i := 0; ; i++ {
			select {
			case <-done:
				return nil
			default:
			}
			if err := turn(db, argv[2], fmt.Sprintf("t%d", i)); err != nil {
				return err
			}
			fmt.Fprintln(stdout, i)
			// A pause between turns, as a busy agent has: the database grows by about
			// 0.5 MB/s instead of filling the disk.
			time.Sleep(time.Duration(5+rand.IntN(20)) * time.Millisecond)
		}
	case "stale": // path session ttl: hold the lease, wait for a line on stdin, then write stale
		if err := need(3); err != nil {
			return err
		}
		ttl, err := time.ParseDuration(argv[3])
		if err != nil {
			return err
		}
		db, err := open(argv[1], "NORMAL")
		if err != nil {
			return err
		}
		defer db.Close()
		l, err := db.AcquireLease(ctx, argv[2], "stale-holder", ttl)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, "held")
		_, _ = bufio.NewReader(stdin).ReadString('\n')
		fence := store.WithLease(l)
		_, _ = db.Append(ctx, argv[2], store.Message{Role: store.RoleUser, Content: "stale append"}, fence)
		_, _ = db.AppendBatch(ctx, argv[2], []store.Message{{Role: store.RoleUser, Content: "stale batch"}}, fence)
		_ = db.RecordRequest(ctx, argv[2], store.RequestRecord{Usage: store.Usage{InputTokens: 100, OutputTokens: 10}, Lease: &l})
		_, _ = db.ArchiveAndCompact(ctx, store.CompactRequest{SessionID: argv[2], Messages: []store.Message{
			{Role: store.RoleUser, Content: "stale summary", Summary: true}}}, l.Fence())
		_, _ = db.UndoLastExchange(ctx, argv[2], l.Fence())
		return nil
	}
	return fmt.Errorf("unknown role %q", argv[0])
}
