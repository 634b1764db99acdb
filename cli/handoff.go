package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/config"
	"github.com/spoolhq/spool/gateway"
	"github.com/spoolhq/spool/gateway/platform"
	"github.com/spoolhq/spool/prompt"
	"github.com/spoolhq/spool/store"
)

const handoffLong = `Move a session to a chat: the chat's session key (its lane: a DM, a channel user, a thread)
is bound to the SAME session id (not a summary copy), and a synthetic user turn asks the agent,
there, to say where the work stands. Replies in that chat (through spool serve with the same
platforms: configuration and database) continue the session; 'spool sessions show' lists its
bindings; 'spool chat --resume SESSION' takes it back to the terminal.

Targets: telegram:CHAT[:THREAD] (a forum topic), slack:CHANNEL[:THREAD_TS], discord:CHANNEL[:THREAD].
A plain group whose sessions are per user (group_per_user, the default) needs --user ID.
The platform must be configured under platforms: (token_env and base_url as for spool serve).`

func (a *app) handoffCommand() *cobra.Command {
	var f modelFlags
	var to, user string
	cmd := &cobra.Command{
		Use:   "handoff SESSION --to PLATFORM:CHAT[:THREAD]",
		Short: "Continue a session in a Telegram, Slack or Discord chat",
		Long:  handoffLong,
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			if to == "" {
				return &usageError{errors.New("--to PLATFORM:CHAT[:THREAD] is required")}
			}
			cfg, err := a.config()
			if err != nil {
				return err
			}
			st, err := a.openStore(ctx)
			if err != nil {
				return err
			}
			s, err := a.resolve(ctx, st, argv[0])
			if err != nil {
				return err
			}
			client, summary, name, model, notice, err := a.client(cfg, f)
			if err != nil {
				return err
			}
			wd, _ := os.Getwd()
			lo := leaseOptions(cfg)
			ag, err := agent.New(agent.Deps{Store: st, Client: client, SummaryClient: summary, Config: agent.Config{
				Model: model, Provider: name, CacheTTL: cfg.Provider.CacheLifetime(), ContextLength: f.window,
				Compression: compress.FromConfig(cfg), Rotate: !cfg.Compression.InPlace,
				Prompt: prompt.Env{Home: cfg.Home, WorkDir: wd, Platform: "cli"}, Lease: lo, Source: "cli",
			}})
			if err != nil {
				return err
			}
			h, err := a.handoff(ctx, cfg, st, ag, model, f.window, s.ID, to, user, notice)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(h)
			}
			fmt.Fprintf(a.stdout, "Session %s now continues in %s (key %s).\n", h.SessionID, to, h.Key)
			fmt.Fprintf(a.stdout, "Posted there: %s\n", oneLine(visible(truncate(h.Reply, 200))))
			fmt.Fprintf(a.stdout, "Replies there continue the session; 'spool chat --resume %s' takes it back.\n", h.SessionID)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&to, "to", "", "the chat: telegram:CHAT[:THREAD], slack:CHANNEL[:THREAD_TS] or discord:CHANNEL[:THREAD]")
	fl.StringVar(&user, "user", "", "the user whose lane it is, in a group whose sessions are per user")
	fl.StringVar(&f.provider, "provider", "", "model provider (default: provider.name from the config, else the offline model)")
	fl.StringVar(&f.model, "model", "", "model name (default: provider.model from the config)")
	fl.StringVar(&f.baseURL, "base-url", "", "provider base URL")
	fl.IntVar(&f.window, "context-length", agent.DefaultContextLength, "the model's context window in tokens")
	return cmd
}

// handoffResult is what a handoff did.
type handoffResult struct {
	SessionID string `json:"session_id"`
	Key       string `json:"key"`
	Platform  string `json:"platform"`
	ChatID    string `json:"chat_id"`
	ThreadID  string `json:"thread_id,omitempty"`
	Reply     string `json:"reply"`
	MessageID string `json:"message_id"`
}

// handoff binds the target chat's key to the live tip of sessionID and runs the synthetic turn
// there through the platform's adapter (only its outbound side: no intake is started, so a
// running spool serve keeps its poller).
// notice (the offline model's, say) is printed once the target is known to be good.
func (a *app) handoff(ctx context.Context, cfg config.Config, st handoffStore, runner gateway.Runner, model string, window int, sessionID, to, user, notice string) (handoffResult, error) {
	name, chat, thread, err := platform.ParseTarget(to)
	if err != nil {
		return handoffResult{}, err
	}
	var pc config.Platform
	cfg.Platforms.Each(func(n string, c config.Platform) {
		if n == name {
			pc = c
		}
	})
	if !pc.Enabled() {
		return handoffResult{}, fmt.Errorf("platforms.%s is not configured (set platforms.%s.token_env in the config)", name, name)
	}
	log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	holder := store.NewHolder().String()
	ad, err := buildAdapter(name, pc, st, holder, log)
	if err != nil {
		return handoffResult{}, err
	}
	pol := policyOf(cfg.Platforms, pc)
	addr, key, err := platform.ResolveTarget(ctx, ad, pol, chat, thread, user)
	if err != nil {
		return handoffResult{}, fmt.Errorf("handoff to %s: %w", to, err)
	}
	if notice != "" {
		fmt.Fprintln(a.stderr, notice)
	}
	tip, err := st.ResumeTarget(ctx, sessionID)
	if err != nil {
		return handoffResult{}, fmt.Errorf("handoff: the live tip of %s: %w", sessionID, err)
	}
	g, err := gateway.New(gateway.Deps{Store: st, Runner: runner, Config: gateway.Config{Model: model, BusyWait: time.Minute}})
	if err != nil {
		return handoffResult{}, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = g.Drain(dctx)
	}()
	r, err := platform.NewRouter(platform.RouterDeps{Store: st, Turns: g, Log: log, Config: platform.Config{
		Principal: cfg.Platforms.Principal, Policies: map[string]platform.Policy{name: pol}, Model: model,
		Window: window, Holder: holder, RecoverEvery: -1, HygieneAt: hygieneAt(cfg),
	}})
	if err != nil {
		return handoffResult{}, err
	}
	r.Attach(ad)
	if err := platform.Bind(ctx, st, key, addr, tip, "cli"); err != nil {
		return handoffResult{}, fmt.Errorf("handoff: %w", err)
	}
	ev := platform.HandoffEvent(addr, tip, to)
	if err := r.Handle(ctx, ev); err != nil {
		return handoffResult{}, fmt.Errorf("handoff: %w", err)
	}
	if err := r.Idle(ctx); err != nil {
		return handoffResult{}, fmt.Errorf("handoff: %w", err)
	}
	sends, err := st.Sends(ctx, ev.Platform+":"+ev.EventID)
	if err != nil {
		return handoffResult{}, fmt.Errorf("handoff: %w", err)
	}
	msgID := ""
	for _, s := range sends {
		if s.Chunk >= 0 && msgID == "" {
			msgID = s.MessageID
		}
	}
	if msgID == "" {
		return handoffResult{}, fmt.Errorf("handoff: the chat is bound to %s, but the agent's message did not reach %s (see the warning above); a message there continues the session", tip, to)
	}
	reply := ""
	if ms, err := st.Conversation(ctx, tip, store.ViewActive); err == nil {
		for i := len(ms) - 1; i >= 0; i-- {
			if ms[i].Role == store.RoleAssistant && len(ms[i].ToolCalls) == 0 {
				reply = ms[i].Content
				break
			}
		}
	}
	return handoffResult{SessionID: tip, Key: key, Platform: name, ChatID: addr.ChatID, ThreadID: addr.ThreadID, Reply: reply, MessageID: msgID}, nil
}
