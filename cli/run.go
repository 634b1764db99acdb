package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
	fl.BoolVarP(&f.cont, "continue", "c", false, "continue the most recent session started in this directory")
	fl.IntVar(&f.window, "context-length", 0, "the model's context window in tokens (default: provider.context_length, else the table of known models, else 128000)")
}

// offline is the model name of the built-in offline model.
const offline = "fake"

// client builds the provider client the flags and the config select, and the summary model's
// own client when auxiliary.compression names another provider or endpoint (nil otherwise).
// notice is the one-line offline notice when no provider is configured at all.
func (a *app) client(cfg config.Config, f modelFlags) (c, summary provider.Client, name, model, notice string, err error) {
	p := mainProvider(cfg, f)
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

// mainProvider is the main model's setting: the config's, with the flags' overrides.
func mainProvider(cfg config.Config, f modelFlags) config.Provider {
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
	return p
}

// fallbacks dials the configured fallback models (provider.fallbacks), each with its own
// window: provider.fallbacks[].context_length, else the table of known models, else
// agent.DefaultContextLength.
func (a *app) fallbacks(cfg config.Config, f modelFlags) ([]agent.Fallback, error) {
	main := mainProvider(cfg, f)
	var out []agent.Fallback
	for i, fb := range cfg.Provider.Fallbacks {
		p := fb.ProviderFor(main)
		key := fmt.Sprintf("provider.fallbacks[%d]", i)
		c, name, model, _, err := a.dial(p, configKeys{key + ".api_key_env", "set " + key + ".model"})
		var noKey *missingKeyError
		if errors.As(err, &noKey) {
			// The main model may never fail: a fallback without its key is said once at start
			// and is an error only when a turn needs it (then the turn names the variable).
			fmt.Fprintf(a.stderr, "spool: warning: fallback %s has no API key (set %s); it fails if a turn needs it\n", fb.Name, noKey.env)
			c, name, model, err = unkeyedClient{fallback: fb.Name, provider: p.Name, err: noKey}, p.Name, p.Model, nil
		}
		if err != nil {
			return nil, fmt.Errorf("fallback %s: %w", fb.Name, err)
		}
		out = append(out, agent.Fallback{Name: fb.Name, Client: c, Model: model, Provider: name, ContextLength: fallbackWindow(p)})
	}
	return out, nil
}

// fallbackWindow is a fallback's window in tokens.
func fallbackWindow(p config.Provider) int {
	if p.ContextLength > 0 {
		return p.ContextLength
	}
	if n, ok := provider.LookupContextWindow(p.Model); ok {
		return n
	}
	return agent.DefaultContextLength
}

// fallbackKeyEnvs are the key variables of the fallbacks, secrets like the main one's.
func fallbackKeyEnvs(cfg config.Config) []string {
	var out []string
	for _, fb := range cfg.Provider.Fallbacks {
		out = append(out, fb.ProviderFor(cfg.Provider).KeyEnv())
	}
	return out
}

// missingKeyError: a provider that needs an API key finds its variable unset.
type missingKeyError struct{ provider, env, key string }

func (e *missingKeyError) Error() string {
	return fmt.Sprintf("provider %s: no API key: set %s (or %s in the config)", e.provider, e.env, e.key)
}

// unkeyedClient stands in for a fallback whose key variable is unset: every call fails as an
// auth error naming the variable, so the turn that needs the fallback says what to set.
type unkeyedClient struct {
	fallback, provider string
	err                *missingKeyError
}

func (u unkeyedClient) Name() string { return u.provider }

func (u unkeyedClient) Chat(context.Context, provider.Request, func(provider.Delta)) (provider.Response, error) {
	return provider.Response{}, &provider.Error{Class: provider.ClassAuth, Provider: u.provider,
		Message: fmt.Sprintf("fallback %s has no API key: %s is not set (%s in the config)", u.fallback, u.err.env, u.err.key)}
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
		// The offline model proper (no provider at all) guides a first-time user; --provider fake
		// is the plain scripted model tests and benchmarks use.
		guide := fake.Config{Guide: p.Name == ""}
		if home, err := config.ResolveHome(a.home); err == nil {
			guide.ConfigPath = filepath.Join(home, config.FileName)
		}
		return fake.New(guide), offline, model, notice, nil
	case "openai":
		if p.CacheTTL == "1h" {
			return nil, "", "", "", errors.New("provider.cache_ttl 1h is an Anthropic setting; OpenAI caches prefixes on its own")
		}
		if key == "" && (p.BaseURL == "" || strings.Contains(p.BaseURL, "api.openai.com")) {
			return nil, "", "", "", &missingKeyError{provider: "openai", env: p.KeyEnv(), key: keys.keyEnv}
		}
		c, err = openai.New(openai.Config{BaseURL: p.BaseURL, APIKey: key, API: p.API})
	case "anthropic":
		if p.API != "" && p.API != "chat" {
			return nil, "", "", "", fmt.Errorf("provider.api %s is an OpenAI setting; provider anthropic has one API", p.API)
		}
		if key == "" && (p.BaseURL == "" || strings.Contains(p.BaseURL, "api.anthropic.com")) {
			return nil, "", "", "", &missingKeyError{provider: "anthropic", env: p.KeyEnv(), key: keys.keyEnv}
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
		if note := a.retryNote.Load(); note != nil {
			(*note)(fmt.Sprintf("%s; retry %d in %s", retryReason(err), attempt, wait.Round(100*time.Millisecond)))
			return
		}
		fmt.Fprintf(a.stderr, "spool: %s; retrying in %s\n", oneLine(err.Error()), wait.Round(100*time.Millisecond))
	}})
	return c, p.Name, p.Model, "", nil
}

// retryReason says in a few words why a call is retried: the error class and HTTP status of a
// provider error ("rate_limit (HTTP 429)"), else the error on one line.
func retryReason(err error) string {
	var pe *provider.Error
	switch {
	case !errors.As(err, &pe):
		return oneLine(err.Error())
	case pe.StatusCode != 0:
		return fmt.Sprintf("%s (HTTP %d)", pe.Class, pe.StatusCode)
	}
	return string(pe.Class)
}

// newAgent wires the configured store, provider and tools into an agent.
// Remedies in the words of each agent command (see compress.Hints).
var (
	chatHints = compress.Hints{Compact: "/compress <topic>", Fresh: "/new"}
	runHints  = compress.Hints{
		Compact: "`spool compact SESSION --focus <topic>`",
		Fresh:   "`spool run` without --continue/--resume",
	}
)

// approver decides commands, writes when confirmWrites, and file access outside the workspace.
func (a *app) newAgent(ctx context.Context, f modelFlags, approver tools.Approver, confirmWrites bool, hints compress.Hints) (*agent.Agent, store.Backend, string, error) {
	cfg, err := a.config()
	if err != nil {
		return nil, nil, "", err
	}
	client, summary, name, model, notice, err := a.client(cfg, f)
	if err != nil {
		return nil, nil, "", err
	}
	fallbacks, err := a.fallbacks(cfg, f)
	if err != nil {
		return nil, nil, "", err
	}
	st, err := a.openStore(ctx)
	if err != nil {
		return nil, nil, "", err
	}
	window, err := contextWindow(cfg, f, model)
	if err != nil {
		return nil, nil, "", err
	}
	wd, _ := os.Getwd()
	if f.yes {
		approver = tools.AutoApprove
	}
	// Sub-agents of parallel delegations share the caller's approver: one question at a time.
	approver = serialApprover(approver)
	aux, _ := cfg.Auxiliary.Compression.ClientFor(cfg.Provider)
	comp := compress.FromConfig(cfg)
	// detail=summary of session_search: the auxiliary compression model, then the main model.
	recallSum := agent.RecallSummarizer{Store: st, Models: []agent.SummaryModel{{Client: client, Model: model}}}
	if comp.SummaryModel != "" && comp.SummaryModel != model {
		auxClient := summary
		if auxClient == nil {
			auxClient = client
		}
		recallSum.Models = append([]agent.SummaryModel{{Client: auxClient, Model: comp.SummaryModel}}, recallSum.Models...)
	}
	// MCP tools join the built-ins; the registry sorts them, so the tools prefix is the same in
	// every process while the servers' lists do not change.
	reg, err := a.agentTools(ctx, cfg, tools.Env{WorkDir: wd, Home: cfg.Home, Store: st, Approver: approver, Summarizer: recallSum,
		RecallDetail:  cfg.Recall.Detail,
		ConfirmWrites: confirmWrites && !f.yes,
		Journal:       fileJournal(cfg),
		PassEnv:       cfg.Tools.Env,
		Secrets:       tools.NewSecrets(os.Environ(), append(fallbackKeyEnvs(cfg), cfg.Provider.KeyEnv(), aux.KeyEnv())...)})
	if err != nil {
		return nil, nil, "", err
	}
	ag, err := agent.New(agent.Deps{Store: st, Client: client, SummaryClient: summary, Tools: reg, Fallbacks: fallbacks, Config: agent.Config{
		Model:            model,
		Provider:         name,
		FallbackCooldown: cfg.Provider.FallbackCooldown,
		CacheTTL:         cfg.Provider.CacheLifetime(),
		ContextLength:    window,
		Compression:      comp,
		Rotate:           !cfg.Compression.InPlace,
		Prompt:           prompt.Env{Home: cfg.Home, WorkDir: wd, Platform: "cli"},
		Lease:            leaseOptions(cfg),
		Source:           "cli",
		Hints:            hints,
		Delegation:       agent.Delegation{MaxDepth: cfg.Delegation.MaxDepth, MaxParallel: cfg.Delegation.MaxParallel},
	}})
	if err != nil {
		return nil, nil, "", err
	}
	return ag, st, notice, nil
}

// serialApprover asks approver one request at a time (nil stays nil: deny).
func serialApprover(approver tools.Approver) tools.Approver {
	if approver == nil {
		return nil
	}
	var mu sync.Mutex
	return func(ctx context.Context, req tools.ApprovalRequest) error {
		mu.Lock()
		defer mu.Unlock()
		return approver(ctx, req)
	}
}

// contextWindow is the model's window in tokens, from one source of truth for every command:
// --context-length, else provider.context_length, else the table of known models, else
// agent.DefaultContextLength.
func contextWindow(cfg config.Config, f modelFlags, model string) (int, error) {
	if f.window != 0 {
		if f.window < 1024 {
			return 0, &usageError{fmt.Errorf("--context-length must be at least 1024 tokens, got %d", f.window)}
		}
		return f.window, nil
	}
	if cfg.Provider.ContextLength > 0 {
		return cfg.Provider.ContextLength, nil
	}
	if n, ok := provider.LookupContextWindow(model); ok {
		return n, nil
	}
	return agent.DefaultContextLength, nil
}

// formatCost shows an estimated cost, or "n/a" when nothing was charged because the model's
// price is not known (a local or unknown model), rather than a made-up $0.0000.
func formatCost(model string, usd float64) string {
	if !costKnown(model, usd) {
		return "n/a (price of " + cmp.Or(model, "the model") + " not known)"
	}
	return fmt.Sprintf("~$%.4f", usd)
}

// costKnown reports whether usd is an estimate: the model's price is known, or something was
// charged.
func costKnown(model string, usd float64) bool {
	_, ok := provider.LookupPrice(model)
	return ok || usd != 0
}

// usageJSON is a turn's usage for scripts: cost_usd is null where the chat says "n/a" (the
// model's price is not known), not a made-up 0.
type usageJSON struct {
	store.Usage
	CostUSD *float64 `json:"cost_usd"`
}

func newUsageJSON(model string, u store.Usage) usageJSON {
	out := usageJSON{Usage: u}
	if costKnown(model, u.CostUSD) {
		out.CostUSD = &u.CostUSD
	}
	return out
}

// leaseOptions are the turn-lease settings of the config.
func leaseOptions(cfg config.Config) turn.Options {
	return turn.Options{TTL: cfg.Leases.TTL, RenewEvery: cfg.Leases.RenewEvery, Wait: cfg.Leases.Wait}
}

// sessionAgent finds the session f names (--resume, --continue; "" for a new one) and builds the
// agent for it: a model the session was switched to (/model) and the context window it runs
// with apply unless the flags say otherwise.
func (a *app) sessionAgent(ctx context.Context, f modelFlags, approver tools.Approver, confirmWrites bool, hints compress.Hints) (*agent.Agent, store.Backend, string, string, error) {
	st, err := a.openStore(ctx)
	if err != nil {
		return nil, nil, "", "", err
	}
	sid, err := a.sessionRef(ctx, st, f)
	if err != nil {
		return nil, nil, "", "", err
	}
	if sid != "" {
		s, err := st.GetSession(ctx, sid)
		if err != nil {
			return nil, nil, "", "", fmt.Errorf("read session %s: %w", sid, err)
		}
		cfg, err := a.config()
		if err != nil {
			return nil, nil, "", "", err
		}
		model, window := agent.SessionSettings(s)
		if f.model == "" {
			f.model = model
		}
		// The recorded window is the session's model's: another model keeps its own.
		if m := mainProvider(cfg, f).Model; f.window == 0 && (m == "" || m == s.Model) {
			f.window = window
		}
	}
	ag, st, notice, err := a.newAgent(ctx, f, approver, confirmWrites, hints)
	return ag, st, sid, notice, err
}

// sessionRef resolves --resume / --continue to a session id ("" for a new session).
func (a *app) sessionRef(ctx context.Context, st store.Sessions, f modelFlags) (string, error) {
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
		wd, _ := os.Getwd()
		ls, err := st.ListSessions(ctx, store.ListOptions{Limit: 1, Source: "cli", Cwd: wd})
		if err != nil {
			return "", fmt.Errorf("find the most recent session: %w", err)
		}
		if len(ls) == 0 {
			return "", fmt.Errorf("--continue: no session was started in %s yet (spool sessions list shows all; --resume ID picks one)", wd)
		}
		return cmp.Or(ls[0].TipID, ls[0].ID), nil
	}
	return "", nil
}

// runJSON is `spool run --json`'s answer.
type runJSON struct {
	SessionID string `json:"session_id"`
	Reply     string `json:"reply"`
	Model     string `json:"model"`
	// Fallback names the fallback model (provider.fallbacks) that answered, when one did.
	Fallback     string    `json:"fallback,omitempty"`
	FinishReason string    `json:"finish_reason,omitempty"`
	Usage        usageJSON `json:"usage"`
	ModelCalls   int       `json:"model_calls"`
	ToolCalls    int       `json:"tool_calls"`
	Compactions  int       `json:"compactions"`
	// CompactionLog is each compaction's size before and after against its target.
	CompactionLog []agent.Compaction `json:"compaction_log,omitempty"`
	CacheBreaks   []store.CacheBreak `json:"cache_breaks"`
	// ContextWindow is the model's window in tokens and CompactsAt the prompt size that triggers
	// a compaction.
	ContextWindow int `json:"context_window"`
	CompactsAt    int `json:"compacts_at"`
}

// maxPipedInput bounds what `spool run` reads from a pipe (the prompt with "-", or text piped
// beside a prompt).
const maxPipedInput = 16 << 20

func (a *app) runCommand() *cobra.Command {
	var f modelFlags
	var format string
	var verbose bool
	cmd := &cobra.Command{
		Use:   "run [PROMPT]",
		Short: "Run one agent turn and print the reply",
		Long: "Run one turn non-interactively: the reply streams to stdout, notices and tool activity go\n" +
			"to stderr. PROMPT \"-\", or no PROMPT with stdin not a terminal, reads the prompt from stdin;\n" +
			"text piped in beside a PROMPT is appended\n" +
			"to it (cat log.txt | spool run \"what failed?\"). --resume/--continue go on with an earlier\n" +
			"session (--continue: the most recent one started in this directory); otherwise a new session\n" +
			"starts. Terminal commands, and file access outside the workspace, are refused unless --yes.\n\n" +
			"--output-format text (default) | json (one object: session_id, reply, usage, model_calls,\n" +
			"tool_calls, cache_breaks; --json is the same) | stream-json (one JSON event per line as the\n" +
			"turn runs: init, then delta, tool_call, tool_result, notice, wait, then result). A failure in\n" +
			"json or stream-json is one JSON object on stdout: type error, error_class, session_id, error.",
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			if a.json && cmd.Flags().Changed("output-format") && format != "json" {
				return &usageError{fmt.Errorf("--json and --output-format %s exclude each other", format)}
			}
			if a.json {
				format = "json"
			}
			switch format {
			case "text", "json", "stream-json":
			default:
				return &usageError{fmt.Errorf("--output-format %q: want text, json or stream-json", format)}
			}
			arg := "-" // no PROMPT: what is piped in is the prompt
			if len(argv) == 1 {
				arg = argv[0]
			} else if isTerminal(a.stdin) {
				return &usageError{errors.New(`no prompt: spool run "PROMPT", or pipe it in (echo PROMPT | spool run)`)}
			}
			input, err := a.runInput(arg)
			if err != nil {
				return err
			}
			ag, st, sid, notice, err := a.sessionAgent(ctx, f, tools.Deny("spool run cannot ask for approval; pass --yes to allow it"), false, runHints)
			if err != nil {
				return err
			}
			if notice != "" {
				fmt.Fprintln(a.stderr, notice)
			}
			out := newRunOutput(ctx, a, st, format)
			out.verbose = verbose
			opts := out.options()
			if format == "stream-json" {
				// The first event names the session, so a script has its id before anything else.
				wd, _ := os.Getwd()
				opts.OnStart = func(sid string) {
					out.event(streamEvent{Type: "init", SessionID: sid, Model: ag.Model(), Cwd: wd, Tools: nonNil(ag.ToolNames())})
				}
			}
			res, err := ag.Run(ctx, sid, input, opts)
			out.end()
			if err != nil {
				if res.SessionID != "" {
					err = &sessionError{id: res.SessionID, err: err}
				}
				return err
			}
			model := cmp.Or(res.Model, ag.Model())
			final := runJSON{
				SessionID: res.SessionID, Reply: res.Reply, Model: model, Fallback: res.Fallback, FinishReason: res.FinishReason,
				Usage: newUsageJSON(model, res.Usage), ModelCalls: res.Calls, ToolCalls: res.ToolCalls, Compactions: res.Compactions, CompactionLog: res.CompactionLog,
				CacheBreaks: nonNil(res.Breaks), ContextWindow: ag.Threshold().Model.ContextLength, CompactsAt: ag.Threshold().Tokens,
			}
			switch format {
			case "json":
				return a.printJSON(final)
			case "stream-json":
				out.event(streamEvent{Type: "result", Result: &final})
			default:
				if !out.streamed && res.Reply != "" {
					fmt.Fprintln(a.stdout, visible(res.Reply))
				}
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&format, "output-format", "text", "text, json or stream-json (one JSON event per line as the turn runs)")
	cmd.Flags().BoolVar(&verbose, "verbose", false, "text output: show tool results in full (default: their first lines)")
	return cmd
}

// runInput is the prompt of `spool run`: the argument, the whole of stdin for "-", and text piped
// in beside an argument appended to it.
func (a *app) runInput(arg string) (string, error) {
	input := arg
	if arg == "-" || !isTerminal(a.stdin) {
		b, err := io.ReadAll(io.LimitReader(a.stdin, maxPipedInput+1))
		if err != nil {
			return "", fmt.Errorf("read stdin: %w", err)
		}
		if len(b) > maxPipedInput {
			return "", &usageError{fmt.Errorf("stdin is over %d MiB; pass a smaller file or a path for the agent to read", maxPipedInput>>20)}
		}
		switch piped := strings.TrimRight(string(b), "\n"); {
		case arg == "-":
			input = piped
		case strings.TrimSpace(piped) != "":
			input = arg + "\n\n" + piped
		}
	}
	if strings.TrimSpace(input) == "" {
		return "", &usageError{errors.New("the prompt is empty")}
	}
	return input, nil
}

// streamEvent is one line of `spool run --output-format stream-json`.
type streamEvent struct {
	Type      string   `json:"type"` // init, delta, reasoning, tool_call, tool_result, notice, wait, result, error
	Content   string   `json:"content,omitempty"`
	ToolID    string   `json:"tool_call_id,omitempty"`
	Name      string   `json:"name,omitempty"`
	Arguments string   `json:"arguments,omitempty"`
	IsError   bool     `json:"is_error,omitempty"`
	Waited    float64  `json:"waited_seconds,omitempty"`
	Holder    string   `json:"holder,omitempty"`
	SessionID string   `json:"session_id,omitempty"`
	Model     string   `json:"model,omitempty"`
	Cwd       string   `json:"cwd,omitempty"`
	Tools     []string `json:"tools,omitempty"`
	Result    *runJSON `json:"result,omitempty"`
}

// sessionError is the failure of a turn that has a session (its message may be stored there).
type sessionError struct {
	id  string
	err error
}

func (e *sessionError) Error() string {
	if strings.Contains(e.err.Error(), e.id) {
		return e.err.Error()
	}
	return "session " + e.id + ": " + e.err.Error()
}

func (e *sessionError) Unwrap() error { return e.err }

// errorJSON is a failure of spool run in the json and stream-json formats, on stdout.
type errorJSON struct {
	Type      string `json:"type"` // error
	Class     string `json:"error_class"`
	SessionID string `json:"session_id,omitempty"`
	Error     string `json:"error"`
}

// jsonFailure is the format a failure of cmd is reported in on stdout: json or stream-json for
// spool run asked for one (even when a later flag failed to parse), else "".
func (a *app) jsonFailure(cmd *cobra.Command) string {
	if cmd == nil || cmd.CommandPath() != "spool run" {
		return ""
	}
	if a.json {
		return "json"
	}
	if f := cmd.Flags().Lookup("output-format"); f != nil && (f.Value.String() == "json" || f.Value.String() == "stream-json") {
		return f.Value.String()
	}
	return ""
}

// printFailure writes err as one errorJSON object in format.
func (a *app) printFailure(format, class string, err error) {
	e := errorJSON{Type: "error", Class: class, Error: oneLine(err.Error())}
	var se *sessionError
	if errors.As(err, &se) {
		e.SessionID = se.id
	}
	if format == "json" {
		_ = a.printJSON(e)
		return
	}
	_ = json.NewEncoder(a.stdout).Encode(e)
}

// runOutput shows a running turn in one of the output formats.
type runOutput struct {
	ctx      context.Context
	a        *app
	st       runStore
	format   string
	mu       sync.Mutex
	enc      *json.Encoder
	streamed bool // text format: some of the reply went to stdout already
	verbose  bool // text format: tool results in full
}

func newRunOutput(ctx context.Context, a *app, st runStore, format string) *runOutput {
	return &runOutput{ctx: ctx, a: a, st: st, format: format, enc: json.NewEncoder(a.stdout)}
}

// event writes one stream-json line.
func (o *runOutput) event(e streamEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	_ = o.enc.Encode(e)
}

// options are the turn's callbacks for the format.
func (o *runOutput) options() agent.RunOptions {
	a := o.a
	if o.format == "stream-json" {
		return agent.RunOptions{
			OnDelta: func(d provider.Delta) {
				if d.Reasoning != "" {
					o.event(streamEvent{Type: "reasoning", Content: d.Reasoning})
				}
				if d.Content != "" {
					o.event(streamEvent{Type: "delta", Content: d.Content})
				}
			},
			OnWait: func(waited time.Duration, holder string) {
				o.event(streamEvent{Type: "wait", Waited: waited.Seconds(), Holder: holder})
			},
			OnNotice: func(s string) { o.event(streamEvent{Type: "notice", Content: s}) },
			OnToolCall: func(c store.ToolCall) {
				o.event(streamEvent{Type: "tool_call", ToolID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
			},
			OnToolResult: func(c store.ToolCall, result string, isError bool) {
				o.event(streamEvent{Type: "tool_result", ToolID: c.ID, Name: c.Function.Name, Content: result, IsError: isError})
			},
		}
	}
	opts := agent.RunOptions{
		OnWait: func(waited time.Duration, holder string) {
			fmt.Fprintf(a.stderr, "spool: %s\n", waitLine(holder, waited, leaseSince(o.ctx, o.st, holder)))
		},
		OnNotice:   func(s string) { fmt.Fprintf(a.stderr, "spool: %s\n", visible(oneLine(s))) },
		OnToolCall: func(c store.ToolCall) { fmt.Fprintf(a.stderr, "  ⚙ %s\n", toolCallLine(c)) },
	}
	if o.format == "text" {
		opts.OnToolResult = func(_ store.ToolCall, result string, isErr bool) {
			fmt.Fprint(a.stderr, resultBlock(result, isErr, o.verbose, terminalWidth(a.stderr), "--verbose shows all"))
		}
		opts.OnDelta = func(d provider.Delta) {
			if d.Content != "" {
				o.streamed = true
				io.WriteString(a.stdout, visible(d.Content))
			}
		}
	}
	return opts
}

// end finishes the text format's streamed reply with a newline.
func (o *runOutput) end() {
	if o.streamed {
		fmt.Fprintln(o.a.stdout)
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
