package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestFallbacks(t *testing.T) {
	clearEnv(t)
	home := writeHome(t, `provider:
  name: openai
  model: gpt-4o
  base_url: http://127.0.0.1:1/v1
  api_key_env: MAIN_KEY
  fallback_cooldown: 90s
  fallbacks:
    - name: mini
      model: gpt-4o-mini
      context_length: 16000
    - name: claude
      provider: anthropic
      model: claude-haiku-4-5
      base_url: http://127.0.0.1:2
`)
	cfg, err := Load(home)
	if err != nil {
		t.Fatal(err)
	}
	want := []Fallback{
		{Name: "mini", Model: "gpt-4o-mini", ContextLength: 16000},
		{Name: "claude", Provider: "anthropic", Model: "claude-haiku-4-5", BaseURL: "http://127.0.0.1:2"},
	}
	if !reflect.DeepEqual(cfg.Provider.Fallbacks, want) || cfg.Provider.FallbackCooldown != 90*time.Second {
		t.Fatalf("fallbacks = %+v, cooldown %s", cfg.Provider.Fallbacks, cfg.Provider.FallbackCooldown)
	}
	// Same provider: endpoint, key variable and API come from the main model; another provider
	// keeps its own (its usual key variable).
	mini := cfg.Provider.Fallbacks[0].ProviderFor(cfg.Provider)
	if mini.Name != "openai" || mini.BaseURL != "http://127.0.0.1:1/v1" || mini.KeyEnv() != "MAIN_KEY" || mini.ContextLength != 16000 {
		t.Errorf("mini dials %+v", mini)
	}
	cl := cfg.Provider.Fallbacks[1].ProviderFor(cfg.Provider)
	if cl.Name != "anthropic" || cl.BaseURL != "http://127.0.0.1:2" || cl.KeyEnv() != "ANTHROPIC_API_KEY" {
		t.Errorf("claude dials %+v", cl)
	}
	if d := Default("").Provider.FallbackCooldown; d != 5*time.Minute {
		t.Errorf("default cooldown %s", d)
	}
}

func TestFallbackErrors(t *testing.T) {
	head := "provider:\n  name: openai\n  model: gpt-4o\n  fallbacks:\n"
	tests := []struct {
		name, file string
		env        map[string]string
		want       []string
	}{
		{"unknown key", head + "    - name: a\n      model: m\n      modle: x\n", nil, []string{"config.yaml:7", "provider.fallbacks[0].modle", "unknown key"}},
		{"no model", head + "    - name: a\n", nil, []string{"config.yaml:5", "provider.fallbacks[0].model", "needs a model"}},
		{"bad name", head + "    - name: a b\n      model: m\n", nil, []string{"config.yaml:5", "provider.fallbacks[0].name", "not a fallback name"}},
		{"duplicate", head + "    - name: a\n      model: m\n    - name: a\n      model: n\n", nil, []string{"config.yaml:7", "provider.fallbacks[1].name", "unique"}},
		{"bad provider", head + "    - name: a\n      model: m\n      provider: gemini\n", nil, []string{"config.yaml:7", "provider.fallbacks[0].provider", "not one of"}},
		{"bad api", head + "    - name: a\n      model: m\n      api: assistants\n", nil, []string{"config.yaml:7", "provider.fallbacks[0].api"}},
		{"responses on anthropic", head + "    - name: a\n      provider: anthropic\n      model: m\n      api: responses\n", nil, []string{"config.yaml:8", "provider.fallbacks[0].api", "OpenAI"}},
		{"small window", head + "    - name: a\n      model: m\n      context_length: 100\n", nil, []string{"config.yaml:7", "provider.fallbacks[0].context_length", "too small"}},
		{"bad url", head + "    - name: a\n      model: m\n      base_url: ftp://x\n", nil, []string{"config.yaml:7", "provider.fallbacks[0].base_url", "http://"}},
		{"offline main", "provider:\n  fallbacks:\n    - name: a\n      model: m\n", nil, []string{"config.yaml:3", "provider.fallbacks[0].provider", "needs a provider"}},
		{"not a list", head + "    x\n", nil, []string{"config.yaml:5", "provider.fallbacks", "must be a list"}},
		{"zero cooldown", "provider:\n  fallback_cooldown: 0s\n", nil, []string{"config.yaml:2", "provider.fallback_cooldown", "too small"}},
		{"env var for the list", "", map[string]string{"SPOOL_PROVIDER_FALLBACKS": "x"}, []string{"SPOOL_PROVIDER_FALLBACKS", "config file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := Load(writeHome(t, tc.file))
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
		})
	}
}
