package cli

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/store"
)

// demoteSubagents moves the hits in sub-agent sessions (delegations) below the others, keeping
// each group's order: they are machinery, found but not first.
func demoteSubagents(hits []store.SearchHit) {
	slices.SortStableFunc(hits, func(a, b store.SearchHit) int {
		return cmp.Compare(b2i(a.Source == agent.SubagentSource), b2i(b.Source == agent.SubagentSource))
	})
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Snippet highlight markers as the store writes them.
const (
	markOpen  = ">>>"
	markClose = "<<<"
)

type searchHitJSON struct {
	MessageID      int64        `json:"message_id"`
	SessionID      string       `json:"session_id"`
	Role           string       `json:"role"`
	Snippet        string       `json:"snippet"`
	Terms          []string     `json:"terms,omitempty"`
	Source         string       `json:"source"`
	Model          string       `json:"model,omitempty"`
	SessionStarted *time.Time   `json:"session_started"`
	Timestamp      *time.Time   `json:"timestamp"`
	Active         bool         `json:"active"`
	Compacted      bool         `json:"compacted"`
	ToolName       string       `json:"tool_name,omitempty"`
	Summary        bool         `json:"summary,omitempty"`
	Copies         []copyJSON   `json:"copies,omitempty"`
	Before         *contextJSON `json:"before,omitempty"`
	After          *contextJSON `json:"after,omitempty"`
}

// copyJSON is a verbatim compaction copy of a hit's message (the hit is the original).
type copyJSON struct {
	MessageID int64 `json:"message_id"`
	Active    bool  `json:"active"`
}

type contextJSON struct {
	MessageID int64  `json:"message_id"`
	Role      string `json:"role"`
	Content   string `json:"content"`
}

func toContextJSON(c *store.ContextLine) *contextJSON {
	if c == nil {
		return nil
	}
	return &contextJSON{MessageID: c.MessageID, Role: c.Role, Content: c.Content}
}

func (a *app) searchCommand() *cobra.Command {
	var (
		sources []string
		roles   []string
		limit   int
		sortBy  string
		context bool
	)
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Full-text search over every session's messages (archived ones included)",
		Long: "Full-text search over user, assistant and tool messages. QUERY takes words, \"quoted\n" +
			"phrases\", prefix* and AND/OR/NOT; any text is safe to type. Plain words (no upper-case\n" +
			"operator) are alternatives ranked by relevance, so a question asked in plain words works:\n" +
			"common words are dropped, word forms meet (tested finds testing), and identifiers and quoted\n" +
			"phrases rank above loose words. Matches are shown between >>> and <<< (bold on a terminal).",
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			text := strings.TrimSpace(strings.Join(argv, " "))
			if text == "" {
				return &usageError{fmt.Errorf("empty search query")}
			}
			if limit < 1 {
				return &usageError{fmt.Errorf("--limit must be at least 1, not %d", limit)}
			}
			for _, r := range roles {
				switch r {
				case store.RoleUser, store.RoleAssistant, store.RoleTool, store.RoleSystem:
				default:
					return &usageError{fmt.Errorf("unknown role %q (want user, assistant, tool or system)", r)}
				}
			}
			q := store.SearchQuery{Text: text, Sources: sources, Roles: roles, Limit: limit, NoContext: !context}
			switch sortBy {
			case "relevance":
				q.Sort = store.SortRelevance
			case "newest":
				q.Sort = store.SortNewest
			case "oldest":
				q.Sort = store.SortOldest
			default:
				return &usageError{fmt.Errorf("unknown --sort %q (want relevance, newest or oldest)", sortBy)}
			}
			ctx := cmd.Context()
			st, err := a.openStore(ctx)
			if err != nil {
				return err
			}
			hits, err := st.Search(ctx, q)
			if err != nil {
				return err // the store's error names the query
			}
			demoteSubagents(hits)
			if a.json {
				out := make([]searchHitJSON, 0, len(hits))
				for _, h := range hits {
					j := searchHitJSON{
						MessageID: h.MessageID, SessionID: h.SessionID, Role: h.Role, Snippet: h.Snippet, Terms: h.Terms,
						Source: h.Source, Model: h.Model, SessionStarted: jsonTime(h.SessionStarted),
						Timestamp: jsonTime(h.Timestamp), Active: h.Active, Compacted: h.Compacted,
						ToolName: h.ToolName, Summary: h.Summary,
						Before: toContextJSON(h.Before), After: toContextJSON(h.After),
					}
					for _, c := range h.Copies {
						j.Copies = append(j.Copies, copyJSON{MessageID: c.MessageID, Active: c.Active})
					}
					out = append(out, j)
				}
				return a.printJSON(out)
			}
			if len(hits) == 0 {
				fmt.Fprintf(a.stdout, "No matches for %q.\n", text)
				return nil
			}
			colour := a.colour()
			dim, reset := "", ""
			if colour {
				dim, reset = "\x1b[2m", "\x1b[0m"
			}
			for i, h := range hits {
				if i > 0 {
					fmt.Fprintln(a.stdout)
				}
				fmt.Fprintf(a.stdout, "%s%s #%d %s · %s · %s%s%s\n", dim, h.SessionID, h.MessageID, hitHead(h),
					h.Source, formatTime(h.Timestamp), hitTags(h), reset)
				if h.Before != nil {
					fmt.Fprintf(a.stdout, "%s    %s: %s%s\n", dim, h.Before.Role, truncate(h.Before.Content, 100), reset)
				}
				fmt.Fprintf(a.stdout, "  %s\n", renderSnippet(oneLine(h.Snippet), colour))
				if h.After != nil {
					fmt.Fprintf(a.stdout, "%s    %s: %s%s\n", dim, h.After.Role, truncate(h.After.Content, 100), reset)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&sources, "source", nil, "only sessions from these sources (repeatable)")
	f.StringSliceVar(&roles, "role", nil, "only messages with these roles: user, assistant, tool (repeatable)")
	f.IntVar(&limit, "limit", 20, "show at most N matches")
	f.StringVar(&sortBy, "sort", "relevance", "order: relevance, newest or oldest")
	f.BoolVar(&context, "context", false, "also show the message before and after each match")
	return cmd
}

// renderSnippet turns the >>> <<< markers into bold yellow on a terminal; otherwise the text is
// left as the store wrote it, markers included, so piped output still shows what matched.
func renderSnippet(s string, colour bool) string {
	s = visible(s) // stored text never acts on the terminal
	if !colour {
		return s
	}
	s = strings.ReplaceAll(s, markOpen, "\x1b[1;33m")
	return strings.ReplaceAll(s, markClose, "\x1b[0m")
}

// hitHead is a hit's role, with the tool's name for a tool row.
func hitHead(h store.SearchHit) string {
	if h.ToolName != "" {
		return h.Role + " " + oneLine(h.ToolName)
	}
	return h.Role
}

// hitTags labels what kind of row a hit is: a compaction summary, an archived row, and the
// copies of it that compactions carried forward (listed once, here, instead of as more hits).
func hitTags(h store.SearchHit) string {
	var tags []string
	if h.Summary {
		tags = append(tags, "summary")
	}
	if !h.Active {
		tags = append(tags, "archived")
	}
	if n := len(h.Copies); n > 0 {
		live := ""
		if h.Copies[n-1].Active {
			live = fmt.Sprintf(", live as #%d", h.Copies[n-1].MessageID)
		}
		tags = append(tags, fmt.Sprintf("carried through %d compactions%s", n, live))
	}
	if len(tags) == 0 {
		return ""
	}
	return " [" + strings.Join(tags, ", ") + "]"
}
