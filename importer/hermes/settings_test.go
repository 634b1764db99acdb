package hermes_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spoolhq/spool/config"
	"github.com/spoolhq/spool/importer/hermes"
	"github.com/spoolhq/spool/tools"
)

// writeFiles writes name → content under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func hasSkip(rep hermes.Report, kind, id string) bool {
	return slices.ContainsFunc(rep.Skipped, func(s hermes.Skip) bool { return s.Kind == kind && strings.HasPrefix(s.ID, id) })
}

// TestImportMemoryAndConfig: the reference's memory files join spool's (what spool holds stays,
// nothing twice), its model and compression settings land in spool's config where spool does
// not set them, and every key it cannot map is listed.
func TestImportMemoryAndConfig(t *testing.T) {
	t.Parallel()
	const hermesConfig = "model:\n  default: anthropic/claude-sonnet-4\n  provider: openrouter\n  api_key: sk-secret\n" +
		"compression:\n  threshold: 0.6\n  summary_model: gemini-flash\n" +
		"terminal:\n  backend: docker\n"
	for _, tc := range []struct {
		name        string
		spool       map[string]string // files in the spool home before the import
		wantMemory  []string          // entries of spool's MEMORY.md after it
		wantUser    []string
		wantAdded   map[string]int
		wantConfig  map[string]string // config keys after it (Load)
		wantApplied int
		wantSkips   [][2]string // kind, ID prefix
	}{{
		name:       "fresh spool home",
		wantMemory: []string{"The repo uses make, not go build.", "Deploys go through CI only."},
		wantUser:   []string{"Name: Ada. Prefers short answers."},
		wantAdded:  map[string]int{"MEMORY.md": 2, "USER.md": 1},
		wantConfig: map[string]string{"name": "openai", "model": "anthropic/claude-sonnet-4",
			"base_url": "https://openrouter.ai/api/v1", "key": "OPENROUTER_API_KEY", "threshold": "0.6"},
		wantApplied: 5,
		wantSkips: [][2]string{{"config", "model.api_key"}, {"config", "compression.summary_model"},
			{"config", "terminal"}},
	}, {
		name: "spool already has memory and a provider",
		spool: map[string]string{
			"memories/MEMORY.md": "Deploys go through CI only.\n§\nspool's own fact.\n",
			"config.yaml":        "# mine\nprovider:\n  name: anthropic\n  model: claude-haiku-4-5\n",
		},
		wantMemory: []string{"Deploys go through CI only.", "spool's own fact.", "The repo uses make, not go build."},
		wantUser:   []string{"Name: Ada. Prefers short answers."},
		wantAdded:  map[string]int{"MEMORY.md": 1, "USER.md": 1},
		wantConfig: map[string]string{"name": "anthropic", "model": "claude-haiku-4-5", "base_url": "", "key": "",
			"threshold": "0.6"},
		wantApplied: 1,
		wantSkips:   [][2]string{{"config", "provider.name"}, {"config", "model.api_key"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src, home := t.TempDir(), t.TempDir()
			writeFiles(t, src, map[string]string{
				"memories/MEMORY.md": "The repo uses make, not go build.\n§\nDeploys go through CI only.\n",
				"memories/USER.md":   "Name: Ada. Prefers short answers.\n",
				"config.yaml":        hermesConfig,
			})
			writeFiles(t, home, tc.spool)
			rep, err := hermes.Import(bg, openStore(t), src, hermes.Options{SpoolHome: home})
			if err != nil {
				t.Fatal(err)
			}
			for file, want := range map[string][]string{"MEMORY.md": tc.wantMemory, "USER.md": tc.wantUser} {
				data, err := os.ReadFile(filepath.Join(home, "memories", file))
				if err != nil {
					t.Fatal(err)
				}
				if got := tools.SplitMemory(string(data)); !slices.Equal(got, want) {
					t.Errorf("%s = %q, want %q", file, got, want)
				}
				if rep.Memory[file] != tc.wantAdded[file] {
					t.Errorf("report: %d %s entries added, want %d", rep.Memory[file], file, tc.wantAdded[file])
				}
			}
			cfg, err := config.Load(home)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{"name": cfg.Provider.Name, "model": cfg.Provider.Model, "base_url": cfg.Provider.BaseURL,
				"key": cfg.Provider.APIKeyEnv, "threshold": strconv.FormatFloat(cfg.Compression.Threshold, 'g', -1, 64)}
			for k, want := range tc.wantConfig {
				if got[k] != want {
					t.Errorf("config %s = %q, want %q", k, got[k], want)
				}
			}
			if len(rep.Config) != tc.wantApplied {
				t.Errorf("settings taken: %q, want %d", rep.Config, tc.wantApplied)
			}
			for _, s := range tc.wantSkips {
				if !hasSkip(rep, s[0], s[1]) {
					t.Errorf("no %s skip for %s in %+v", s[0], s[1], rep.Skipped)
				}
			}
			body, err := os.ReadFile(filepath.Join(home, config.FileName))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(body), "sk-secret") {
				t.Errorf("the API key was copied into spool's config:\n%s", body)
			}
			if tc.spool["config.yaml"] != "" && !strings.HasPrefix(string(body), "# mine") {
				t.Errorf("spool's config lost its comment:\n%s", body)
			}
			// A second import adds nothing and changes nothing.
			again, err := hermes.Import(bg, openStore(t), src, hermes.Options{SpoolHome: home})
			if err != nil {
				t.Fatal(err)
			}
			after, _ := os.ReadFile(filepath.Join(home, config.FileName))
			if again.Memory["MEMORY.md"]+again.Memory["USER.md"] != 0 || len(again.Config) != 0 || string(after) != string(body) {
				t.Errorf("second import: memory %v, config %q; config changed: %v", again.Memory, again.Config, string(after) != string(body))
			}
		})
	}
}
