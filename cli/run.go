package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/config"
	"github.com/spoolhq/spool/prompt"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/anthropic"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/provider/openai"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/tools"
	"github.com/spoolhq/spool/turn"
)

// modelFlags select the model of an agent command; empty fields fall back to the config.
type modelFlags struct {
	provider string
	model    string
	baseURL  string
	yes      bool
	resume   string
	cont     bool
	window   int
}

func (f *modelFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.provider, "provider", "", "model provider: openai, anthropic or fake (default: provider.name from the config, else the offline model)")
	fl.StringVar(&f.model, "model", "", "model name (default: provider.model from the config)")
	fl.StringVar(&f.baseURL, "base-url", "", "provider base URL, e.g. http://127.0.0.1:11434/v1 for a local server")
	fl.BoolVar(&f.yes, "yes", false, "run terminal commands without asking")
	fl.StringVar(&f.resume, "resume", "", "continue this session (id, unique id prefix or title)")
	fl.BoolVarP(&f.cont, "continue", "c", false, "continue the most recent session")
	fl.IntVar(&f.window, "context-length", agent.DefaultContextLength, "the model's context window in tokens (sizes the compaction trigger)")
}

// offline is the model name of the built-in offline model.
const offline = "fake"

// client builds the provider client the flags and the config select, and the summary model's
// own client when auxiliary.compression names another provider or endpoint (nil otherwise).
// notice is the one-line offline notice when no provider is configured at all.
func (a *app) client(cfg config.Config, f modelFlags) (c, summary provider.Client, name, model, notice string, err error) {
	p := cfg.Provider
	if f.provider != "" {
		p.Name = f.provider
	}
	if f.model != "" {
		p.Model = f.model
	}
	if f.baseURL != "" {
		p.BaseURL = f.baseURL
	}
	c, name, model, notice, err = a.dial(p, mainKeys)
	if err != nil {
		return nil, nil, "", "", "", err
	}
	if aux, own := cfg.Auxiliary.Compression.ClientFor(p); own {
		if summary, _, _, _, err = a.dial(aux, auxKeys); err != nil {
			return nil, nil, "", "", "", fmt.Errorf("summary model: %w", err)
		}
	}
	return c, summary, name, model, notice, nil
}

// configKeys name the settings a dial error points the user to.
type configKeys struct{ keyEnv, model string }

var (
	mainKeys = configKeys{"provider.api_key_env", "set provider.model in the config or pass --model"}
	auxKeys  = configKeys{"auxiliary.compression.api_key_env", "set auxiliary.compression.model in the config"}
)

// dial makes the client of one provider setting; the offline model when its name is empty.
func (a *app) dial(p config.Provider, keys configKeys) (c provider.Client, name, model, notice string, err error) {
	key := ""
	if env := p.KeyEnv(); env != "" {
		key = os.Getenv(env)
	}
	switch p.Name {
	case "", offline:
		if p.BaseURL != "" {
			return nil, "", "", "", &usageError{fmt.Errorf("--base-url needs --provider openai or anthropic (the offline model runs in process)")}
		}
		if p.Name == "" {
			notice = fake.OfflineNotice
		}
		model = cmp.Or(p.Model, offline)
		return fake.New(fake.Config{}), offline, model, notice, nil
	case "openai":
		if p.CacheTTL == "1h" {
			return nil, "", "", "", errors.New("provider.cache_ttl 1h is an Anthropic setting; OpenAI caches prefixes on its own")
		}
		if key == "" && (p.BaseURL == "" || strings.Contains(p.BaseURL, "api.openai.com")) {
			return nil, "", "", "", fmt.Errorf("provider openai: no API key: set %s (or %s in the config)", p.KeyEnv(), keys.keyEnv)
		}
		c, err = openai.New(openai.Config{BaseURL: p.BaseURL, APIKey: key})
	case "anthropic":
		if key == "" && (p.BaseURL == "" || strings.Contains(p.BaseURL, "api.anthropic.com")) {
			return nil, "", "", "", fmt.Errorf("provider anthropic: no API key: set %s (or %s in the config)", p.KeyEnv(), keys.keyEnv)
		}
		c, err = anthropic.New(anthropic.Config{BaseURL: p.BaseURL, APIKey: key, CacheTTL: p.CacheLifetime()})
	default:
		return nil, "", "", "", &usageError{fmt.Errorf("unknown provider %q (want openai, anthropic or fake)", p.Name)}
	}
	if err != nil {
		return nil, "", "", "", err
	}
	if p.Model == "" {
		return nil, "", "", "", fmt.Errorf("provider %s: no model: %s", p.Name, keys.model)
	}
	c = provider.WithRetry(c, provider.RetryPolicy{OnRetry: func(attempt int, wait time.Duration, err error) {
		fmt.Fprintf(a.stderr, "spool: %s; retrying in %s\n", oneLine(err.Error()), wait.Round(100*time.Millisecond))
	}})
	return c, p.Name, p.Model, "", nil
}

// newAgent wires the configured store, provider and tools into an agent.
// Remedies in the words of each agent command (see compress.Hints).
var (
	chatHints = compress.Hints{Compact: "/compress <topic>", Fresh: "/new"}
	runHints  = compress.Hints{
		Compact: "`spool chat --resume SESSION` then /compress <topic>",
		Fresh:   "`spool run` without --continue/--resume",
	}
)

// approver decides commands, writes when confirmWrites, and file access outside the workspace.
func (a *app) newAgent(ctx context.Context, f modelFlags, approver tools.Approver, confirmWrites bool, hints compress.Hints) (*agent.Agent, store.Store, string, error) {
	cfg, err := a.config()
	if err != nil {
		return nil, nil, "", err
	}
	client, summary, name, model, notice, err := a.client(cfg, f)
	if err != nil {
		return nil, nil, "", err
	}
	st, err := a.openStore(ctx)
	if err != nil {
		return nil, nil, "", err
	}
	if f.window < 1024 {
		return nil, nil, "", &usageError{fmt.Errorf("--context-length must be at least 1024 tokens, got %d", f.window)}
	}
	wd, _ := os.Getwd()
	if f.yes {
		approver = tools.AutoApprove
	}
	aux, _ := cfg.Auxiliary.Compression.ClientFor(cfg.Provider)
	reg := agent.Registry(tools.Default(), tools.Env{WorkDir: wd, Home: cfg.Home, Store: st, Approver: approver,
		ConfirmWrites: confirmWrites && !f.yes,
		Secrets:       tools.NewSecrets(os.Environ(), cfg.Provider.KeyEnv(), aux.KeyEnv())})
	ag, err := agent.New(agent.Deps{Store: st, Client: client, SummaryClient: summary, Tools: reg, Config: agent.Config{
		Model:         model,
		Provider:      name,
		CacheTTL:      cfg.Provider.CacheLifetime(),
		ContextLength: f.window,
		Compression:   compress.FromConfig(cfg),
		Rotate:        !cfg.Compression.InPlace,
		Prompt:        prompt.Env{Home: cfg.Home, WorkDir: wd, Platform: "cli"},
		Lease:         leaseOptions(cfg),
		Source:        "cli",
		Hints:         hints,
	}})
	if err != nil {
		return nil, nil, "", err
	}
	return ag, st, notice, nil
}

// leaseOptions are the turn-lease settings of the config.
func leaseOptions(cfg config.Config) turn.Options {
	return turn.Options{TTL: cfg.Leases.TTL, RenewEvery: cfg.Leases.RenewEvery, Wait: cfg.Leases.Wait}
}

// sessionRef resolves --resume / --continue to a session id ("" for a new session).
func (a *app) sessionRef(ctx context.Context, st store.Store, f modelFlags) (string, error) {
	switch {
	case f.resume != "" && f.cont:
		return "", &usageError{errors.New("--resume and --continue exclude each other")}
	case f.resume != "":
		s, err := a.resolve(ctx, st, f.resume)
		if err != nil {
			return "", err
		}
		return s.ID, nil
	case f.cont:
		ls, err := st.ListSessions(ctx, store.ListOptions{Limit: 1, Source: "cli"})
		if err != nil {
			return "", fmt.Errorf("find the most recent session: %w", err)
		}
		if len(ls) == 0 {
			return "", errors.New("--continue: there is no session to continue yet")
		}
		return cmp.Or(ls[0].TipID, ls[0].ID), nil
	}
	return "", nil
}

// runJSON is `spool run --json`'s answer.
type runJSON struct {
	SessionID    string      `json:"session_id"`
	Reply        string      `json:"reply"`
	Model        string      `json:"model"`
	FinishReason string      `json:"finish_reason,omitempty"`
	Usage        store.Usage `json:"usage"`
	ModelCalls   int         `json:"model_calls"`
	ToolCalls    int         `json:"tool_calls"`
	Compactions  int         `json:"compactions"`
	// CompactionLog is each compaction's size before and after against its target.
	CompactionLog []agent.Compaction `json:"compaction_log,omitempty"`
	CacheBreaks   []store.CacheBreak `json:"cache_breaks"`
}

func (a *app) runCommand() *cobra.Command {
	var f modelFlags
	cmd := &cobra.Command{
		Use:   "run PROMPT",
		Short: "Run one agent turn and print the reply",
		Long: "Run one turn non-interactively: the reply streams to stdout, notices and tool activity go\n" +
			"to stderr. PROMPT \"-\" reads the prompt from stdin. --resume/--continue go on with an earlier\n" +
			"session; otherwise a new session starts. Terminal commands are refused unless --yes.\n" +
			"With --json, one object: session_id, reply, usage, model_calls, tool_calls, cache_breaks.",
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			input := argv[0]
			if input == "-" {
				b, err := io.ReadAll(a.stdin)
				if err != nil {
					return fmt.Errorf("read the prompt from stdin: %w", err)
				}
				input = string(b)
			}
			if strings.TrimSpace(input) == "" {
				return &usageError{errors.New("the prompt is empty")}
			}
			ag, st, notice, err := a.newAgent(ctx, f, tools.Deny("spool run cannot ask for approval; pass --yes to allow it"), false, runHints)
			if err != nil {
				return err
			}
			if notice != "" {
				fmt.Fprintln(a.stderr, notice)
			}
			sid, err := a.sessionRef(ctx, st, f)
			if err != nil {
				return err
			}
			opts := agent.RunOptions{
				OnWait: func(waited time.Duration, holder string) {
					fmt.Fprintf(a.stderr, "spool: session busy (another turn is running: %s); waited %s\n", holder, waited.Round(time.Second))
				},
				OnNotice: func(s string) { fmt.Fprintf(a.stderr, "spool: %s\n", oneLine(s)) },
				OnToolCall: func(c store.ToolCall) {
					fmt.Fprintf(a.stderr, "  ⚙ %s %s\n", c.Function.Name, truncate(c.Function.Arguments, 100))
				},
			}
			streamed := false
			if !a.json {
				opts.OnDelta = func(d provider.Delta) {
					if d.Content != "" {
						streamed = true
						io.WriteString(a.stdout, d.Content)
					}
				}
			}
			res, err := ag.Run(ctx, sid, input, opts)
			if streamed {
				fmt.Fprintln(a.stdout)
			}
			if err != nil {
				if res.SessionID != "" && !errors.Is(err, agent.ErrEmptyInput) && !strings.Contains(err.Error(), res.SessionID) {
					return fmt.Errorf("session %s: %w", res.SessionID, err)
				}
				return err
			}
			if a.json {
				return a.printJSON(runJSON{
					SessionID: res.SessionID, Reply: res.Reply, Model: ag.Model(), FinishReason: res.FinishReason,
					Usage: res.Usage, ModelCalls: res.Calls, ToolCalls: res.ToolCalls, Compactions: res.Compactions, CompactionLog: res.CompactionLog,
					CacheBreaks: nonNil(res.Breaks),
				})
			}
			if !streamed && res.Reply != "" {
				fmt.Fprintln(a.stdout, res.Reply)
			}
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
