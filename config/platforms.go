package config

import (
	"fmt"
	"regexp"
	"strings"
)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Platforms are the chat platforms spool serve connects (section platforms:). A platform is on
// when its token_env is set.
type Platforms struct {
	Telegram Platform `yaml:"telegram"`
	Slack    Platform `yaml:"slack"`
	Discord  Platform `yaml:"discord"`
	// Profile names the session keys' namespace ("" or default: agent:main).
	Profile string `yaml:"profile"`
	// Principal owns the platform sessions (their user_id; "" is the local principal).
	Principal string `yaml:"principal"`
}

// Platform is one chat platform's settings. Secrets are named by environment variable, never
// written in the file.
type Platform struct {
	TokenEnv         string `yaml:"token_env"`
	SigningSecretEnv string `yaml:"signing_secret_env"` // Slack
	AppTokenEnv      string `yaml:"app_token_env"`      // Slack Socket Mode
	WebhookSecretEnv string `yaml:"webhook_secret_env"` // Telegram webhook mode
	// WebhookURL is the public URL a webhook-mode adapter registers (Telegram setWebhook).
	WebhookURL string `yaml:"webhook_url"`
	// BaseURL is the platform API's base; "" is the platform's own.
	BaseURL string `yaml:"base_url"`
	// Mode is the intake: Telegram polling (default) | webhook; Slack events | socket.
	Mode string `yaml:"mode" enum:",polling,webhook,events,socket"`
	// Busy is what a message during a running turn of its chat does: queue (default) or
	// interrupt.
	Busy string `yaml:"busy" enum:",queue,interrupt"`
	// GroupPerUser gives each user of a plain group their own session (default true);
	// ThreadPerUser each user of a thread (default false: threads are shared).
	GroupPerUser  bool `yaml:"group_per_user"`
	ThreadPerUser bool `yaml:"thread_per_user"`
}

// Enabled reports whether the platform is configured.
func (p Platform) Enabled() bool { return p.TokenEnv != "" }

// Each calls fn for every platform, by name, in a fixed order.
func (p Platforms) Each(fn func(name string, c Platform)) {
	fn("telegram", p.Telegram)
	fn("slack", p.Slack)
	fn("discord", p.Discord)
}

var platformModes = map[string][]string{"telegram": {"", "polling", "webhook"}, "slack": {"", "events", "socket"}, "discord": {""}}

func (c *Config) validatePlatforms(sources map[string]string) error {
	var err error
	c.Platforms.Each(func(name string, p Platform) {
		if err != nil {
			return
		}
		key := "platforms." + name
		bad := func(field, format string, args ...any) {
			err = &Error{Source: sources[key+"."+field], Key: key + "." + field, Reason: fmt.Sprintf(format, args...)}
		}
		if !contains(platformModes[name], p.Mode) {
			bad("mode", "%q is not a mode of %s (want %s)", p.Mode, name, strings.Join(platformModes[name][1:], " or "))
			return
		}
		for _, f := range []struct{ field, v string }{{"token_env", p.TokenEnv}, {"signing_secret_env", p.SigningSecretEnv}, {"app_token_env", p.AppTokenEnv}, {"webhook_secret_env", p.WebhookSecretEnv}} {
			if f.v != "" && !envName.MatchString(f.v) {
				bad(f.field, "is not an environment variable name: name the variable that holds the secret, never the secret itself (the value is not shown)")
				return
			}
		}
		if p.BaseURL != "" && !strings.HasPrefix(p.BaseURL, "http://") && !strings.HasPrefix(p.BaseURL, "https://") {
			bad("base_url", "%q must start with http:// or https://", p.BaseURL)
			return
		}
		if name == "telegram" && p.Mode == "webhook" && p.Enabled() && (p.WebhookURL == "" || p.WebhookSecretEnv == "") {
			bad("mode", "webhook mode needs platforms.telegram.webhook_url and webhook_secret_env")
		}
	})
	return err
}
