package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/config"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/tools"
	"github.com/spoolhq/spool/turn"
)

// chatHelp lists the slash commands.
const chatHelp = `Commands:
  /new                 start a new session with the next message
  /clear               clear the screen and start a new session (the old one stays resumable)
  /model [NAME]        show the model, or switch this session to NAME from the next message
  /resume [id|title]   continue another session (without an argument: pick one; a list when piped)
  /branch [title]      copy this session's history into a new branch and switch to it
  /compress [focus]    compact this session now, optionally around a topic
  /title NAME          name this session
  /sessions            list recent sessions
  /search QUERY        search every session
  /usage               tokens, cost, cache share and the last cache break
  /undo                take back your last message and everything after it, and offer to
                       restore the files its tool calls wrote
  /expand              show the last turn's tool output in full
  /paste, /edit        paste mode (Enter is a new line, Ctrl-D sends) or $EDITOR, on a terminal
  /handoff PLATFORM:CHAT[:THREAD] [--user ID]
                       continue this session in a Telegram, Slack or Discord chat
  /help                this list
  /exit                leave (Ctrl-D too); Ctrl-C interrupts a running turn`

// chat is one interactive session loop.
type chat struct {
	a   *app
	ag  *agent.Agent
	st  chatStore
	sid string
	in  lineSource
	tty bool
	// ui is the line editor and live view on a terminal (nil: lines are read as they come, for
	// pipes, scripts and TERM=dumb).
	ui *tui
	// allowed are the approvals the user gave for the rest of this session ("a" at the prompt):
	// a command's first word ("terminal:go") or a whole tool ("write_file"). A session switch
	// forgets them.
	allowed    map[string]bool
	allowedSID string
	// view is the running turn's output, so the approval prompt can clear its spinner.
	view *turnView
	// lease fences transcript writes made outside a turn (/undo) like a turn's own.
	lease turn.Options
	// verbose shows tool results in full (--verbose); otherwise their first lines, and /expand
	// shows lastTools, the last turn's, in full.
	verbose   bool
	lastTools []shownTool
	// journal has what write_file and edit_file changed, for /undo; yes (--yes) restores
	// without asking when there is no terminal to ask.
	journal *tools.Journal
	yes     bool
	// switched is the model /model chose ("": none); the chat's session records it.
	switched string
}

func (a *app) chatCommand() *cobra.Command {
	var f modelFlags
	var verbose bool
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Talk with the agent: a line REPL with streaming replies and slash commands",
		Long: "Read messages line by line from stdin and answer each with one agent turn, streaming the\n" +
			"reply. --continue resumes the most recent session, --resume X a given one, with a short recap.\n" +
			"Terminal commands ask for approval on a terminal unless --yes. Type /help for commands.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.json {
				return &usageError{errors.New("spool chat is interactive and prints no JSON; use spool run --output-format json or stream-json")}
			}
			// Ctrl-C interrupts a turn, not the chat: turns get their own signal handling.
			ctx := context.WithoutCancel(cmd.Context())
			c := &chat{a: a, tty: isTerminal(a.stdin), verbose: verbose, yes: f.yes}
			c.in = newLineReader(a.stdin)
			useTUI := c.tty && isTerminal(a.stdout) && os.Getenv("TERM") != "dumb"
			ag, st, sid, notice, err := a.sessionAgent(ctx, f, c.approve, true, chatHints)
			if err != nil {
				return err
			}
			c.ag, c.st, c.sid = ag, st, sid
			cfg, err := a.config()
			if err != nil {
				return err
			}
			c.lease = leaseOptions(cfg)
			c.journal = fileJournal(cfg)
			if err := a.pruneFileRecords(time.Now().Add(-fileRecordAge)); err != nil {
				fmt.Fprintf(a.stderr, "spool: warning: %s\n", oneLine(err.Error()))
			}
			if notice != "" {
				fmt.Fprintln(a.stderr, notice)
			}
			if useTUI {
				stop := c.startUI(cmd.Context())
				defer stop()
			}
			if c.sid != "" {
				c.recap(ctx)
			}
			return c.loop(ctx)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&verbose, "verbose", false, "show tool results in full (default: their first lines; /expand shows the rest)")
	return cmd
}

// approve asks on the terminal before a command runs, a file is written or a file outside the
// workspace is touched; without a terminal it refuses. "a" allows the requests of the same
// scope (tools.ApprovalRequest.Scope) for the rest of the session; Ctrl-C refuses at once.
func (c *chat) approve(ctx context.Context, req tools.ApprovalRequest) error {
	if !c.tty {
		return fmt.Errorf("%w: no terminal to ask for approval; start spool chat with --yes to allow it", tools.ErrDenied)
	}
	// A new session gets its id after its first turn; only a switch to another one forgets.
	if c.allowed == nil || (c.allowedSID != "" && c.allowedSID != c.sid) {
		c.allowed = map[string]bool{}
	}
	c.allowedSID = c.sid
	scope, scopeText := req.Scope()
	if c.allowed[scope] {
		return nil
	}
	if c.view != nil {
		// The tool's spinner would draw over the question; it comes back once answered.
		c.view.aside(func() {})
		defer c.view.wait("running " + req.Tool)
	}
	if req.Diff != "" {
		fmt.Fprintln(c.a.stderr, colorDiff(c.a.colour(), visible(req.Diff)))
	}
	question := fmt.Sprintf("%s [y/N/a=always %s this session]", visible(req.Question()), scopeText)
	line, err := c.askLine(ctx, question)
	if err != nil {
		fmt.Fprintln(c.a.stderr)
		if ctx.Err() != nil {
			return fmt.Errorf("%w: the user interrupted", tools.ErrDenied)
		}
		return fmt.Errorf("%w: no answer", tools.ErrDenied)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	case "a", "always":
		c.allowed[scope] = true
		return nil
	}
	return fmt.Errorf("%w: the user said no", tools.ErrDenied)
}

func (c *chat) prompt() {
	if c.tty && c.ui == nil {
		fmt.Fprint(c.a.stdout, "› ")
	}
}

func (c *chat) loop(ctx context.Context) error {
	if c.tty {
		fmt.Fprintln(c.a.stderr, "spool chat: type a message, /help for commands, Ctrl-D to leave.")
		c.banner()
	}
	defer c.goodbye()
	for c.prompt(); ; c.prompt() {
		// Ctrl-C at an idle prompt leaves the chat (status 130); during a turn it stops the turn.
		rctx, stop := signal.NotifyContext(ctx, os.Interrupt)
		line, err := c.in.read(rctx)
		interrupted := rctx.Err() != nil && ctx.Err() == nil || errors.Is(err, errInterrupted)
		stop()
		switch {
		case interrupted && c.ui != nil:
			return fmt.Errorf("chat: %w", errInterrupted)
		case interrupted:
			fmt.Fprintln(c.a.stderr)
			return fmt.Errorf("chat: %w", context.Canceled)
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("read input: %w", err)
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if strings.HasPrefix(line, "/") {
			if quit := c.command(ctx, line); quit {
				return nil
			}
			continue
		}
		c.turn(ctx, line)
	}
}

// banner says, once at the start, what this chat talks to and where.
func (c *chat) banner() {
	th := c.ag.Threshold()
	sid := "new (starts with your first message)"
	if c.sid != "" {
		sid = c.sid
	}
	wd, _ := os.Getwd()
	fmt.Fprintf(c.a.stderr, "model %s · session %s · %s · window %d tokens (compacts at %d)\n",
		c.ag.Model(), sid, visible(wd), th.Model.ContextLength, th.Tokens)
}

// goodbye tells how to come back to the session the chat leaves.
func (c *chat) goodbye() {
	if c.tty && c.sid != "" {
		fmt.Fprintf(c.a.stderr, "Resume with: spool chat --resume %s\n", c.sid)
	}
}

// turn runs one message; errors are shown and the chat goes on.
func (c *chat) turn(ctx context.Context, input string) {
	tctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	if c.ui != nil {
		// In the editor's raw mode Ctrl-C is a key, not a signal: the editor cancels the turn.
		var cancel context.CancelFunc
		tctx, cancel = context.WithCancel(tctx)
		defer cancel()
		c.ui.setCancel(cancel)
		defer c.ui.setCancel(nil)
	}
	v := c.newView(tctx)
	c.view = v
	defer func() { c.view = nil }()
	c.lastTools = nil
	v.wait("thinking")
	res, err := c.ag.Run(tctx, c.sid, input, agent.RunOptions{
		OnDelta: func(d provider.Delta) {
			if d.Content != "" {
				v.write(visible(d.Content))
			}
		},
		OnWait: func(waited time.Duration, holder string) {
			// On a terminal the spinner's label says it, updated with every notice (the first
			// comes at once); elsewhere each notice is a line.
			line := waitLine(holder, waited, leaseSince(ctx, c.st, holder))
			if v.spin {
				v.wait(line)
			} else {
				v.aside(func() { fmt.Fprintf(c.a.stderr, "(%s)\n", line) })
			}
		},
		OnNotice: func(s string) { v.aside(func() { fmt.Fprintf(c.a.stderr, "(%s)\n", oneLine(s)) }) },
		OnToolCall: func(tc store.ToolCall) {
			v.aside(func() { fmt.Fprintf(c.a.stderr, "  ⚙ %s\n", toolCallLine(tc)) })
			v.wait("running " + tc.Function.Name)
		},
		OnToolResult: func(tc store.ToolCall, result string, isErr bool) {
			c.lastTools = append(c.lastTools, shownTool{call: tc, result: result, isErr: isErr})
			width := terminalWidth(c.a.stderr)
			if c.ui != nil {
				width = int(c.ui.width.Load())
			}
			v.aside(func() { fmt.Fprint(c.a.stderr, resultBlock(result, isErr, c.verbose, width, "/expand shows all")) })
			v.wait("thinking")
		},
	})
	streamed := v.end()
	if res.SessionID != "" {
		c.sid = res.SessionID
		if err := c.recordModel(ctx); err != nil {
			fmt.Fprintf(c.a.stderr, "spool: %s\n", oneLine(err.Error()))
		}
	}
	if streamed {
		if c.ui == nil {
			fmt.Fprintln(c.a.stdout)
		}
	} else if err == nil && res.Reply != "" {
		fmt.Fprintln(c.a.stdout, res.Reply)
	}
	switch {
	case res.Interrupted:
		fmt.Fprintln(c.a.stderr, "(interrupted: what was said is kept)")
	case err != nil:
		fmt.Fprintf(c.a.stderr, "spool: %s\n", oneLine(err.Error()))
	}
	if err == nil {
		c.status(ctx, res)
	}
}

// turnView is what one turn shows on stdout: the streamed reply (rendered as markdown on a
// colour terminal) and, on a terminal, a spinner while nothing streams. Its methods may be
// called from any of the turn's callbacks.
type turnView struct {
	ctx      context.Context // the turn's: an interrupt stops the spinner
	out      io.Writer
	md       *markdown // nil: the reply goes out as it came
	spin     bool      // stdout is a terminal that can redraw a line
	mu       sync.Mutex
	sp       *spinner
	streamed bool
	// ui, when set, draws instead: finished lines go above the editor, the unfinished one and
	// the spinner live in its view.
	ui *tui
}

func (c *chat) newView(ctx context.Context) *turnView {
	v := &turnView{ctx: ctx, out: c.a.stdout, spin: isTerminal(c.a.stdout) && os.Getenv("TERM") != "dumb"}
	if c.ui != nil {
		v.ui, v.spin = c.ui, true
		v.md = newMarkdown(c.a.stdout)
		v.md.plain = !c.a.colour()
		// A provider retry's notice replaces the spinner's label: one row, updated in place.
		note := func(s string) { v.wait(s) }
		c.a.retryNote.Store(&note)
		return v
	}
	if c.a.colour() {
		v.md = newMarkdown(c.a.stdout)
	}
	return v
}

// wait shows a spinner labelled label until the next output (on a terminal only).
func (v *turnView) wait(label string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.stopSpinner()
	if v.ui != nil {
		if v.ctx.Err() == nil {
			v.ui.spin(label)
		}
		return
	}
	if v.spin && v.ctx.Err() == nil {
		v.sp = startSpinner(v.ctx, v.out, label)
	}
}

// write shows a piece of the reply.
func (v *turnView) write(s string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.stopSpinner()
	v.streamed = true
	if v.ui != nil {
		// Finished lines are printed above the editor as they end; the unfinished one is
		// shown at once, styled as far as it goes, and redrawn with every delta.
		v.md.Write([]byte(s))
		if limit := v.ui.liveLimit(); len(v.md.line) > limit {
			// A paragraph taller than a third of the screen is printed up to its last
			// space, so the live part always fits.
			v.md.breakAt(limit)
		}
		v.ui.live(v.md.Peek())
		return
	}
	if v.md != nil {
		v.md.Write([]byte(s))
		return
	}
	io.WriteString(v.out, s)
}

// aside prints something that is not the reply (to stderr, on the same screen): the spinner
// goes and the reply's unfinished line is drawn first, so nothing interleaves.
func (v *turnView) aside(print func()) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.stopSpinner()
	if v.md != nil {
		v.md.Flush()
	}
	if v.ui != nil {
		// The reply's unfinished line goes above the editor now, on a line of its own.
		if w, ok := v.out.(*tuiWriter); ok {
			w.flush()
		}
		v.ui.live("")
	}
	print()
}

// end stops the spinner, draws what is left of the reply and reports whether any streamed.
func (v *turnView) end() (streamed bool) {
	v.aside(func() { streamed = v.streamed })
	return streamed
}

// stopSpinner ends the spinner, if any; the caller holds v.mu.
func (v *turnView) stopSpinner() {
	if v.ui != nil {
		v.ui.spin("")
	}
	v.sp.stop()
	v.sp = nil
}

// spinner draws a moving mark and a label on the current line until stopped; stopping erases
// the line (carriage return, clear line) so the next output starts clean.
type spinner struct {
	quit chan struct{}
	done chan struct{}
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

const (
	spinnerEvery = 100 * time.Millisecond
	clearLine    = "\r\x1b[2K"
)

// startSpinner starts the goroutine that draws; it ends on stop or when ctx ends (Ctrl-C).
func startSpinner(ctx context.Context, w io.Writer, label string) *spinner {
	s := &spinner{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(spinnerEvery)
		defer tick.Stop()
		start := time.Now()
		for i := 0; ; i++ {
			io.WriteString(w, clearLine+spinnerLine(i, label, time.Since(start)))
			select {
			case <-s.quit:
			case <-ctx.Done():
			case <-tick.C:
				continue
			}
			io.WriteString(w, clearLine)
			return
		}
	}()
	return s
}

// spinnerLine is the spinner's row at frame: its mark, label and the time it has run
// ("⠙ thinking… 12s", "1m05s" past a minute).
func spinnerLine(frame int, label string, elapsed time.Duration) string {
	secs := int(max(elapsed, 0) / time.Second)
	t := fmt.Sprintf("%ds", secs)
	if secs >= 60 {
		t = fmt.Sprintf("%dm%02ds", secs/60, secs%60)
	}
	return spinnerFrames[frame%len(spinnerFrames)] + " " + label + "… " + t
}

// stop ends the spinner and waits until its line is erased; a nil spinner is a no-op.
func (s *spinner) stop() {
	if s == nil {
		return
	}
	select {
	case <-s.quit:
	default:
		close(s.quit)
	}
	<-s.done
}

// status is the line under each answer: model, context size against the trigger, cached share.
func (c *chat) status(ctx context.Context, res agent.Result) {
	cached := 0.0
	if res.Usage.InputTokens > 0 {
		cached = 100 * float64(res.Usage.CacheReadTokens) / float64(res.Usage.InputTokens)
	}
	last := int64(0)
	if recs, err := c.st.Requests(ctx, c.sid, 1); err == nil && len(recs) == 1 {
		last = recs[0].Usage.InputTokens
	}
	th, model := c.ag.ThresholdFor(res.Fallback), c.ag.Model()
	if res.Fallback != "" {
		model = fmt.Sprintf("%s (fallback %s)", res.Model, res.Fallback)
	}
	fmt.Fprintf(c.a.stderr, "[%s · %d / %d tokens (compacts at %d) · %.0f%% cached]\n", visible(model), last, th.Model.ContextLength, th.Tokens, cached)
}

// command runs a slash command and reports whether the chat should end.
func (c *chat) command(ctx context.Context, line string) bool {
	name, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	arg = strings.TrimSpace(arg)
	var err error
	switch name {
	case "/exit", "/quit":
		return true
	case "/help":
		fmt.Fprintln(c.a.stdout, chatHelp)
	case "/new":
		c.sid = ""
		fmt.Fprintln(c.a.stdout, "New session: it starts with your next message.")
	case "/clear":
		c.clear()
	case "/model":
		err = c.switchModel(ctx, arg)
	case "/resume":
		if arg == "" && c.ui != nil {
			err = c.pickSession(ctx)
			break
		}
		if arg == "" {
			err = c.sessions(ctx)
			break
		}
		var s store.Session
		if s, err = c.a.resolve(ctx, c.st, arg); err == nil {
			c.sid = s.ID
			c.recap(ctx)
		}
	case "/branch":
		err = c.branch(ctx, arg)
	case "/compress":
		err = c.compress(ctx, arg)
	case "/title":
		err = c.title(ctx, arg)
	case "/sessions":
		err = c.sessions(ctx)
	case "/search":
		err = c.search(ctx, arg)
	case "/usage":
		err = c.usage(ctx)
	case "/undo":
		err = c.undo(ctx)
	case "/expand":
		c.expand()
	case "/handoff":
		err = c.handoff(ctx, arg)
	default:
		err = fmt.Errorf("unknown command %s (/help lists them)", name)
	}
	if err != nil {
		fmt.Fprintf(c.a.stderr, "spool: %s\n", oneLine(err.Error()))
	}
	return false
}

// handoff binds a chat to this session and has the agent say there where the work stands.
func (c *chat) handoff(ctx context.Context, arg string) error {
	if err := c.needSession(); err != nil {
		return err
	}
	f := strings.Fields(arg)
	if len(f) == 0 {
		return errors.New("/handoff needs a target: PLATFORM:CHAT[:THREAD] (e.g. slack:C0123:1712345678.000100)")
	}
	to, user := f[0], ""
	switch {
	case len(f) == 3 && f[1] == "--user":
		user = f[2]
	case len(f) == 2:
		user = f[1]
	case len(f) != 1:
		return errors.New("/handoff PLATFORM:CHAT[:THREAD] [--user ID]")
	}
	cfg, err := c.a.config()
	if err != nil {
		return err
	}
	h, err := c.a.handoff(ctx, cfg, c.st, c.ag, c.ag.Model(), c.ag.Threshold().Model.ContextLength, c.sid, to, user, "")
	if err != nil {
		return err
	}
	fmt.Fprintf(c.a.stdout, "Session %s now continues in %s (key %s); the agent said there: %s\n", h.SessionID, to, h.Key, oneLine(visible(truncate(h.Reply, 200))))
	fmt.Fprintf(c.a.stdout, "Replies there continue it; 'spool chat --resume %s' takes it back.\n", h.SessionID)
	c.sid = h.SessionID
	return nil
}

func (c *chat) needSession() error {
	if c.sid == "" {
		return errors.New("no session yet: send a message first")
	}
	return nil
}

func (c *chat) title(ctx context.Context, name string) error {
	if name == "" {
		return errors.New("/title needs a name")
	}
	if err := c.needSession(); err != nil {
		return err
	}
	if err := c.st.SetTitle(ctx, c.sid, name); err != nil {
		return err
	}
	fmt.Fprintf(c.a.stdout, "Session %s is now %q.\n", c.sid, name)
	return nil
}

func (c *chat) branch(ctx context.Context, title string) error {
	if err := c.needSession(); err != nil {
		return err
	}
	child, err := c.st.Branch(ctx, c.sid, store.NewSession{Title: title, Source: "cli", Model: c.ag.Model()})
	if err != nil {
		return fmt.Errorf("branch %s: %w", c.sid, err)
	}
	fmt.Fprintf(c.a.stdout, "Branched %s into %s; the parent stays resumable.\n", c.sid, child.ID)
	c.sid = child.ID
	return nil
}

// undo hides the last exchange under the conversation's lease, so it cannot cut into a turn
// another process is running, says what went, and offers to restore the files it wrote.
func (c *chat) undo(ctx context.Context) error {
	if err := c.needSession(); err != nil {
		return err
	}
	sid := c.sid
	if tip, err := c.st.ResumeTarget(ctx, sid); err == nil {
		sid = tip
	}
	lo := c.lease
	lo.OnWait = func(waited time.Duration, _ string) {
		fmt.Fprintf(c.a.stderr, "(session busy: another turn is running, waited %s)\n", waited.Round(time.Second))
	}
	var ask string
	var hidden int
	var writes []store.ToolCall
	err := turn.Run(ctx, c.st, sid, lo, func(tctx context.Context, t *turn.Turn) error {
		// Read under the lease: another process may have added a turn while we waited.
		ms, err := c.st.Conversation(tctx, sid, store.ViewActive)
		if err != nil {
			return fmt.Errorf("load %s: %w", sid, err)
		}
		ask, writes = lastExchange(ms)
		hidden, err = c.st.UndoLastExchange(tctx, sid, t.Fence())
		return err
	})
	c.sid = sid
	if errors.Is(err, store.ErrNotFound) {
		fmt.Fprintln(c.a.stdout, "Nothing to undo: this session has no message of yours left.")
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.a.stdout, "Undid your last message \"%s\" and %d message(s) after it.\n", truncate(ask, 60), hidden-1)
	return c.restoreFiles(ctx, sid, writes)
}

func (c *chat) compress(ctx context.Context, focus string) error {
	if err := c.needSession(); err != nil {
		return err
	}
	res, err := c.ag.Compact(ctx, c.sid, focus, agent.RunOptions{OnNotice: func(s string) { fmt.Fprintln(c.a.stdout, s) }})
	if err != nil {
		return err
	}
	c.sid = res.SessionID
	return nil
}

func (c *chat) sessions(ctx context.Context) error {
	ls, err := c.st.ListSessions(ctx, store.ListOptions{Limit: 10})
	if err != nil {
		return err
	}
	if len(ls) == 0 {
		fmt.Fprintln(c.a.stdout, "No sessions yet.")
	}
	for _, l := range ls {
		mark := " "
		if l.ID == c.sid {
			mark = "*"
		}
		fmt.Fprintf(c.a.stdout, "%s %s  %-20s %4d msgs  %s\n", mark, l.ID, truncate(cmp.Or(l.Title, "-"), 20), l.Shown.Messages, truncate(l.Preview, 50))
	}
	return nil
}

func (c *chat) search(ctx context.Context, q string) error {
	if q == "" {
		return errors.New("/search needs a query")
	}
	hits, err := c.st.Search(ctx, store.SearchQuery{Text: q, Limit: 10, NoContext: true})
	if err != nil {
		return err
	}
	if len(hits) == 0 {
		fmt.Fprintln(c.a.stdout, "No matches.")
	}
	for _, h := range hits {
		fmt.Fprintf(c.a.stdout, "%s #%d %s: %s\n", h.SessionID, h.MessageID, h.Role, chatSnippet(h.Snippet, c.a.colour()))
	}
	return nil
}

// chatSnippet is a search hit's snippet as the chat shows it: on one line, at most 100
// columns, the matches highlighted on a colour terminal and unmarked otherwise (the markers
// are for pipes; a person reading the chat does not need them).
func chatSnippet(s string, colour bool) string {
	s = oneLine(s)
	if !colour {
		s = strings.NewReplacer(markOpen, "", markClose, "").Replace(s)
	}
	return ansi.Truncate(renderSnippet(s, colour), 100, "…")
}

func (c *chat) usage(ctx context.Context) error {
	if err := c.needSession(); err != nil {
		return err
	}
	s, err := c.st.GetSession(ctx, c.sid)
	if err != nil {
		return err
	}
	u := s.Usage
	share := 0.0
	if u.InputTokens > 0 {
		share = 100 * float64(u.CacheReadTokens) / float64(u.InputTokens)
	}
	fmt.Fprintf(c.a.stdout, "Session %s: %d calls, %d prompt tokens (%.1f%% cached, %d written to cache), %d output tokens, cost %s\n",
		s.ID, u.APICalls, u.InputTokens, share, u.CacheWriteTokens, u.OutputTokens, formatCost(s.Model, u.CostUSD))
	recs, err := c.st.Requests(ctx, c.sid, 0)
	if err != nil {
		return err
	}
	if line := modelsLine(modelUses(recs)); line != "" {
		fmt.Fprintf(c.a.stdout, "Models: %s\n", visible(line))
	}
	for _, r := range recs {
		if r.Break != nil {
			fmt.Fprintf(c.a.stdout, "Last cache break: %s, at %s %d (%s), %d cached tokens lost.\n",
				formatTime(r.At), r.Break.Layer, r.Break.Index, r.Break.Reason, r.Break.LostTokens)
			if r.Break.Detail != "" {
				fmt.Fprintf(c.a.stdout, "  %s\n", visible(r.Break.Detail))
			}
			return nil
		}
	}
	fmt.Fprintln(c.a.stdout, "No cache break recorded.")
	return nil
}

// recap prints where a resumed session stands: counts, the last ask and the last answer.
func (c *chat) recap(ctx context.Context) {
	tip, err := c.st.ResumeTarget(ctx, c.sid)
	if err == nil {
		c.sid = tip
	}
	s, err := c.st.GetSession(ctx, c.sid)
	if err != nil {
		fmt.Fprintf(c.a.stderr, "spool: %s\n", oneLine(err.Error()))
		return
	}
	// The display view: after a compaction the last thing the user wrote may be archived, and
	// a summary carrier is no ask (one merged into the user's message gives back its words).
	ms, err := c.st.Conversation(ctx, c.sid, store.ViewDisplay)
	if err != nil {
		fmt.Fprintf(c.a.stderr, "spool: %s\n", oneLine(err.Error()))
		return
	}
	var ask, answer string
	for i := len(ms) - 1; i >= 0 && (ask == "" || answer == ""); i-- {
		switch {
		case ms[i].Role == store.RoleUser && ask == "":
			ask, _ = compress.UserText(ms[i])
		case ms[i].Role == store.RoleAssistant && answer == "" && ms[i].Content != "" && !ms[i].Summary:
			answer = ms[i].Content
		}
	}
	title := ""
	if s.Title != "" {
		title = fmt.Sprintf(" %q", s.Title)
	}
	fmt.Fprintf(c.a.stdout, "Resumed %s%s: %d messages, %d tool calls.\n", s.ID, title, s.Shown.Messages, s.Shown.ToolCalls)
	if ask != "" {
		fmt.Fprintf(c.a.stdout, "  last ask:    %s\n", truncate(ask, 100))
	}
	if answer != "" {
		fmt.Fprintf(c.a.stdout, "  last answer: %s\n", truncate(answer, 100))
	}
}

// startUI puts the line editor on the terminal for the rest of the chat: the chat's output goes
// above it. The returned function ends it, restores the terminal and the plain output, and
// prints what was left unfinished.
//
// When root ends (SIGTERM, or SIGINT sent from outside: the editor's raw mode makes Ctrl-C a key)
// the running turn is interrupted and the chat leaves as after Ctrl-C, restoring the terminal.
func (c *chat) startUI(root context.Context) (stop func()) {
	ctx := context.WithoutCancel(root)
	stdout, stderr := c.a.stdout, c.a.stderr
	var hist *history
	if home, err := config.ResolveHome(c.a.home); err == nil {
		hist = loadHistory(filepath.Join(home, "history"))
	}
	c.ui = startTUI(tuiOptions{
		in: c.a.stdin, out: stdout, history: hist,
		sessions: func() []string {
			ls, err := c.st.ListSessions(ctx, store.ListOptions{Limit: 200})
			if err != nil {
				return nil
			}
			ids := make([]string, len(ls))
			for i, l := range ls {
				ids[i] = l.ID
			}
			return ids
		},
	})
	w := &tuiWriter{t: c.ui, colour: c.a.colour()}
	c.a.stdout, c.a.stderr, c.in = w, w, c.ui
	ui := c.ui
	go func() { // ends with the program
		select {
		case <-root.Done():
			ui.interrupt()
			select {
			case ui.intr <- struct{}{}:
			default:
			}
		case <-ui.done:
		}
	}()
	return func() {
		w.flush()
		err := c.ui.close()
		c.a.stdout, c.a.stderr = stdout, stderr
		c.ui = nil
		if err != nil {
			fmt.Fprintf(stderr, "spool: %s\n", oneLine(err.Error()))
		}
	}
}

// pickSession opens the /resume picker and switches to the session chosen there.
func (c *chat) pickSession(ctx context.Context) error {
	items, err := listPickItems(ctx, c.st, c.sid)
	if err != nil {
		return err
	}
	if len(items) == 0 {
		fmt.Fprintln(c.a.stdout, "No sessions yet.")
		return nil
	}
	id, err := c.ui.pick(ctx, items)
	if err != nil || id == "" {
		return err
	}
	c.sid = id
	c.recap(ctx)
	return nil
}

// askLine asks the user question and reads one line: on the chat's screen when it has one,
// otherwise on stderr and the chat's input.
func (c *chat) askLine(ctx context.Context, question string) (string, error) {
	if c.ui != nil {
		return c.ui.ask(ctx, question)
	}
	fmt.Fprint(c.a.stderr, question+" ")
	return c.in.read(ctx)
}
