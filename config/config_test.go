package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// writeHome makes a spool home holding config.yaml with body (no file when body is "").
func writeHome(t *testing.T, body string) string {
	t.Helper()
	home := t.TempDir()
	if body != "" {
		if err := os.WriteFile(filepath.Join(home, FileName), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// clearEnv unsets every SPOOL_* variable the test process inherited.
func clearEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "SPOOL_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

func TestDefaults(t *testing.T) {
	clearEnv(t)
	home := writeHome(t, "")
	cfg, err := Load(home)
	if err != nil {
		t.Fatal(err)
	}
	want := Default(home)
	want.Database.Path = filepath.Join(home, "spool.db")
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("Load of an empty home:\n got %+v\nwant %+v", cfg, want)
	}
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"database.synchronous", cfg.Database.Synchronous, "normal"},
		{"database.journal_mode", cfg.Database.JournalMode, "wal"},
		{"database.write_timeout", cfg.Database.WriteTimeout, 60 * time.Second},
		{"compression.enabled", cfg.Compression.Enabled, true},
		{"compression.threshold", cfg.Compression.Threshold, 0.50},
		{"compression.threshold_tokens", cfg.Compression.ThresholdTokens, 256000},
		{"compression.target_ratio", cfg.Compression.TargetRatio, 0.20},
		{"compression.tail_mode", cfg.Compression.TailMode, "lean"},
		{"compression.in_place", cfg.Compression.InPlace, true},
		{"compression.protect_last_n", cfg.Compression.ProtectLastN, 20},
		{"compression.protect_first_n", cfg.Compression.ProtectFirstN, 3},
		{"compression.abort_on_summary_failure", cfg.Compression.AbortOnSummaryFailure, false},
		{"sessions.max_resume_messages", cfg.Sessions.MaxResumeMessages, 20000},
		{"sessions.max_export_messages", cfg.Sessions.MaxExportMessages, 20000},
		{"leases.ttl", cfg.Leases.TTL, 300 * time.Second},
		{"leases.renew_every", cfg.Leases.RenewEvery, 60 * time.Second},
		{"leases.wait", cfg.Leases.Wait, 30 * time.Minute},
		{"provider.name", cfg.Provider.Name, ""},
		{"delegation.max_depth", cfg.Delegation.MaxDepth, 1},
		{"delegation.max_parallel", cfg.Delegation.MaxParallel, 3},
		{"recall.detail", cfg.Recall.Detail, "adaptive"},
		{"file", cfg.File, ""},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestHomeResolution(t *testing.T) {
	clearEnv(t)
	envHome := t.TempDir()
	t.Setenv(HomeEnv, envHome)
	cfg, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Home != envHome {
		t.Errorf("home from %s = %q, want %q", HomeEnv, cfg.Home, envHome)
	}
	flagHome := t.TempDir()
	cfg, err = Load(flagHome)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Home != flagHome || cfg.Database.Path != filepath.Join(flagHome, "spool.db") {
		t.Errorf("explicit home: got home %q db %q, want %q", cfg.Home, cfg.Database.Path, flagHome)
	}
	os.Unsetenv(HomeEnv)
	t.Setenv("HOME", t.TempDir())
	cfg, err = Load("")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(os.Getenv("HOME"), ".spool"); cfg.Home != want {
		t.Errorf("default home = %q, want %q", cfg.Home, want)
	}
}

func TestFileOverrides(t *testing.T) {
	clearEnv(t)
	home := writeHome(t, `
database:
  path: data/s.db
  synchronous: full
  journal_mode: delete
provider:
  name: anthropic
  model: claude-x
  base_url: http://127.0.0.1:9999
compression:
  enabled: false
  threshold: 0.7
  threshold_tokens: 100_000
  target_ratio: 0.3
  tail_mode: legacy
  in_place: no
  protect_last_n: 8
  protect_first_n: 0
  abort_on_summary_failure: true
  model_thresholds:
    gpt-5: 0.8
    "anthropic:claude": 0.6
auxiliary:
  compression:
    model: small
    provider: openai
    timeout: 45s
sessions:
  max_resume_messages: 0
  max_export_messages: 5
leases:
  ttl: 10m
  renew_every: 120s
  wait: 0
delegation:
  max_depth: 2
recall:
  detail: summary
serve:
  listen: 127.0.0.1:9000
  busy_wait: 0
  keys:
    alice: 2bd806c97f0e00af1a1fc3328fa763a9269723c8db8fac4f93af71db186d6e90
`)
	cfg, err := Load(home)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.File != filepath.Join(home, FileName) {
		t.Errorf("File = %q", cfg.File)
	}
	want := Config{
		Home: home,
		File: filepath.Join(home, FileName),
		Database: Database{
			Path:         filepath.Join(home, "data/s.db"),
			Synchronous:  "full",
			JournalMode:  "delete",
			WriteTimeout: time.Minute,
		},
		Provider: Provider{Name: "anthropic", Model: "claude-x", BaseURL: "http://127.0.0.1:9999", FallbackCooldown: 5 * time.Minute},
		Compression: Compression{
			Enabled: false, Threshold: 0.7, ThresholdTokens: 100000, TargetRatio: 0.3, TargetFill: 0.5,
			TailMode: "legacy", InPlace: false, ProtectLastN: 8, ProtectFirstN: 0,
			AbortOnSummaryFailure: true,
			ModelThresholds:       map[string]float64{"gpt-5": 0.8, "anthropic:claude": 0.6},
			Engine:                "local",
		},
		Auxiliary:  Auxiliary{Compression: AuxModel{Model: "small", Provider: "openai", Timeout: 45 * time.Second}},
		Sessions:   Sessions{MaxResumeMessages: 0, MaxExportMessages: 5},
		Leases:     Leases{TTL: 10 * time.Minute, RenewEvery: 2 * time.Minute, Wait: 0},
		Serve:      Default(home).Serve,
		MCP:        Default(home).MCP,
		Delegation: Delegation{MaxDepth: 2, MaxParallel: 3},
		Recall:     Recall{Detail: "summary"},
		Platforms:  Default(home).Platforms,
	}
	want.Serve.Listen, want.Serve.BusyWait = "127.0.0.1:9000", 0
	want.Serve.Keys = map[string]string{"alice": "2bd806c97f0e00af1a1fc3328fa763a9269723c8db8fac4f93af71db186d6e90"}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("got  %+v\nwant %+v", cfg, want)
	}
	if got := cfg.Provider.KeyEnv(); got != "ANTHROPIC_API_KEY" {
		t.Errorf("KeyEnv = %q", got)
	}
}

func TestEnvOverridesFile(t *testing.T) {
	clearEnv(t)
	home := writeHome(t, "compression:\n  threshold: 0.7\n  tail_mode: legacy\nprovider:\n  name: openai\n")
	abs := filepath.Join(t.TempDir(), "elsewhere.db")
	t.Setenv("SPOOL_COMPRESSION_THRESHOLD", "0.9")
	t.Setenv("SPOOL_DATABASE_PATH", abs)
	t.Setenv("SPOOL_LEASES_TTL", "1h")
	t.Setenv("SPOOL_PROVIDER_API_KEY_ENV", "MY_KEY")
	t.Setenv("SPOOL_AUXILIARY_COMPRESSION_MODEL", "tiny")
	t.Setenv("SPOOL_COMPRESSION_MODEL_THRESHOLDS", "a=0.6, b=0.7")
	t.Setenv("SPOOL_UNRELATED_TOOL_SETTING", "whatever") // shared prefix: ignored
	cfg, err := Load(home)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Compression.Threshold != 0.9 {
		t.Errorf("threshold = %v, want env 0.9 over file 0.7", cfg.Compression.Threshold)
	}
	if cfg.Compression.TailMode != "legacy" {
		t.Errorf("tail_mode = %q, want file value legacy", cfg.Compression.TailMode)
	}
	if cfg.Database.Path != abs {
		t.Errorf("database.path = %q, want %q", cfg.Database.Path, abs)
	}
	if cfg.Leases.TTL != time.Hour {
		t.Errorf("leases.ttl = %v", cfg.Leases.TTL)
	}
	if cfg.Provider.KeyEnv() != "MY_KEY" {
		t.Errorf("KeyEnv = %q", cfg.Provider.KeyEnv())
	}
	if cfg.Auxiliary.Compression.Model != "tiny" {
		t.Errorf("auxiliary.compression.model = %q", cfg.Auxiliary.Compression.Model)
	}
	if !reflect.DeepEqual(cfg.Compression.ModelThresholds, map[string]float64{"a": 0.6, "b": 0.7}) {
		t.Errorf("model_thresholds = %v", cfg.Compression.ModelThresholds)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		env  map[string]string
		want []string // substrings of the one-line error
	}{
		{"bad yaml", "database:\n  path: [unclosed\n", nil, []string{"config.yaml:", "invalid YAML"}},
		{"tab indentation", "database:\n\tpath: x\n", nil, []string{"config.yaml:2", "invalid YAML"}},
		{"unknown top key", "databse:\n  path: x\n", nil, []string{"config.yaml:1", "databse", "unknown key", "did you mean database"}},
		{"unknown nested key", "compression:\n  enabled: true\n  treshold: 0.5\n", nil, []string{"config.yaml:3", "compression.treshold", "did you mean compression.threshold"}},
		{"bad float", "compression:\n  threshold: half\n", nil, []string{"config.yaml:2", "compression.threshold", `"half" is not a number`}},
		{"out of range", "compression:\n  threshold: 1.5\n", nil, []string{"config.yaml:2", "compression.threshold", "out of range"}},
		{"bad enum", "database:\n  synchronous: extra\n", nil, []string{"config.yaml:2", "database.synchronous", `"extra" is not one of normal, full`}},
		{"bad engine", "compression:\n  threshold: 0.5\n  engine: server\n", nil, []string{"config.yaml:3", "compression.engine", `"server" is not one of local, provider`}},
		{"bad recall detail", "provider:\n  name: fake\nrecall:\n  detail: full\n", nil, []string{"config.yaml:4", "recall.detail", `"full" is not one of adaptive, summary`}},
		{"env bad recall detail", "", map[string]string{"SPOOL_RECALL_DETAIL": "raw"}, []string{"SPOOL_RECALL_DETAIL", "recall.detail", "raw"}},
		{"database url not postgres", "database:\n  url: mysql://x/y\n", nil, []string{"config.yaml:2", "database.url", "postgres://"}},
		{"bad provider", "provider:\n  name: gemini\n", nil, []string{"config.yaml:2", "provider.name", "gemini"}},
		{"bad bool", "compression:\n  in_place: maybe\n", nil, []string{"config.yaml:2", "compression.in_place", "not a boolean"}},
		{"bad int", "sessions:\n  max_resume_messages: 1.5\n", nil, []string{"config.yaml:2", "sessions.max_resume_messages", "not a whole number"}},
		{"negative int", "compression:\n  protect_last_n: -1\n", nil, []string{"config.yaml:2", "compression.protect_last_n", "too small"}},
		{"bad duration", "leases:\n  ttl: soon\n", nil, []string{"config.yaml:2", "leases.ttl", "not a duration"}},
		{"zero ttl", "leases:\n  ttl: 0s\n", nil, []string{"config.yaml:2", "leases.ttl"}},
		{"renew after ttl", "leases:\n  ttl: 30s\n  renew_every: 60s\n", nil, []string{"config.yaml:3", "leases.renew_every", "shorter than leases.ttl"}},
		{"bad cache ttl", "provider:\n  cache_ttl: 2h\n", nil, []string{"config.yaml:2", "provider.cache_ttl", `"2h" is not one of`}},
		{"side provider without a model", "auxiliary:\n  compression:\n    provider: anthropic\n", nil, []string{"config.yaml:3", "auxiliary.compression.provider", "needs auxiliary.compression.model"}},
		{"side base URL without a model", "auxiliary:\n  compression:\n    base_url: http://127.0.0.1:1/v1\n", nil, []string{"config.yaml:3", "auxiliary.compression.base_url", "needs auxiliary.compression.model"}},
		{"section not mapping", "compression: 0.5\n", nil, []string{"config.yaml:1", "compression", "mapping"}},
		{"list for scalar", "provider:\n  model: [a, b]\n", nil, []string{"config.yaml:2", "provider.model", "single value"}},
		{"null value", "provider:\n  model:\n", nil, []string{"config.yaml:2", "provider.model", "no value"}},
		{"top level list", "- a\n- b\n", nil, []string{"config.yaml:1", "mapping"}},
		{"bad model threshold", "compression:\n  model_thresholds:\n    gpt: 2\n", nil, []string{"config.yaml:3", "compression.model_thresholds.gpt", "out of range"}},
		{"env bad float", "", map[string]string{"SPOOL_COMPRESSION_THRESHOLD": "lots"}, []string{"SPOOL_COMPRESSION_THRESHOLD", "compression.threshold", "not a number"}},
		{"env bad enum", "", map[string]string{"SPOOL_DATABASE_JOURNAL_MODE": "memory"}, []string{"SPOOL_DATABASE_JOURNAL_MODE", "database.journal_mode", "memory"}},
		{"env bad map", "", map[string]string{"SPOOL_COMPRESSION_MODEL_THRESHOLDS": "gpt"}, []string{"SPOOL_COMPRESSION_MODEL_THRESHOLDS", "not name=value"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			home := writeHome(t, tc.file)
			_, err := Load(home)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			if !strings.HasPrefix(msg, "config: ") {
				t.Errorf("error %q lacks the config: prefix", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
		})
	}
}

func TestEmptyAndCommentOnlyFile(t *testing.T) {
	clearEnv(t)
	for _, body := range []string{"\n\n", "# nothing here\n", "---\n"} {
		home := writeHome(t, body)
		cfg, err := Load(home)
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		if cfg.Compression.Threshold != 0.5 {
			t.Errorf("%q: threshold %v", body, cfg.Compression.Threshold)
		}
	}
}

func TestParseDuration(t *testing.T) {
	t.Parallel()
	good := map[string]time.Duration{
		"30d": 30 * 24 * time.Hour, "12h": 12 * time.Hour, "90m": 90 * time.Minute,
		"45s": 45 * time.Second, "0": 0, "1h30m": 90 * time.Minute, "0.5d": 12 * time.Hour,
	}
	for in, want := range good {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "30x", "-5m", "-3", "ten days", "3dd", "300", "5", "1.5"} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) succeeded, want an error", in)
		}
	}
}

func TestKeysAndEnvNames(t *testing.T) {
	t.Parallel()
	keys := Keys()
	for _, want := range []string{"database.path", "compression.model_thresholds", "auxiliary.compression.timeout", "leases.renew_every"} {
		found := false
		for _, k := range keys {
			found = found || k == want
		}
		if !found {
			t.Errorf("Keys() lacks %s", want)
		}
	}
	if got := EnvName("auxiliary.compression.base_url"); got != "SPOOL_AUXILIARY_COMPRESSION_BASE_URL" {
		t.Errorf("EnvName = %q", got)
	}
}

func TestAuxiliaryClient(t *testing.T) {
	t.Parallel()
	main := Provider{Name: "openai", Model: "gpt-4o", BaseURL: "https://openrouter.ai/api/v1", APIKeyEnv: "OPENROUTER_API_KEY"}
	cases := []struct {
		name string
		aux  AuxModel
		own  bool
		want Provider
	}{
		{"model only: the main client", AuxModel{Model: "gpt-4o-mini"}, false, main},
		{"same provider and base URL", AuxModel{Model: "m", Provider: "openai", BaseURL: main.BaseURL}, false, main},
		{"another base URL keeps the main key", AuxModel{Model: "llama", BaseURL: "http://127.0.0.1:11434/v1"}, true,
			Provider{Name: "openai", Model: "llama", BaseURL: "http://127.0.0.1:11434/v1", APIKeyEnv: "OPENROUTER_API_KEY"}},
		{"another provider uses its own key", AuxModel{Model: "claude-haiku", Provider: "anthropic"}, true,
			Provider{Name: "anthropic", Model: "claude-haiku"}},
		{"explicit key variable", AuxModel{Model: "m", Provider: "anthropic", APIKeyEnv: "AUX_KEY"}, true,
			Provider{Name: "anthropic", Model: "m", APIKeyEnv: "AUX_KEY"}},
	}
	for _, c := range cases {
		got, own := c.aux.ClientFor(main)
		if own != c.own || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v (own %v), want %+v (own %v)", c.name, got, own, c.want, c.own)
		}
	}
	if got := (Provider{Name: "anthropic", Model: "claude-haiku"}).KeyEnv(); got != "ANTHROPIC_API_KEY" {
		t.Errorf("anthropic side client reads %s", got)
	}
}

// A key given twice is an error naming the second line (before: the last one silently won).
func TestDuplicateKeys(t *testing.T) {
	clearEnv(t)
	cases := []struct{ name, body, want string }{
		{"top level", "leases:\n  ttl: 10m\nleases:\n  wait: 1m\n", "config.yaml:3: leases: appears twice (first on line 1)"},
		{"nested", "leases:\n  ttl: 10m\n  ttl: 20m\n", "config.yaml:3: leases.ttl: appears twice (first on line 2)"},
		{"map", "compression:\n  model_thresholds:\n    a: 0.5\n    a: 0.6\n", "config.yaml:4: compression.model_thresholds.a: appears twice (first on line 3)"},
	}
	for _, tc := range cases {
		_, err := Load(writeHome(t, tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// A SPOOL_<section>_... variable that names no setting is a typo: ignored with a warning that
// suggests the right name. Variables outside the sections stay quiet.
func TestUnknownEnvWarns(t *testing.T) {
	clearEnv(t)
	t.Setenv("SPOOL_LEASES_TTLL", "1h")
	t.Setenv("SPOOL_UNRELATED_TOOL_SETTING", "x")
	cfg, err := Load(writeHome(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "SPOOL_LEASES_TTLL names no setting") || !strings.Contains(cfg.Warnings[0], "SPOOL_LEASES_TTL?") {
		t.Fatalf("warnings = %q", cfg.Warnings)
	}
	if cfg.Leases.TTL != Default("").Leases.TTL {
		t.Errorf("the misspelt variable was applied: ttl %s", cfg.Leases.TTL)
	}
}

// Only leases.ttl set, below the default renew interval: the message names ttl and its line.
func TestShortTTLAlone(t *testing.T) {
	clearEnv(t)
	_, err := Load(writeHome(t, "# leases\nleases:\n  ttl: 30s\n"))
	if err == nil || !strings.Contains(err.Error(), "config.yaml:3: leases.ttl: 30s is not longer than leases.renew_every") {
		t.Fatalf("ttl alone below renew_every: %v", err)
	}
	_, err = Load(writeHome(t, "leases:\n  ttl: 30s\n  renew_every: 10s\n"))
	if err != nil {
		t.Fatalf("ttl 30s with renew_every 10s: %v", err)
	}
}

// A SPOOL_* variable a few letters from a setting's name is a typo even outside a section
// prefix: it is ignored with one warning naming the setting. Variables spool reads outside the
// configuration, and those of other tools, stay quiet.
func TestMisspeltEnvOutsideASectionWarns(t *testing.T) {
	clearEnv(t)
	t.Setenv("SPOOL_COMPRESION_THRESHOLD", "0.9")
	t.Setenv("SPOOL_UNRELATED_TOOL_SETTING", "x")
	t.Setenv("SPOOL_HOST_ID", "h1")
	t.Setenv("SPOOL_DUMPABLE", "1")
	t.Setenv("SPOOL_CHROMIUM", "/usr/bin/chromium")
	cfg, err := Load(writeHome(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "SPOOL_COMPRESION_THRESHOLD names no setting") ||
		!strings.Contains(cfg.Warnings[0], "did you mean SPOOL_COMPRESSION_THRESHOLD?") {
		t.Fatalf("warnings = %q", cfg.Warnings)
	}
	if cfg.Compression.Threshold != Default("").Compression.Threshold {
		t.Errorf("the misspelt variable was applied: threshold %v", cfg.Compression.Threshold)
	}
}

// A duration without a unit is refused with the key and the spellings to use; 0 needs none.
func TestDurationWithoutUnit(t *testing.T) {
	clearEnv(t)
	_, err := Load(writeHome(t, "leases:\n  ttl: 5\n"))
	if err == nil || !strings.Contains(err.Error(), "leases.ttl") || !strings.Contains(err.Error(), "5s or 5m") {
		t.Fatalf("ttl: 5 loaded with %v; want an error naming leases.ttl and suggesting 5s or 5m", err)
	}
}
