package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/store"
)

// Exit statuses.
const (
	ExitOK    = 0
	ExitError = 1 // a runtime error, or problems found by a check
	ExitUsage = 2 // bad arguments or flags
	// ExitInterrupted is the shell's status for a command ended by Ctrl-C (128 + SIGINT).
	ExitInterrupted = 130
)

// Execute runs spool with args (without the program name) on the process's standard streams and
// returns the exit status.
func Execute(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, args, os.Stdin, os.Stdout, os.Stderr)
}

// Run runs spool with explicit streams and returns the exit status.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if merr := a.closeMCP(); merr != nil {
		fmt.Fprintf(stderr, "spool: warning: %s\n", oneLine(merr.Error()))
	}
	if cerr := a.closeStore(); cerr != nil && err == nil {
		// The command's own failure, when there is one, is the line worth printing.
		err = cerr
	}
	if err == nil {
		return a.exit
	}
	var ue *usageError
	if errors.As(err, &ue) || isCobraUsageError(err) {
		// One line, like every error: the usage is one --help away, not printed under it.
		help := "spool --help"
		if cmd != nil {
			help = cmd.CommandPath() + " --help"
		}
		fmt.Fprintf(stderr, "spool: %s (see %s)\n", oneLine(err.Error()), help)
		return ExitUsage
	}
	// Ctrl-C is a signal, or a key read by the chat's line editor (errInterrupted).
	if errors.Is(err, errInterrupted) || ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.Cause(ctx))) {
		fmt.Fprintln(stderr, "spool: interrupted")
		return ExitInterrupted
	}
	var damaged *store.DamagedError
	if errors.As(err, &damaged) {
		// What went wrong around it (a flush, the lease release) adds nothing the user can act on.
		err = damaged
	}
	fmt.Fprintf(stderr, "spool: %s\n", oneLine(err.Error()))
	return ExitError
}

// usageError is an argument or flag error: its line points at the command's --help.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// isCobraUsageError spots the errors cobra itself returns for unknown commands and flags.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument", "invalid argument"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// oneLine folds a message onto one line, so every error is exactly one line on stderr.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// args wraps a cobra argument validator so its errors are usage errors.
func args(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := v(cmd, a); err != nil {
			return &usageError{err}
		}
		return nil
	}
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "spool",
		Short: "Long-session engine for LLM agents",
		Long: "spool keeps an agent's conversation alive for days and thousands of turns.\n\n" +
			"Configuration: $SPOOL_HOME/config.yaml (default ~/.spool), then SPOOL_* environment\n" +
			"variables, then flags.",
		SilenceUsage:  true,
		SilenceErrors: true,
		// Bare "spool" and unknown subcommands are argument errors.
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.Version = versionString()
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&a.home, "home", "", "spool home directory (default $SPOOL_HOME or ~/.spool)")
	pf.BoolVar(&a.json, "json", false, "print machine-readable JSON on stdout")

	root.AddCommand(a.sessionsCommand(), a.searchCommand(), a.dbCommand(), a.benchCommand())
	root.AddCommand(a.runCommand(), a.chatCommand(), a.compactCommand())
	root.AddCommand(a.configCommand(), a.uiCommand(), a.serveCommand(), a.handoffCommand())
	root.AddCommand(a.mcpCommand())
	root.AddCommand(a.importCommand())
	a.addCompletions(root)
	return root
}

// groupCommand is a parent command that only holds subcommands.
func groupCommand(use, short string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
}
