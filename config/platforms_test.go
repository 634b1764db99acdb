package config

import (
	"strings"
	"testing"
)

func TestPlatforms(t *testing.T) {
	clearEnv(t)
	home := writeHome(t, `platforms:
  telegram:
    token_env: TELEGRAM_BOT_TOKEN
    base_url: http://127.0.0.1:9999
    mode: polling
    busy: interrupt
  slack: { token_env: SLACK_BOT_TOKEN, signing_secret_env: SLACK_SIGNING_SECRET, app_token_env: SLACK_APP_TOKEN, base_url: "" }
`)
	cfg, err := Load(home)
	if err != nil {
		t.Fatal(err)
	}
	tg := cfg.Platforms.Telegram
	if !tg.Enabled() || tg.TokenEnv != "TELEGRAM_BOT_TOKEN" || tg.BaseURL != "http://127.0.0.1:9999" || tg.Busy != "interrupt" || !tg.GroupPerUser || tg.ThreadPerUser {
		t.Fatalf("telegram = %+v", tg)
	}
	if !cfg.Platforms.Slack.Enabled() || cfg.Platforms.Discord.Enabled() {
		t.Fatalf("platforms = %+v", cfg.Platforms)
	}
}

func TestPlatformErrors(t *testing.T) {
	tests := []struct {
		name, file string
		want       []string
	}{
		{"unknown key", "platforms:\n  telegram:\n    token: abc\n", []string{"config.yaml:3", "platforms.telegram.token", "unknown key"}},
		{"secret in the file", "platforms:\n  telegram:\n    token_env: \"123:ABC-def\"\n", []string{"config.yaml:3", "platforms.telegram.token_env", "not an environment variable name"}},
		{"bad mode", "platforms:\n  telegram:\n    mode: socket\n", []string{"config.yaml:3", "platforms.telegram.mode", "polling or webhook"}},
		{"bad busy", "platforms:\n  slack:\n    busy: drop\n", []string{"config.yaml:3", "platforms.slack.busy"}},
		{"bad base url", "platforms:\n  discord:\n    base_url: ftp://x\n", []string{"config.yaml:3", "platforms.discord.base_url", "http://"}},
		{"webhook without url", "platforms:\n  telegram:\n    token_env: T\n    mode: webhook\n", []string{"config.yaml:4", "platforms.telegram.mode", "webhook_url"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			_, err := Load(writeHome(t, tc.file))
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || strings.Contains(msg, "123:ABC") {
				t.Errorf("error %q", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
		})
	}
}
