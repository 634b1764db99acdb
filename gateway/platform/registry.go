package platform

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"

	"github.com/spoolhq/spool/store"
)

// Settings are one platform's configuration as spool serve read it (config platforms.<name>).
// Secrets are read from the environment variables the config names; they are never stored,
// logged or put in an error.
type Settings struct {
	Token         string // from token_env
	SigningSecret string // from signing_secret_env (Slack)
	AppToken      string // from app_token_env (Slack Socket Mode)
	WebhookSecret string // from webhook_secret_env (Telegram webhook mode)
	// BaseURL is the platform API's base ("" = the platform's own); tests point it at a fake.
	BaseURL string
	// Mode is the intake mode: Telegram polling | webhook, Slack events | socket.
	Mode string
	// WebhookURL is the public URL a webhook-mode adapter registers (Telegram setWebhook).
	WebhookURL string
}

// Env is what an adapter gets from spool serve besides its settings.
type Env struct {
	Log *slog.Logger
	// Leases are the store's named leases: a polling adapter holds one per bot so two spool
	// serve processes on one database never both poll it.
	Leases Leases
	// Holder names this process as a lease holder (store.NewHolder().String()).
	Holder string
	// Cursors are the store's read cursors and watermarks: an adapter whose platform does not
	// replay to a new connection (Discord) reads each channel's history after the last message
	// it handed on.
	Cursors Cursors
}

// Cursors are the store's per-channel read cursors and per-bot watermarks.
type Cursors interface {
	AdvanceReadCursor(ctx context.Context, c store.ReadCursor) error
	ReadCursors(ctx context.Context, platform, bot string) ([]store.ReadCursor, error)
	store.Watermarks
}

// Leases are the store's named leases (one holder at a time, for a bot's poller).
type Leases = store.NamedLeaser

// Factory builds an adapter from its settings.
type Factory func(s Settings, env Env) (Adapter, error)

var (
	regMu     sync.Mutex
	factories = map[string]Factory{}
)

// Register makes a platform available to spool serve's config (platforms.<name>); adapter
// packages call it from init. Registering a name twice panics.
func Register(name string, f Factory) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := factories[name]; dup {
		panic(fmt.Sprintf("platform: %s registered twice", name))
	}
	factories[name] = f
}

// Lookup returns the factory of a registered platform.
func Lookup(name string) (Factory, bool) {
	regMu.Lock()
	defer regMu.Unlock()
	f, ok := factories[name]
	return f, ok
}

// Registered lists the registered platforms, sorted.
func Registered() []string {
	regMu.Lock()
	defer regMu.Unlock()
	out := make([]string, 0, len(factories))
	for n := range factories {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
