package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/spoolhq/spool/config"
	"github.com/spoolhq/spool/gateway"
	_ "github.com/spoolhq/spool/gateway/discord" // platforms.discord
	"github.com/spoolhq/spool/gateway/platform"
	_ "github.com/spoolhq/spool/gateway/slack" // platforms.slack
	"github.com/spoolhq/spool/store"

	// Chat-platform adapters register themselves with gateway/platform: one line each.
	_ "github.com/spoolhq/spool/gateway/telegram"
)

// platforms is spool serve's chat-platform side: the adapters configured under platforms:,
// their webhook handlers, and the router that runs their chats' turns.
type platforms struct {
	router   *platform.Router
	adapters []platform.Adapter
	webhooks map[string]http.Handler
}

// setupPlatforms builds every configured platform's adapter (its secrets read from the
// environment variables the config names) and the router. None configured: nil.
func setupPlatforms(cfg config.Config, st platformStore, g *gateway.Gateway, model string, window int, log *slog.Logger) (*platforms, error) {
	pc := cfg.Platforms
	var adapters []platform.Adapter
	policies := map[string]platform.Policy{}
	busy := map[string]gateway.Busy{}
	holder := store.NewHolder().String()
	var err error
	pc.Each(func(name string, c config.Platform) {
		if err != nil || !c.Enabled() {
			return
		}
		var a platform.Adapter
		if a, err = buildAdapter(name, c, st, holder, log); err != nil {
			return
		}
		adapters = append(adapters, a)
		policies[name] = policyOf(pc, c)
		if c.Busy == "interrupt" {
			busy[name] = gateway.BusyInterrupt
		}
	})
	if err != nil || len(adapters) == 0 {
		return nil, err
	}
	r, err := platform.NewRouter(platform.RouterDeps{Store: st, Turns: g, Log: log, Config: platform.Config{
		Principal: pc.Principal, Policies: policies, Busy: busy, Model: model, Window: window, Holder: holder,
		ClaimTTL: cfg.Serve.TurnTimeout + 5*time.Minute, DrainTimeout: cfg.Serve.DrainTimeout,
		HygieneAt: hygieneAt(cfg),
	}})
	if err != nil {
		return nil, err
	}
	byName := map[string]platform.Adapter{}
	for _, a := range adapters {
		byName[a.Platform()] = a
		r.Attach(a) // before the webhooks are mounted: an event posted before Serve runs is recorded, not refused
	}
	r.Command("handoff", platform.HandoffCommand(r, st, byName, policies))
	p := &platforms{router: r, adapters: adapters, webhooks: map[string]http.Handler{}}
	for _, a := range adapters {
		if w, ok := a.(platform.WebhookAdapter); ok {
			pattern, h := w.Webhook(r)
			p.webhooks[pattern] = h
		}
	}
	return p, nil
}

// serve runs the router and the adapters until ctx ends.
func (p *platforms) serve(ctx context.Context) error {
	return p.router.Serve(ctx, p.adapters...)
}

// policyOf is a platform's key policy.
func policyOf(pc config.Platforms, c config.Platform) platform.Policy {
	return platform.Policy{Profile: pc.Profile, GroupPerUser: c.GroupPerUser, ThreadPerUser: c.ThreadPerUser}
}

// buildAdapter builds one configured platform's adapter, its secrets read from the
// environment variables the config names (spool serve, spool handoff).
func buildAdapter(name string, c config.Platform, st platformStore, holder string, log *slog.Logger) (platform.Adapter, error) {
	f, ok := platform.Lookup(name)
	if !ok {
		return nil, &usageError{fmt.Errorf("platforms.%s is configured, but this build has no %s adapter (built in: %v)", name, name, platform.Registered())}
	}
	var err error
	secret := func(field, env string) string {
		if env == "" || err != nil {
			return ""
		}
		v := os.Getenv(env)
		if v == "" {
			err = &usageError{fmt.Errorf("platforms.%s.%s names %s, which is not set in the environment", name, field, env)}
		}
		return v
	}
	s := platform.Settings{
		Token:         secret("token_env", c.TokenEnv),
		SigningSecret: secret("signing_secret_env", c.SigningSecretEnv),
		AppToken:      secret("app_token_env", c.AppTokenEnv),
		WebhookSecret: secret("webhook_secret_env", c.WebhookSecretEnv),
		BaseURL:       c.BaseURL, Mode: c.Mode, WebhookURL: c.WebhookURL,
	}
	if err != nil {
		return nil, err
	}
	a, err := f(s, platform.Env{Log: log.With("platform", name), Leases: st, Holder: holder, Cursors: st})
	if err != nil {
		return nil, fmt.Errorf("platforms.%s: %w", name, err)
	}
	return a, nil
}

// hygieneAt is the router's pre-agent safety net: the default share of the window, or off when
// compression is disabled (it fires only when compression is enabled).
func hygieneAt(cfg config.Config) float64 {
	if !cfg.Compression.Enabled {
		return -1
	}
	return 0
}
