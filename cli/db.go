package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func (a *app) dbCommand() *cobra.Command {
	cmd := groupCommand("db", "Database maintenance")
	cmd.AddCommand(a.dbCheckCommand())
	cmd.AddCommand(a.dbCopyCommand())
	return cmd
}

func (a *app) dbCheckCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "check",
		Short: "Verify the database's integrity (exit status 1 when a problem is found)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			st, err := a.openStore(ctx)
			if err != nil {
				return err
			}
			problems, err := st.Check(ctx)
			if err != nil {
				return fmt.Errorf("check: %w", err)
			}
			cfg, _ := a.config()
			if len(problems) > 0 {
				a.exit = ExitError
			}
			if a.json {
				if problems == nil {
					problems = []string{}
				}
				return a.printJSON(map[string]any{"ok": len(problems) == 0, "path": databaseName(cfg), "problems": problems})
			}
			if len(problems) == 0 {
				fmt.Fprintf(a.stdout, "ok: %s\n", databaseName(cfg))
				return nil
			}
			for _, p := range problems {
				fmt.Fprintf(a.stdout, "problem: %s\n", oneLine(p))
			}
			noun := "problems"
			if len(problems) == 1 {
				noun = "problem"
			}
			fmt.Fprintf(a.stderr, "spool: %d %s found in %s\n", len(problems), noun, databaseName(cfg))
			return nil
		},
	}
}
