package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/config"
	"github.com/spoolhq/spool/store"
)

func (a *app) sessionsCommand() *cobra.Command {
	cmd := groupCommand("sessions", "List, show, export, import and maintain sessions")
	cmd.AddCommand(
		a.sessionsListCommand(),
		a.sessionsShowCommand(),
		a.sessionsExportCommand(),
		a.sessionsImportCommand(),
		a.sessionsPruneCommand(),
		a.sessionsStatsCommand(),
		a.sessionsRenameCommand(),
		a.sessionsDeleteCommand(),
	)
	return cmd
}

// sessionJSON is a session as scripts see it.
type sessionJSON struct {
	ID               string          `json:"id"`
	Title            string          `json:"title"`
	Source           string          `json:"source"`
	UserID           string          `json:"user_id,omitempty"`
	SessionKey       string          `json:"session_key,omitempty"`
	Model            string          `json:"model,omitempty"`
	ModelConfig      any             `json:"model_config,omitempty"`
	SystemPromptHash string          `json:"system_prompt_hash,omitempty"`
	ParentID         string          `json:"parent_id,omitempty"`
	Relation         store.Relation  `json:"relation,omitempty"`
	StartedAt        *time.Time      `json:"started_at"`
	EndedAt          *time.Time      `json:"ended_at"`
	EndReason        string          `json:"end_reason,omitempty"`
	MessageCount     int             `json:"message_count"`
	ToolCallCount    int             `json:"tool_call_count"`
	ShownMessages    int             `json:"shown_messages"`
	ShownToolCalls   int             `json:"shown_tool_calls"`
	Usage            store.Usage     `json:"usage"`
	Cwd              string          `json:"cwd,omitempty"`
	GitBranch        string          `json:"git_branch,omitempty"`
	LastActive       *time.Time      `json:"last_active,omitempty"`
	Preview          *string         `json:"preview,omitempty"`
	TipID            string          `json:"tip_id,omitempty"`
	Children         []string        `json:"children,omitempty"`
	SystemPrompt     *string         `json:"system_prompt,omitempty"`
	Messages         []messageJSON   `json:"messages,omitempty"`
	Chain            []chainLinkJSON `json:"chain,omitempty"`
	Bindings         []bindingJSON   `json:"bindings,omitempty"`
	// Models are the models that answered the session's calls, oldest first: the main one and,
	// when the main model failed, the fallbacks that answered for it.
	Models []modelUse `json:"models,omitempty"`
}

// bindingJSON is a chat lane (a gateway route) continuing a session.
type bindingJSON struct {
	Key       string     `json:"key"`
	SessionID string     `json:"session_id"`
	Suspended bool       `json:"suspended,omitempty"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
}

// bindings are the routes pointing at a session or any link of its compression chain.
func bindings(ctx context.Context, st interface {
	RoutesTo(ctx context.Context, sessionID string) ([]store.Route, error)
}, s store.Session, chain []store.Session) ([]store.Route, error) {
	ids := []string{s.ID}
	for _, c := range chain {
		if c.ID != s.ID {
			ids = append(ids, c.ID)
		}
	}
	var out []store.Route
	for _, id := range ids {
		rs, err := st.RoutesTo(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("load the bindings of %s: %w", id, err)
		}
		out = append(out, rs...)
	}
	return out, nil
}

// modelUse is how many recorded calls one model answered, as the main model or a fallback.
type modelUse struct {
	Model    string `json:"model"`
	Fallback string `json:"fallback,omitempty"`
	Calls    int    `json:"calls"`
}

// modelUses groups recs (newest first, as Requests returns them) by model, oldest first.
func modelUses(recs []store.RequestRecord) []modelUse {
	var out []modelUse
	idx := map[[2]string]int{}
	for i := len(recs) - 1; i >= 0; i-- {
		k := [2]string{recs[i].Model, recs[i].Fallback}
		j, ok := idx[k]
		if !ok {
			j = len(out)
			idx[k] = j
			out = append(out, modelUse{Model: recs[i].Model, Fallback: recs[i].Fallback})
		}
		out[j].Calls++
	}
	return out
}

// modelsLine reads like "gpt-4o 12 calls, gpt-4o-mini 3 calls (fallback mini)"; "" when one
// model answered everything and no fallback was involved (the Model row says it all).
func modelsLine(uses []modelUse) string {
	fallback := false
	for _, u := range uses {
		fallback = fallback || u.Fallback != ""
	}
	if len(uses) < 2 && !fallback {
		return ""
	}
	parts := make([]string, len(uses))
	for i, u := range uses {
		parts[i] = fmt.Sprintf("%s %d calls", u.Model, u.Calls)
		if u.Fallback != "" {
			parts[i] += fmt.Sprintf(" (fallback %s)", u.Fallback)
		}
	}
	return strings.Join(parts, ", ")
}

// lastSwitch is the detail of the newest cache break a fallback switch caused, "" for none.
func lastSwitch(recs []store.RequestRecord) string {
	for _, r := range recs {
		if r.Break != nil && r.Break.Reason == "fallback" {
			return formatTime(r.At) + ": " + r.Break.Detail
		}
	}
	return ""
}

type chainLinkJSON struct {
	ID    string `json:"id"`
	Title string `json:"title,omitempty"`
}

func toSessionJSON(s store.Session) sessionJSON {
	j := sessionJSON{
		ID: s.ID, Title: s.Title, Source: s.Source, UserID: s.UserID, SessionKey: s.SessionKey,
		Model: s.Model, SystemPromptHash: s.SystemPromptHash, ParentID: s.ParentID,
		Relation: s.Relation, StartedAt: jsonTime(s.StartedAt), EndedAt: jsonTime(s.EndedAt),
		EndReason: s.EndReason, MessageCount: s.MessageCount, ToolCallCount: s.ToolCallCount,
		ShownMessages: s.Shown.Messages, ShownToolCalls: s.Shown.ToolCalls,
		Usage: s.Usage, Cwd: s.Cwd, GitBranch: s.GitBranch,
	}
	if len(s.ModelConfig) > 0 {
		j.ModelConfig = s.ModelConfig
	}
	return j
}

// messageJSON is a message as scripts see it.
type messageJSON struct {
	ID           int64            `json:"id"`
	Role         string           `json:"role"`
	Content      string           `json:"content"`
	ToolCalls    []store.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID   string           `json:"tool_call_id,omitempty"`
	ToolName     string           `json:"tool_name,omitempty"`
	Reasoning    string           `json:"reasoning,omitempty"`
	FinishReason string           `json:"finish_reason,omitempty"`
	TokenCount   int              `json:"token_count,omitempty"`
	Timestamp    *time.Time       `json:"timestamp"`
	Active       bool             `json:"active"`
	Compacted    bool             `json:"compacted"`
	Summary      bool             `json:"summary,omitempty"`
}

func toMessageJSON(m store.Message) messageJSON {
	return messageJSON{
		ID: m.ID, Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls,
		ToolCallID: m.ToolCallID, ToolName: m.ToolName, Reasoning: m.Reasoning,
		FinishReason: m.FinishReason, TokenCount: m.TokenCount, Timestamp: jsonTime(m.Timestamp),
		Active: m.Active, Compacted: m.Compacted, Summary: m.Summary,
	}
}

func (a *app) sessionsListCommand() *cobra.Command {
	var (
		limit  int
		source string
		all    bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List sessions, most recently active first",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return &usageError{fmt.Errorf("--limit must be 0 (no limit) or more, not %d", limit)}
			}
			ctx := cmd.Context()
			st, err := a.openStore(ctx)
			if err != nil {
				return err
			}
			ls, err := st.ListSessions(ctx, store.ListOptions{Limit: limit, Source: source, IncludeChildren: all})
			if err != nil {
				return fmt.Errorf("list sessions: %w", err)
			}
			if a.json {
				out := make([]sessionJSON, 0, len(ls))
				for _, l := range ls {
					j := toSessionJSON(l.Session)
					j.LastActive = jsonTime(l.LastActive)
					p := l.Preview
					j.Preview = &p
					j.TipID = l.TipID
					out = append(out, j)
				}
				return a.printJSON(out)
			}
			if len(ls) == 0 {
				fmt.Fprintln(a.stdout, "No sessions.")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTITLE\tSOURCE\tMSGS\tLAST ACTIVE\tPREVIEW")
			depth := map[string]int{}
			if all {
				ls, depth = nestChildren(ls)
			}
			for _, l := range ls {
				title := l.Title
				if title == "" {
					title = "-"
				}
				id := l.ID
				if l.Ended() {
					id += " (ended)"
				}
				if all && l.ParentID != "" {
					// Children indent under --all: below their parent when it is listed too.
					id = strings.Repeat("  ", max(depth[l.ID], 1)) + id
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", id, truncate(title, 30), truncate(l.Source, 20),
					l.Shown.Messages, formatTime(l.LastActive), truncate(l.Preview, 50))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 50, "show at most N sessions (0: all)")
	cmd.Flags().StringVar(&source, "source", "", "only sessions from this source (cli, api, telegram, ...)")
	cmd.Flags().BoolVar(&all, "all", false, "also list compression continuations and delegate runs")
	return cmd
}

// nestChildren orders a listing so that each session listed with its parent follows it (at any
// depth, each level newest activity first as listed) and returns each row's depth.
func nestChildren(ls []store.SessionListing) ([]store.SessionListing, map[string]int) {
	index := make(map[string]int, len(ls))
	for i, l := range ls {
		index[l.ID] = i
	}
	kids := map[int][]int{}
	var top []int
	for i, l := range ls {
		if p, ok := index[l.ParentID]; ok && p != i {
			kids[p] = append(kids[p], i)
		} else {
			top = append(top, i)
		}
	}
	out := make([]store.SessionListing, 0, len(ls))
	depth := make(map[string]int, len(ls))
	seen := make([]bool, len(ls))
	var walk func(i, d int)
	walk = func(i, d int) {
		if seen[i] {
			return
		}
		seen[i] = true
		out = append(out, ls[i])
		depth[ls[i].ID] = d
		for _, k := range kids[i] {
			walk(k, d+1)
		}
	}
	for _, i := range top {
		walk(i, 0)
	}
	for i := range ls { // a parent cycle: nothing on top reaches it
		walk(i, 0)
	}
	return out, depth
}

func (a *app) sessionsShowCommand() *cobra.Command {
	var (
		activeOnly bool
		prompt     bool
	)
	cmd := &cobra.Command{
		Use:   "show ID|TITLE|PREFIX",
		Short: "Show a session's metadata and messages",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			st, err := a.openStore(ctx)
			if err != nil {
				return err
			}
			cfg, err := a.config()
			if err != nil {
				return err
			}
			s, err := a.resolve(ctx, st, argv[0])
			if err != nil {
				return err
			}
			if max := cfg.Sessions.MaxExportMessages; max > 0 && s.MessageCount > max {
				return fmt.Errorf("session %s has %d messages, more than sessions.max_export_messages (%d): use 'spool sessions export %s -o FILE'", s.ID, s.MessageCount, max, s.ID)
			}
			view := store.ViewDisplay
			if activeOnly {
				view = store.ViewActive
			}
			ms, err := st.Conversation(ctx, s.ID, view)
			if err != nil {
				return fmt.Errorf("load messages of %s: %w", s.ID, err)
			}
			kids, err := st.Children(ctx, s.ID)
			if err != nil {
				return fmt.Errorf("load children of %s: %w", s.ID, err)
			}
			sp, err := st.SystemPrompt(ctx, s.ID)
			if err != nil {
				return fmt.Errorf("load system prompt of %s: %w", s.ID, err)
			}
			chain, err := st.Chain(ctx, s.ID)
			if err != nil {
				return fmt.Errorf("load compression chain of %s: %w", s.ID, err)
			}
			binds, err := bindings(ctx, st, s, chain)
			if err != nil {
				return err
			}
			recs, err := st.Requests(ctx, s.ID, 0)
			if err != nil {
				return fmt.Errorf("load model calls of %s: %w", s.ID, err)
			}
			if a.json {
				j := toSessionJSON(s)
				for _, b := range binds {
					j.Bindings = append(j.Bindings, bindingJSON{Key: b.Key, SessionID: b.SessionID, Suspended: b.Suspended, UpdatedAt: jsonTime(b.UpdatedAt)})
				}
				j.SystemPrompt = &sp
				j.Messages = make([]messageJSON, 0, len(ms))
				for _, m := range ms {
					j.Messages = append(j.Messages, toMessageJSON(m))
				}
				for _, k := range kids {
					j.Children = append(j.Children, k.ID)
				}
				if len(chain) > 1 {
					for _, c := range chain {
						j.Chain = append(j.Chain, chainLinkJSON{ID: c.ID, Title: c.Title})
					}
				}
				j.Models = modelUses(recs)
				return a.printJSON(j)
			}
			a.renderSession(s, kids, chain, binds, sp, prompt, ms, recs)
			return nil
		},
	}
	cmd.Flags().BoolVar(&activeOnly, "active", false, "only the messages the model sees (hide rows archived by compaction)")
	cmd.Flags().BoolVar(&prompt, "system-prompt", false, "also print the stored system prompt")
	return cmd
}

func (a *app) renderSession(s store.Session, kids, chain []store.Session, binds []store.Route, sp string, withPrompt bool, ms []store.Message, recs []store.RequestRecord) {
	w := a.stdout
	bold, reset := "", ""
	if a.colour() {
		bold, reset = "\x1b[1m", "\x1b[0m"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, oneLine(visible(v))) // stored values never act on the terminal
		}
	}
	row("Session", s.ID)
	if by := agent.TitleModel(s); by != "" {
		row("Title", s.Title+" (automatic, by "+by+")")
	} else if agent.TitleSource(s) == "auto" {
		row("Title", s.Title+" (automatic)")
	} else {
		row("Title", s.Title)
	}
	row("Source", s.Source)
	row("Model", s.Model)
	row("Started", formatTime(s.StartedAt))
	if s.Ended() {
		row("Ended", fmt.Sprintf("%s (%s)", formatTime(s.EndedAt), s.EndReason))
	}
	if s.ParentID != "" {
		row("Parent", fmt.Sprintf("%s (%s)", s.ParentID, s.Relation))
	}
	if len(chain) > 1 {
		ids := make([]string, len(chain))
		for i, c := range chain {
			ids[i] = c.ID
		}
		row("Chain", strings.Join(ids, " -> "))
	}
	if len(kids) > 0 {
		ks := make([]string, len(kids))
		for i, k := range kids {
			ks[i] = fmt.Sprintf("%s (%s)", k.ID, k.Relation)
		}
		row("Children", strings.Join(ks, ", "))
	}
	for _, b := range binds {
		v := b.Key
		if b.SessionID != s.ID {
			v += " (via " + b.SessionID + ")"
		}
		if b.Suspended {
			v += " (suspended)"
		}
		row("Bound to", v)
	}
	row("Messages", shownCounts(s))
	u := s.Usage
	if u.APICalls > 0 {
		row("Usage", fmt.Sprintf("%d calls, %d in / %d out tokens, cache %d read / %d write, cost %s",
			u.APICalls, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, formatCost(s.Model, u.CostUSD)))
	}
	row("Models", modelsLine(modelUses(recs)))
	row("Last switch", lastSwitch(recs))
	row("Cwd", s.Cwd)
	row("Git branch", s.GitBranch)
	if s.SystemPromptHash != "" {
		row("System prompt", fmt.Sprintf("%s (%d bytes)", truncate(s.SystemPromptHash, 12), len(sp)))
	}
	tw.Flush()
	if withPrompt && sp != "" {
		fmt.Fprintf(w, "\n%s── system prompt ──%s\n%s\n", bold, reset, visible(sp))
	}
	for _, m := range ms {
		var tags []string
		switch {
		case m.Summary:
			tags = append(tags, "summary")
		}
		if !m.Active && m.Compacted {
			tags = append(tags, "archived")
		} else if !m.Active {
			tags = append(tags, "superseded")
		}
		head := m.Role
		if m.ToolName != "" {
			head += " " + m.ToolName
		}
		if len(tags) > 0 {
			head += " [" + strings.Join(tags, ", ") + "]"
		}
		fmt.Fprintf(w, "\n%s── #%d %s · %s ──%s\n", bold, m.ID, visible(head), formatTime(m.Timestamp), reset)
		if m.Reasoning != "" {
			fmt.Fprintf(w, "(reasoning) %s\n", visible(m.Reasoning))
		}
		if m.Content != "" {
			fmt.Fprintln(w, visible(m.Content))
		}
		for _, tc := range m.ToolCalls {
			fmt.Fprintf(w, "→ %s(%s) [%s]\n", visible(tc.Function.Name), visible(tc.Function.Arguments), visible(tc.ID))
		}
	}
}

func (a *app) sessionsRenameCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "rename ID TITLE",
		Short: `Set a session's title ("" clears it)`,
		Args:  args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			st, err := a.openStore(ctx)
			if err != nil {
				return err
			}
			s, err := a.resolve(ctx, st, argv[0])
			if err != nil {
				return err
			}
			title := strings.TrimSpace(argv[1])
			if err := st.SetTitle(ctx, s.ID, title); err != nil {
				var inUse *store.TitleInUseError
				var inv *store.InvalidError
				switch {
				case errors.As(err, &inUse):
					return inUse
				case errors.As(err, &inv):
					return fmt.Errorf("bad title %q: %s", title, inv.Reason)
				}
				return fmt.Errorf("rename %s: %w", s.ID, err)
			}
			if a.json {
				return a.printJSON(map[string]string{"id": s.ID, "title": title})
			}
			if title == "" {
				fmt.Fprintf(a.stdout, "Cleared the title of %s.\n", s.ID)
			} else {
				fmt.Fprintf(a.stdout, "Renamed %s to %q.\n", s.ID, title)
			}
			return nil
		},
	}
}

func (a *app) sessionsDeleteCommand() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a session and its messages (asks first; without a terminal, pass --yes)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			st, err := a.openStore(ctx)
			if err != nil {
				return err
			}
			s, err := a.resolve(ctx, st, argv[0])
			if err != nil {
				return err
			}
			if !yes {
				kids, err := st.Children(ctx, s.ID)
				if err != nil {
					return fmt.Errorf("load children of %s: %w", s.ID, err)
				}
				q := fmt.Sprintf("Delete session %s", s.ID)
				if s.Title != "" {
					q += fmt.Sprintf(" %q", s.Title)
				}
				q += fmt.Sprintf(" (%d messages", s.MessageCount)
				if len(kids) > 0 {
					q += fmt.Sprintf("; %d child sessions lose their parent link, delegate runs go with it", len(kids))
				}
				q += ")?"
				ok, err := a.confirm(q)
				if err != nil {
					return err
				}
				if !ok {
					return errors.New("not deleted")
				}
			}
			if err := st.DeleteSession(ctx, s.ID); err != nil {
				return fmt.Errorf("delete %s: %w", s.ID, err)
			}
			if err := a.forgetFileRecords(s.ID); err != nil {
				return err
			}
			if a.json {
				return a.printJSON(map[string]any{"deleted": s.ID})
			}
			fmt.Fprintf(a.stdout, "Deleted %s.\n", s.ID)
			return nil
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

func (a *app) sessionsPruneCommand() *cobra.Command {
	var (
		olderThan string
		yes       bool
	)
	cmd := &cobra.Command{
		Use:   "prune --older-than DURATION",
		Short: "Delete sessions with no activity for longer than DURATION (30d, 12h, 90m), ended or not",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if olderThan == "" {
				return &usageError{errors.New("--older-than is required (for example --older-than 30d)")}
			}
			d, err := config.ParseDuration(olderThan)
			if err != nil {
				return &usageError{fmt.Errorf("bad --older-than: %w", err)}
			}
			if d <= 0 {
				return &usageError{fmt.Errorf("bad --older-than: %q would prune every session; give a positive duration", olderThan)}
			}
			ctx := cmd.Context()
			st, err := a.openStore(ctx)
			if err != nil {
				return err
			}
			cutoff := time.Now().Add(-d)
			if !yes {
				ok, err := a.confirm(fmt.Sprintf("Delete every session with no activity since %s?", formatTime(cutoff)))
				if err != nil {
					return err
				}
				if !ok {
					return errors.New("nothing pruned")
				}
			}
			n, err := st.Prune(ctx, cutoff)
			if err != nil {
				return fmt.Errorf("prune: %w", err)
			}
			if err := a.pruneFileRecords(cutoff); err != nil {
				return err
			}
			if a.json {
				return a.printJSON(map[string]any{"pruned": n, "cutoff": cutoff.UTC()})
			}
			fmt.Fprintf(a.stdout, "Pruned %d sessions with no activity since %s.\n", n, formatTime(cutoff))
			return nil
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "age cutoff: 30d, 12h, 90m, 45s")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

func (a *app) sessionsStatsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "stats",
		Short: "Count sessions, messages and tokens, and the database size",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			st, err := a.openStore(ctx)
			if err != nil {
				return err
			}
			s, err := st.Stats(ctx)
			if err != nil {
				return fmt.Errorf("stats: %w", err)
			}
			if a.json {
				if s.BySource == nil {
					s.BySource = map[string]int{}
				}
				return a.printJSON(s)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintf(tw, "Sessions:\t%d (%d open)\n", s.Sessions, s.OpenSessions)
			fmt.Fprintf(tw, "Messages:\t%d (%d active, %d archived, %d superseded)\n", s.Messages, s.ActiveMessages,
				s.ArchivedMessages, s.SupersededMessages)
			fmt.Fprintf(tw, "System prompts:\t%d\n", s.SystemPrompts)
			fmt.Fprintf(tw, "Database size:\t%s\n", humanBytes(s.Bytes))
			u := s.Usage
			fmt.Fprintf(tw, "Model calls:\t%d\n", u.APICalls)
			fmt.Fprintf(tw, "Tokens:\t%d in, %d out, %d cache read, %d cache write, %d reasoning\n",
				u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens)
			fmt.Fprintf(tw, "Cost:\t$%.4f\n", u.CostUSD)
			for _, src := range sortedKeys(s.BySource) {
				fmt.Fprintf(tw, "  %s:\t%d sessions\n", src, s.BySource[src])
			}
			return tw.Flush()
		},
	}
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// shownCounts says a session's size as every command shows it (store.Shown), and the model's
// view beside it when a compaction made them differ.
func shownCounts(s store.Session) string {
	out := fmt.Sprintf("%d messages, %d tool calls", s.Shown.Messages, s.Shown.ToolCalls)
	if s.Shown.Messages != s.MessageCount {
		out += fmt.Sprintf(" (%d in the model's view since compaction)", s.MessageCount)
	}
	return out
}
