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
	"github.com/spf13/pflag"

	"github.com/spoolhq/spool/config"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/turn"
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
		// The command did its work, and every write it made committed on its own: what failed
		// on closing (indexing new rows for search, a checkpoint) lost nothing, and a retry
		// would store the turn twice. It is reported, and the command still succeeds. (With a
		// failure of the command's own, that is the line worth printing.)
		var damaged *store.DamagedError
		if errors.As(cerr, &damaged) {
			cerr = damaged
		}
		fmt.Fprintf(stderr, "spool: warning: %s\n", oneLine(cerr.Error()))
	}
	if err == nil {
		return a.exit
	}
	class := errorClass(ctx, err)
	if format := a.jsonFailure(cmd); format != "" {
		a.printFailure(format, class, err)
	}
	if class == "usage" {
		// One line, like every error: the usage is one --help away, not printed under it.
		help := "spool --help"
		if cmd != nil {
			help = cmd.CommandPath() + " --help"
		}
		fmt.Fprintf(stderr, "spool: %s (see %s)\n", oneLine(err.Error()), help)
		return ExitUsage
	}
	if class == "canceled" {
		fmt.Fprintln(stderr, "spool: interrupted")
		return ExitInterrupted
	}
	var damaged *store.DamagedError
	if errors.As(err, &damaged) {
		// What went wrong around it (a flush, the lease release) adds nothing the user can act on.
		err = damaged
	}
	if errors.Is(err, store.ErrReadOnly) {
		// Reads work on a read-only database; this command needed to write.
		fmt.Fprintf(stderr, "spool: the database is read-only: %s\n", oneLine(err.Error()))
		return ExitError
	}
	fmt.Fprintf(stderr, "spool: %s\n", oneLine(err.Error()))
	return ExitError
}

// errorClass names what kind of failure err is, for scripts: usage, canceled, the provider's
// class (rate_limit, auth, ...), store, lease, or error.
func errorClass(ctx context.Context, err error) string {
	var (
		ue      *usageError
		pe      *provider.Error
		damaged *store.DamagedError
		held    *store.LeaseHeldError
		waited  *turn.WaitTimeoutError
		lost    *turn.LeaseLostError
	)
	switch {
	case errors.As(err, &ue) || isCobraUsageError(err):
		return "usage"
	// Ctrl-C is a signal, or a key read by the chat's line editor (errInterrupted).
	case errors.Is(err, errInterrupted) || ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.Cause(ctx))):
		return "canceled"
	case errors.As(err, &pe):
		return string(pe.Class)
	case errors.As(err, &damaged):
		return "store"
	case errors.As(err, &held) || errors.As(err, &waited) || errors.As(err, &lost):
		return "lease"
	}
	return "error"
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
		Args:          noSubcommand,
	}
	chat := a.chatCommand()
	// --version is spool's own flag rather than cobra's, whose custom version text needs
	// text/template (and so every method of every type kept in the binary).
	version := root.Flags().BoolP("version", "v", false, "version for spool")
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if *version {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionString())
			return err
		}
		// On a terminal a bare spool opens the chat, as other coding agents do; a script gets
		// the help rather than a chat waiting on its stdin.
		if isTerminal(a.stdin) && isTerminal(a.stdout) {
			chat.SetContext(cmd.Context())
			return chat.RunE(chat, nil)
		}
		return cmd.Help()
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return &usageError{suggestFlag(cmd, err)} })
	pf := root.PersistentFlags()
	pf.StringVar(&a.home, "home", "", "spool home directory (default $SPOOL_HOME or ~/.spool)")
	pf.BoolVar(&a.json, "json", false, "print machine-readable JSON on stdout")

	root.AddCommand(a.sessionsCommand(), a.searchCommand(), a.dbCommand(), a.benchCommand())
	root.AddCommand(a.runCommand(), chat, a.compactCommand())
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
		Args:  noSubcommand,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
}

// noSubcommand is the Args of a command that only dispatches: a word after it is an unknown
// subcommand, said with the closest ones (cobra itself suggests only for a command without Args).
func noSubcommand(cmd *cobra.Command, argv []string) error {
	if len(argv) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", argv[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's own default, which only its Args-less path sets
	}
	if s := cmd.SuggestionsFor(argv[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return &usageError{errors.New(msg)}
}

// suggestFlag adds the closest flag of cmd to an unknown-flag error (cobra suggests no flags).
func suggestFlag(cmd *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	best, bestD := "", 3 // at most two edits ("--mdoel" is --model), or a prefix ("--out")
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		d := config.EditDistance(name, f.Name)
		if len(name) >= 3 && strings.HasPrefix(f.Name, name) {
			d = min(d, 1)
		}
		if !f.Hidden && d < bestD {
			best, bestD = f.Name, d
		}
	})
	if best == "" {
		return err
	}
	return fmt.Errorf("%w; did you mean --%s?", err, best)
}
