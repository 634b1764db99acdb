package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/store"
)

// completionLimit bounds how many sessions a completion offers (the newest first).
const completionLimit = 200

// addCompletions teaches the shell completion scripts (`spool completion bash|zsh|fish`) the
// session ids: the first argument of the session commands and --resume take them, described by
// their title or first prompt.
func (a *app) addCompletions(root *cobra.Command) {
	for _, c := range root.Commands() {
		switch c.Name() {
		case "sessions":
			for _, sub := range c.Commands() {
				switch sub.Name() {
				case "show", "rename", "delete", "export":
					sub.ValidArgsFunction = a.completeSessionArg
				}
			}
		case "run", "chat", "handoff":
			if c.Flags().Lookup("resume") != nil {
				_ = c.RegisterFlagCompletionFunc("resume", a.completeSessions)
			}
		}
	}
}

// completeSessionArg completes a session id in the first argument only (export takes several).
func (a *app) completeSessionArg(cmd *cobra.Command, argv []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(argv) > 0 && cmd.Name() != "export" {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.completeSessions(cmd, argv, prefix)
}

// completeSessions lists session ids starting with prefix, each with its title or preview.
func (a *app) completeSessions(cmd *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	st, err := a.openStore(cmd.Context())
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	ls, err := st.ListSessions(cmd.Context(), store.ListOptions{Limit: completionLimit})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	var out []string
	for _, l := range ls {
		id := l.ID
		if l.TipID != "" {
			id = l.TipID
		}
		if !strings.HasPrefix(id, prefix) {
			continue
		}
		desc := l.Title
		if desc == "" {
			desc = l.Preview
		}
		// Shells split descriptions on tabs and newlines, and print them: keep them one clean line.
		desc = visible(oneLine(strings.ReplaceAll(desc, "\t", " ")))
		out = append(out, fmt.Sprintf("%s\t%s", id, truncate(desc, 60)))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
