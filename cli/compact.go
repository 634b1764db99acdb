package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/tools"
)

// compactJSON is `spool compact --json`'s answer.
type compactJSON struct {
	SessionID     string             `json:"session_id"`
	Compactions   int                `json:"compactions"`
	CompactionLog []agent.Compaction `json:"compaction_log"`
	Notices       []string           `json:"notices"`
}

// compactCommand is `spool compact`: a manual compaction of a session, as /compress in
// `spool chat`, for scripts and for sessions driven by `spool run`.
func (a *app) compactCommand() *cobra.Command {
	var f modelFlags
	var focus string
	cmd := &cobra.Command{
		Use:   "compact [SESSION]",
		Short: "Compact a session now (summary, working set, recent turns kept)",
		Long: "Compact a session now, whatever its size, as /compress does in spool chat: older turns are\n" +
			"summarized by the summary model (or the main one), the working-set ledger keeps pointers to\n" +
			"everything archived, and the newest turns stay verbatim. The main model is not asked anything.\n" +
			"SESSION is an id, a unique id prefix or a title; --continue takes the most recent session\n" +
			"started in this directory. --focus TOPIC gives the summary's budget mostly to that topic.",
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			if len(argv) == 1 {
				if f.resume != "" {
					return &usageError{errors.New("give the session either as SESSION or with --resume, not both")}
				}
				f.resume = argv[0]
			}
			if f.resume == "" && !f.cont {
				return &usageError{errors.New("name the session to compact: spool compact SESSION, or --continue for the most recent one here")}
			}
			// The session's own model and window: the compaction is sized for what it runs with.
			ag, _, sid, notice, err := a.sessionAgent(ctx, f, tools.Deny("spool compact runs no tools"), false, runHints)
			if err != nil {
				return err
			}
			if notice != "" {
				fmt.Fprintln(a.stderr, notice)
			}
			var notices []string
			res, err := ag.Compact(ctx, sid, focus, agent.RunOptions{OnNotice: func(s string) {
				notices = append(notices, s)
				if !a.json {
					fmt.Fprintln(a.stdout, visible(s))
				}
			}})
			if err != nil {
				return fmt.Errorf("compact session %s: %w", sid, err)
			}
			if a.json {
				return a.printJSON(compactJSON{SessionID: res.SessionID, Compactions: res.Compactions,
					CompactionLog: nonNil(res.CompactionLog), Notices: nonNil(notices)})
			}
			if res.Compactions == 0 && len(notices) == 0 {
				fmt.Fprintf(a.stdout, "Session %s: nothing to compact.\n", res.SessionID)
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&focus, "focus", "", "topic the summary should keep most of")
	return cmd
}
