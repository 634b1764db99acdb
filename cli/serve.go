package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/config"
	"github.com/spoolhq/spool/gateway"
	"github.com/spoolhq/spool/gateway/openai"
	"github.com/spoolhq/spool/gateway/uilogin"
	"github.com/spoolhq/spool/prompt"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/tools"
	"github.com/spoolhq/spool/web"
	"github.com/spoolhq/spool/web/signin"
)

const serveLong = `Serve spool's long sessions behind the OpenAI API, on the same $SPOOL_HOME (database) as the
CLI: a session made over the API is listed, searched and resumed by ` + "`spool`" + ` (source "api") and the
other way round.

Routes: POST /v1/chat/completions (streamed and not), POST /v1/responses (previous_response_id
chains, conversation, streaming) with GET/DELETE /v1/responses/{id}, /cancel and /input_items, POST /v1/responses/compact (spool's
compactor), /v1/conversations and their items (conversation id = session id), GET /v1/models ("spool" is the default
model: the configured provider's, else the offline model), GET /health, GET /ready, GET /metrics
(Prometheus; with keys it needs one, as a Bearer token), and the session browser under /ui/
(scoped to the key's principal; with keys, a person signs in at /ui/login by pasting their API
key: an HttpOnly SameSite=Strict cookie for 12 h, /ui/logout signs out; without keys, through the
one-time link printed at start, as spool ui; a restart signs everyone out). Errors use OpenAI's
JSON error shape.

Guards: without keys only loopback Host names (localhost, 127.0.0.0/8, [::1]) and
serve.allowed_hosts are answered (403 otherwise: DNS rebinding); a browser's state-changing
request from another site is 403 (Sec-Fetch-Site / Origin; serve.cors_origins excepted); a POST
to /v1 with a body that is not Content-Type: application/json is 415; after 10 wrong keys in 5
minutes a client address gets 429 with Retry-After until the window ends (API and /ui/login
count together).

Sessions: X-Spool-Session-Id continues a session (its live tip after compaction);
X-Spool-Session-Key names a stable lane the client picks; with neither, the session is derived
from the key's principal, the system text and the first user message. A client that resends its
whole history gets only the new part appended; a history that differs from the stored one
becomes a branch (X-Spool-Branched-From names the parent). Every answer carries
X-Spool-Session-Id. A busy session waits serve.busy_wait, then answers 409 with Retry-After
(the SDKs retry it); X-Spool-Busy: reject|queue|interrupt picks another policy. Idempotency-Key
on a POST replays the stored outcome for 24 h (another body: 409 idempotency_key_conflict). A
client that disconnects does not cancel its turn; the reply is stored.

Responses options: instructions are added to that turn's user message (never to the frozen
system prompt); max_output_tokens (and Chat max_completion_tokens) bound each model call
(status incomplete / finish_reason length); truncation auto|disabled both mean spool's
compaction; store: false runs the turn in a session deleted after the answer (not retrievable,
not replayed; 400 together with previous_response_id or conversation).

Configuration ($SPOOL_HOME/config.yaml, section serve:, or SPOOL_SERVE_* variables):
  listen: 127.0.0.1:8642     address; without keys only loopback addresses are accepted
  keys:                      principal: sha256 hex of its API key (spool serve hash-key KEY)
    alice: 9f86d0...         a key sees only its principal's sessions (others are 404)
  busy_wait: 2s              wait for a busy session before 409
  retry_after: 1s            the Retry-After of a busy answer
  max_concurrent: 8          running requests per principal (429 beyond)
  max_request_bytes: 4194304 request body limit (413 beyond)
  turn_timeout: 10m          one turn's limit
  drain_timeout: 30s         on SIGTERM: no new turns; running ones get this long, then stop
  keepalive: 15s             silence before a ": keepalive" comment in a stream
  stream_buffer_bytes: 1048576  what one stream may hold for a client that has not read it
                             yet while the answer streams (its closing events are queued
                             whole): a client that stops reading mid-answer has its stream cut
                             there (the connection closes; logged once, without content); its
                             turn goes on and is stored (GET /v1/responses/{id}, the conversation)
  cors_origins: ""           comma-separated browser origins allowed (none by default)
  allowed_hosts: ""          without keys: comma-separated host names (name or name:port)
                             answered besides the loopback ones (none by default)
  tools:                     principal ("local" without keys): spool tools its sessions may use
    alice: session_search memory   (none by default); session_search reads only that
                             principal's sessions, memory writes $SPOOL_HOME/principals/NAME/memories
    carol: mcp__fs__read_file mcp__web__*   MCP tools (mcp.servers): one tool, or every tool of a
                             server; allowed by this list or refused, never asked about
The model is provider.* as for spool run (or --provider/--model/--base-url).

Tools: function tools the client declares (Chat Completions tools / Responses tools of type
function; tool_choice auto or none) are returned to the client as tool calls (finish_reason
tool_calls; function_call items), and its next request answers them with role "tool" messages
or function_call_output items, which are stored in the same session. spool's own tools
(serve.tools) run server-side and are offered before the client's; a client tool of the same
name is 400. File and terminal tools are never offered over the API.`

func (a *app) serveCommand() *cobra.Command {
	var f modelFlags
	var listen string
	cmd := &cobra.Command{
		Use:   "serve [--listen 127.0.0.1:PORT]",
		Short: "Serve long sessions behind the OpenAI API (chat completions, models)",
		Long:  serveLong,
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.serve(cmd.Context(), f, listen)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&listen, "listen", "", "address to listen on (default serve.listen, 127.0.0.1:8642); port 0 picks a free one")
	fl.StringVar(&f.provider, "provider", "", "model provider: openai, anthropic or fake (default: provider.name from the config, else the offline model)")
	fl.StringVar(&f.model, "model", "", "model name (default: provider.model from the config)")
	fl.StringVar(&f.baseURL, "base-url", "", "provider base URL")
	fl.IntVar(&f.window, "context-length", agent.DefaultContextLength, "the model's context window in tokens (sizes the compaction trigger)")
	cmd.AddCommand(&cobra.Command{
		Use:   "hash-key [KEY|-]",
		Short: "Print the sha256 digest of an API key, for serve.keys",
		Args:  args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			key := ""
			if len(argv) == 1 && argv[0] != "-" {
				key = argv[0]
			} else {
				b, err := io.ReadAll(a.stdin)
				if err != nil {
					return fmt.Errorf("read the key from stdin: %w", err)
				}
				key = strings.TrimSpace(string(b))
			}
			if key == "" {
				return &usageError{errors.New("the key is empty")}
			}
			fmt.Fprintln(a.stdout, gateway.HashKey(key))
			return nil
		},
	})
	return cmd
}

// loopback reports whether a listen address can only be reached from this machine.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (a *app) serve(ctx context.Context, f modelFlags, listen string) error {
	cfg, err := a.config()
	if err != nil {
		return err
	}
	sc := cfg.Serve
	if listen == "" {
		listen = sc.Listen
	}
	keys, err := gateway.ParseKeys(sc.Keys)
	if err != nil {
		return err
	}
	if !keys.Enabled() && !loopback(listen) {
		return &usageError{fmt.Errorf("refusing to listen on %s without API keys: set serve.keys (spool serve --help) or listen on a loopback address such as 127.0.0.1", listen)}
	}
	if f.window < 1024 {
		return &usageError{fmt.Errorf("--context-length must be at least 1024 tokens, got %d", f.window)}
	}
	logger := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	g, st, model, notice, err := a.serveGateway(ctx, cfg, f, keys, logger)
	if err != nil {
		return err
	}
	plat, err := setupPlatforms(cfg, st, g, model, f.window, logger)
	if err != nil {
		return err
	}
	origins := commaList(sc.CORSOrigins)
	for _, o := range origins {
		if err := openai.CheckOrigin(o); err != nil {
			return &usageError{fmt.Errorf("serve.cors_origins: %v", err)}
		}
	}
	// The session browser, scoped to the key's principal (all sessions without keys, as spool ui).
	// With keys, a person signs in at /ui/login with their API key (a session cookie); scripts
	// may send the key as a Bearer header. Without keys it is spool ui's sign-in: a one-time
	// link printed at start.
	// One table of sign-ins for the login and the pages: one cookie, one CSRF rule. One count
	// of wrong keys for the login and the API.
	limiter := gateway.NewKeyLimiter(gateway.KeyLimitOptions{})
	ui, mounts, loginToken := serveUI(st, keys, limiter)
	defer ui.Close()
	var webhooks map[string]http.Handler
	if plat != nil {
		webhooks = plat.webhooks
	}
	api := openai.New(g, openai.Options{Keys: keys, Models: []string{model}, MaxBodyBytes: int64(sc.MaxRequestBytes),
		CORSOrigins: origins, KeepAlive: sc.KeepAlive, StreamBuffer: sc.StreamBufferBytes, Mount: mounts, Webhooks: webhooks,
		AllowedHosts: commaList(sc.AllowedHosts), Limiter: limiter,
		Log: logger})
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", listen, err)
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	if notice != "" {
		fmt.Fprintln(a.stderr, notice)
	}
	auth := "no API keys: loopback only"
	if keys.Enabled() {
		auth = fmt.Sprintf("%d API key(s)", len(sc.Keys))
	}
	fmt.Fprintf(a.stderr, "spool serve: listening on http://%s (model %s, %s, database %s)\n", ln.Addr(), model, auth, cfg.Database.Path)
	if loginToken != "" {
		fmt.Fprintf(a.stderr, "spool serve: session browser: open http://%s/ui/?token=%s (the link signs one browser in, once)\n", ln.Addr(), loginToken)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	pctx, pcancel := context.WithCancel(ctx)
	defer pcancel()
	var platErr error
	platDone := make(chan struct{})
	if plat != nil {
		for _, ad := range plat.adapters {
			fmt.Fprintf(a.stderr, "spool serve: platform %s connected\n", ad.Platform())
		}
		go func() {
			defer close(platDone)
			if platErr = plat.serve(pctx); platErr != nil && pctx.Err() == nil {
				fmt.Fprintf(a.stderr, "spool serve: platforms stopped: %s\n", oneLine(platErr.Error()))
				platErr = nil
			}
		}()
	} else {
		close(platDone)
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	// The platforms stop taking events and let their running turns finish while the gateway
	// drains (which cancels what still runs at the deadline); queued events stay in the inbox
	// for the next process.
	pcancel()
	if err := a.serveDrain(g, srv, ui, sc.DrainTimeout, platDone, &platErr); err != nil {
		return err
	}
	fmt.Fprintln(a.stderr, "spool serve: stopped")
	return nil
}

// serveGateway makes the gateway of spool serve: the model client and its fallbacks, the
// store, spool's own tools for API sessions, and the turn and queue agents.
func (a *app) serveGateway(ctx context.Context, cfg config.Config, f modelFlags, keys gateway.Keys, logger *slog.Logger) (g *gateway.Gateway, st store.Backend, model, notice string, err error) {
	sc := cfg.Serve
	client, summary, name, model, notice, err := a.client(cfg, f)
	if err != nil {
		return nil, nil, "", "", err
	}
	fallbacks, err := a.fallbacks(cfg, f)
	if err != nil {
		return nil, nil, "", "", err
	}
	cooldowns := agent.NewCooldowns() // the runner and the queue agent know each other's failures
	st, err = a.openStore(ctx)
	if err != nil {
		return nil, nil, "", "", err
	}
	var servers []string
	for _, s := range cfg.MCP.Servers {
		servers = append(servers, s.Name)
	}
	toolsFor, err := gateway.ParseTools(sc.Tools, keys, servers)
	if err != nil {
		return nil, nil, "", "", &usageError{err}
	}
	wd, _ := os.Getwd()
	// spool's own tools for API sessions (serve.tools): session_search confined to the calling
	// session's principal, memory in the principal's home. No file or terminal tools. MCP
	// servers start only when serve.tools allows some key one of their tools; a call runs only
	// for a key whose list allows that tool (never asked about: no one is there to answer).
	var mcpTools []tools.Tool
	if wantsMCP(toolsFor) {
		if mcpTools, err = a.mcpTools(ctx, cfg); err != nil {
			return nil, nil, "", "", err
		}
	}
	aux, _ := cfg.Auxiliary.Compression.ClientFor(cfg.Provider)
	ownEnv := tools.Env{Home: cfg.Home, Store: st,
		Summarizer:   agent.RecallSummarizer{Store: st, Models: []agent.SummaryModel{{Client: client, Model: model}}},
		RecallDetail: cfg.Recall.Detail,
		Secrets:      tools.NewSecrets(os.Environ(), append(fallbackKeyEnvs(cfg), cfg.Provider.KeyEnv(), aux.KeyEnv())...)}
	own, err := a.liveTools(mcpTools, func(extra []tools.Tool) (agent.Tools, error) {
		reg, err := tools.New(append([]tools.Tool{tools.SessionSearch(), tools.Memory()}, extra...)...)
		if err != nil {
			return nil, err
		}
		return gateway.OwnTools(reg, ownEnv, st, toolsFor), nil
	})
	if err != nil {
		return nil, nil, "", "", err
	}
	newAgent := func(wait time.Duration) (*agent.Agent, error) {
		lo := leaseOptions(cfg)
		lo.Wait = max(wait, time.Millisecond)
		return agent.New(agent.Deps{Store: st, Client: client, SummaryClient: summary, Tools: own, Fallbacks: fallbacks, Cooldowns: cooldowns, Config: agent.Config{
			Model: model, Provider: name, FallbackCooldown: cfg.Provider.FallbackCooldown, CacheTTL: cfg.Provider.CacheLifetime(), ContextLength: f.window,
			Compression: compress.FromConfig(cfg), Rotate: !cfg.Compression.InPlace,
			Prompt: prompt.Env{Home: cfg.Home, WorkDir: wd, Platform: "api"},
			Lease:  lo, Source: gateway.Source,
		}})
	}
	runner, err := newAgent(sc.BusyWait)
	if err != nil {
		return nil, nil, "", "", err
	}
	queue, err := newAgent(min(cfg.Leases.Wait, sc.TurnTimeout))
	if err != nil {
		return nil, nil, "", "", err
	}
	g, err = gateway.New(gateway.Deps{Store: st, Runner: runner, Queue: queue, Log: logger, Config: gateway.Config{
		Model: model, BusyWait: sc.BusyWait, RetryAfter: sc.RetryAfter, MaxConcurrent: sc.MaxConcurrent, TurnTimeout: sc.TurnTimeout,
		Tools: toolsFor, Home: cfg.Home,
	}})
	if err != nil {
		return nil, nil, "", "", err
	}
	return g, st, model, notice, nil
}

// serveUI makes the session browser mounted at /ui and its sign-in; loginToken is the one-time
// sign-in link's token when there are no API keys.
func serveUI(st web.Store, keys gateway.Keys, limiter *gateway.KeyLimiter) (ui *web.Server, mounts map[string]http.Handler, loginToken string) {
	signOut, loginToken, signinTTL := "", "", signin.DefaultTTL
	if keys.Enabled() {
		signOut = "/ui/logout"
	} else {
		loginToken, signinTTL = web.NewLoginToken(), web.OwnSignInTTL
	}
	signins := signin.New(signin.Options{Prefix: "/ui", TTL: signinTTL})
	logins := uilogin.New(keys, uilogin.Options{Prefix: "/ui", SignIns: signins, Limiter: limiter})
	ui = web.New(st, web.Options{Prefix: "/ui", SignOut: signOut, SignIns: signins, LoginToken: loginToken, Principal: func(r *http.Request) (web.Principal, error) {
		p, ok := logins.Principal(r)
		if !ok {
			return web.Principal{}, errors.New("not signed in: sign in at /ui/login with your API key (or send Authorization: Bearer <key>)")
		}
		return web.Principal{UserID: p, Scoped: keys.Enabled()}, nil
	}})
	mounts = map[string]http.Handler{"/ui": ui, "/ui/": logins.Guard(ui), "/ui/login": logins.Handler(), "/ui/logout": logins.Handler()}
	return ui, mounts, loginToken
}

// serveDrain stops new turns, lets the running ones finish within drainTimeout, then shuts the
// listener down and waits for the platforms (platErr is theirs, read once platDone is closed).
func (a *app) serveDrain(g *gateway.Gateway, srv *http.Server, ui *web.Server, drainTimeout time.Duration, platDone <-chan struct{}, platErr *error) error {
	// Not ready from here on (/ready answers 503, new turns are refused) while the listener
	// stays open: a load balancer sees the drain and moves traffic before the port closes.
	g.StopTurns()
	fmt.Fprintf(a.stderr, "spool serve: draining (running turns get %s)\n", drainTimeout)
	dctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	ui.Close() // end the browser's live streams so Shutdown does not wait on them
	derr := g.Drain(dctx)
	// The running turns have ended (or were cancelled at the deadline): Shutdown closes the
	// listener and waits for their handlers to finish writing.
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	serr := srv.Shutdown(sctx)
	<-platDone
	if *platErr != nil {
		fmt.Fprintf(a.stderr, "spool serve: platforms: %s\n", oneLine((*platErr).Error()))
	}
	if derr != nil {
		fmt.Fprintf(a.stderr, "spool serve: %s\n", oneLine(derr.Error()))
	}
	if serr != nil && !errors.Is(serr, context.DeadlineExceeded) {
		return fmt.Errorf("shut down: %w", serr)
	}
	return nil
}

// commaList splits a comma-separated setting, dropping blanks.
func commaList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// wantsMCP reports whether serve.tools allows any key an MCP tool.
func wantsMCP(toolsFor map[string][]string) bool {
	for _, list := range toolsFor {
		for _, t := range list {
			if strings.HasPrefix(t, gateway.MCPPrefix) {
				return true
			}
		}
	}
	return false
}
