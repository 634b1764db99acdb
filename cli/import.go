package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/config"
	"github.com/spoolhq/spool/importer/hermes"
)

func (a *app) importCommand() *cobra.Command {
	cmd := groupCommand("import", "Import sessions from another agent's home")
	cmd.AddCommand(a.importHermesCommand())
	return cmd
}

// hermesHome is the Hermes Agent home the reference itself uses: $HERMES_HOME, else ~/.hermes.
func hermesHome() string {
	if h := os.Getenv("HERMES_HOME"); h != "" {
		return h
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".hermes")
	}
	return ".hermes"
}

func (a *app) importHermesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "hermes [DIR]",
		Short: "Import a Hermes Agent home (default $HERMES_HOME or ~/.hermes)",
		Long: "Import every session of a Hermes Agent home: state.db (read-only, even while Hermes runs),\n" +
			"the gateway's sessions/sessions.json routes and the legacy sessions/*.jsonl transcripts.\n" +
			"Sessions keep their ids, lineage, titles, counters and messages. The memory files\n" +
			"(memories/MEMORY.md, USER.md) are merged into spool's (entries spool has are kept, none\n" +
			"twice), and config.yaml's model and compression settings go into spool's config.yaml where\n" +
			"it does not set them already. Running it again imports nothing twice: sessions and routes\n" +
			"already in the store are skipped; what could not be mapped is listed.",
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			dir := hermesHome()
			if len(argv) == 1 {
				dir = argv[0]
			}
			// The home is read and checked before the store is opened: bad input stores nothing.
			h, err := hermes.Open(ctx, dir)
			if err != nil {
				return fmt.Errorf("import hermes: %w", err)
			}
			defer h.Close()
			st, err := a.openStore(ctx)
			if err != nil {
				return err
			}
			home, err := config.ResolveHome(a.home)
			if err != nil {
				return err
			}
			opts := hermes.Options{SpoolHome: home, Warn: func(msg string) {
				fmt.Fprintf(a.stderr, "spool: warning: %s\n", terminalSafe(msg))
			}}
			var bar *progressbar.ProgressBar
			if isTerminal(a.stderr) && h.Messages() >= progressMinLines {
				bar = progressbar.NewOptions64(int64(h.Messages()),
					progressbar.OptionSetDescription("import hermes"),
					progressbar.OptionSetWriter(a.stderr),
					progressbar.OptionSetWidth(30),
					progressbar.OptionShowCount(),
					progressbar.OptionShowIts(),
					progressbar.OptionSetItsString("messages"),
					progressbar.OptionThrottle(100*time.Millisecond),
					progressbar.OptionClearOnFinish(),
				)
				opts.Progress = func(done, _ int) { _ = bar.Set(done) }
			}
			rep, err := h.Import(ctx, st, opts)
			if bar != nil {
				_ = bar.Finish()
				_ = bar.Clear()
			}
			if err != nil {
				return fmt.Errorf("import hermes %s: %w", dir, err)
			}
			if a.json {
				return a.printJSON(rep)
			}
			a.printHermesReport(rep)
			return nil
		},
	}
}

func (a *app) printHermesReport(rep hermes.Report) {
	w := a.stdout
	schema := "no state.db"
	if rep.SchemaVersion > 0 {
		schema = fmt.Sprintf("state.db schema %d", rep.SchemaVersion)
	}
	fmt.Fprintf(w, "Imported from %s (%s):\n", terminalSafe(rep.Home), schema)
	rel := make([]string, 0, len(rep.Relations))
	for _, k := range sortedKeys(rep.Relations) {
		rel = append(rel, fmt.Sprintf("%d %s", rep.Relations[k], k))
	}
	line := func(label string, n int, extra string) {
		if extra != "" {
			extra = "  (" + extra + ")"
		}
		fmt.Fprintf(w, "  %-15s %7d%s\n", label, n, extra)
	}
	line("sessions", rep.Sessions, strings.Join(rel, ", "))
	line("messages", rep.Messages, "")
	line("system prompts", rep.SystemPrompts, "")
	line("JSONL longer", rep.FromJSONL, "sessions whose legacy transcript won")
	line("JSONL only", rep.JSONLOnly, "sessions from a transcript alone")
	sus := ""
	if rep.Suspended > 0 {
		sus = fmt.Sprintf("%d suspended", rep.Suspended)
	}
	line("routes", rep.Routes, sus)
	mem := 0
	var files []string
	for _, f := range sortedKeys(rep.Memory) {
		mem += rep.Memory[f]
		files = append(files, fmt.Sprintf("%s %d", f, rep.Memory[f]))
	}
	line("memory entries", mem, strings.Join(files, ", "))
	line("settings", len(rep.Config), terminalSafe(strings.Join(rep.Config, ", ")))
	if len(rep.Skipped) == 0 {
		return
	}
	// Grouped by kind and reason: a rerun skips every session for the same reason.
	type group struct {
		kind, reason string
		ids          []string
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, s := range rep.Skipped {
		k := s.Kind + "\x00" + s.Reason
		g := byKey[k]
		if g == nil {
			g = &group{kind: s.Kind, reason: s.Reason}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.ids = append(g.ids, s.ID)
	}
	sort.SliceStable(groups, func(i, j int) bool { return groups[i].kind < groups[j].kind })
	fmt.Fprintf(w, "Skipped or changed %d:\n", len(rep.Skipped))
	for _, g := range groups {
		fmt.Fprintf(w, "  %s: %s (%d): %s\n", g.kind, terminalSafe(g.reason), len(g.ids), terminalSafe(listIDs(g.ids)))
	}
}

// terminalSafe replaces control characters (escape sequences included) in untrusted text.
func terminalSafe(s string) string {
	s = strings.ToValidUTF8(s, "?")
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
}
