package hermes

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/spoolhq/spool/config"
	"github.com/spoolhq/spool/internal/regfile"
	"github.com/spoolhq/spool/tools"
)

// memoryFiles are the reference's memory files (under memories/) and spool's memory targets.
var memoryFiles = []struct{ file, target string }{{"MEMORY.md", "memory"}, {"USER.md", "user"}}

// settings is what a Hermes home holds besides sessions: its memory files and config.yaml.
type settings struct {
	memory map[string][]string // entries by file name (MEMORY.md, USER.md), for the files present
	config *yaml.Node          // config.yaml's top mapping, nil without one
}

func (s settings) empty() bool { return len(s.memory) == 0 && s.config == nil }

// readSettings reads memories/{MEMORY.md,USER.md} and config.yaml of the Hermes home dir. A file
// that is there but unreadable, or a config.yaml that is not a YAML mapping, is an error.
func readSettings(dir string) (settings, error) {
	s := settings{memory: map[string][]string{}}
	for _, m := range memoryFiles {
		data, err := regfile.ReadFile(filepath.Join(dir, "memories", m.file))
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			return s, fmt.Errorf("memories/%s: %w", m.file, pathErr(err))
		}
		s.memory[m.file] = tools.SplitMemory(string(data))
	}
	data, err := regfile.ReadFile(filepath.Join(dir, "config.yaml"))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return s, nil
	case err != nil:
		return s, fmt.Errorf("config.yaml: %w", pathErr(err))
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return s, fmt.Errorf("config.yaml: %w", err)
	}
	if len(doc.Content) == 0 {
		return s, nil // an empty file
	}
	if doc.Content[0].Kind != yaml.MappingNode {
		return s, errors.New("config.yaml: not a mapping of settings")
	}
	s.config = doc.Content[0]
	return s, nil
}

// importMemory merges the reference's memory entries into spool's memory files of home.
func (s settings) importMemory(home string, rep *Report) error {
	for _, m := range memoryFiles {
		entries, ok := s.memory[m.file]
		if !ok {
			continue
		}
		got, err := tools.MergeMemory(home, m.target, entries)
		if err != nil {
			return err
		}
		rep.Memory[m.file] += got.Added
		for _, e := range got.Over {
			rep.Skipped = append(rep.Skipped, Skip{Kind: "memory", ID: "memories/" + m.file + ": " + firstLine(e, 60),
				Reason: fmt.Sprintf("spool's %s would go over its %d-character limit", m.file, limitOf(m.target))})
		}
	}
	return nil
}

func limitOf(target string) int {
	if target == "user" {
		return tools.UserCharLimit
	}
	return tools.MemoryCharLimit
}

func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// setting is one spool config key taken from the reference's config.yaml.
type setting struct{ key, value, tag string }

// compressionKeys are the reference's compression.* settings spool reads under the same name
// and meaning.
var compressionKeys = []string{"enabled", "threshold", "threshold_tokens", "target_ratio", "tail_mode",
	"protect_last_n", "protect_first_n", "abort_on_summary_failure", "in_place"}

// mapConfig turns the reference's config.yaml into spool settings; what it cannot map is a Skip.
func mapConfig(top *yaml.Node) ([]setting, []Skip) {
	var out []setting
	var skips []Skip
	for i := 0; i+1 < len(top.Content); i += 2 {
		key, val := top.Content[i].Value, top.Content[i+1]
		switch key {
		case "model":
			p, sk := mapModel(val)
			out, skips = append(out, p...), append(skips, sk...)
		case "compression":
			c, sk := mapCompression(val)
			out, skips = append(out, c...), append(skips, sk...)
		default:
			skips = append(skips, Skip{Kind: "config", ID: key, Reason: "no spool setting of that name"})
		}
	}
	return out, skips
}

// mapModel maps the reference's model setting: a model name, or a mapping of default (the
// model), provider, base_url and api_key.
func mapModel(n *yaml.Node) ([]setting, []Skip) {
	var model, prov, base string
	var skips []Skip
	switch n.Kind {
	case yaml.ScalarNode:
		model = n.Value
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			switch {
			case v.Kind != yaml.ScalarNode:
				skips = append(skips, Skip{Kind: "config", ID: "model." + k, Reason: "not a single value"})
			case k == "default" || k == "model" || k == "name":
				model = v.Value
			case k == "provider":
				prov = v.Value
			case k == "base_url":
				base = v.Value
			case k == "api_key":
				skips = append(skips, Skip{Kind: "config", ID: "model.api_key",
					Reason: "keys are not copied: spool reads them from the variable provider.api_key_env names"})
			default:
				skips = append(skips, Skip{Kind: "config", ID: "model." + k, Reason: "no spool setting of that name"})
			}
		}
	default:
		return nil, []Skip{{Kind: "config", ID: "model", Reason: "neither a model name nor a mapping"}}
	}
	if model == "" {
		return nil, append(skips, Skip{Kind: "config", ID: "model", Reason: "names no model"})
	}
	var name, keyEnv string
	switch strings.ToLower(prov) {
	case "anthropic":
		name = "anthropic"
	case "openai":
		name = "openai"
	case "openrouter":
		name, keyEnv = "openai", "OPENROUTER_API_KEY"
		if base == "" {
			base = "https://openrouter.ai/api/v1"
		}
	case "custom", "", "auto":
		if base == "" {
			return nil, append(skips, Skip{Kind: "config", ID: "model.provider",
				Reason: fmt.Sprintf("provider %q without a base_url: spool needs the provider named (openai, anthropic or an OpenAI-compatible base_url)", prov)})
		}
		name = "openai"
	default:
		return nil, append(skips, Skip{Kind: "config", ID: "model.provider",
			Reason: fmt.Sprintf("provider %q: spool speaks OpenAI-compatible and Anthropic APIs only", prov)})
	}
	out := []setting{{"provider.name", name, strTag}, {"provider.model", model, strTag}}
	if base != "" {
		out = append(out, setting{"provider.base_url", base, strTag})
	}
	if keyEnv != "" {
		out = append(out, setting{"provider.api_key_env", keyEnv, strTag})
	}
	return out, skips
}

func mapCompression(n *yaml.Node) ([]setting, []Skip) {
	if n.Kind != yaml.MappingNode {
		return nil, []Skip{{Kind: "config", ID: "compression", Reason: "not a mapping"}}
	}
	var out []setting
	var skips []Skip
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, n.Content[i+1]
		if v.Kind == yaml.ScalarNode && slices.Contains(compressionKeys, k) {
			out = append(out, setting{"compression." + k, v.Value, v.ShortTag()})
			continue
		}
		skips = append(skips, Skip{Kind: "config", ID: "compression." + k, Reason: "no spool setting of that name"})
	}
	return out, skips
}

// importConfig writes the settings mapped from the reference's config.yaml into spool's config
// file of home, keeping every key that file already sets (and its comments): the provider keys
// are taken together or not at all, so a model never lands on another provider. The result
// must load as a spool config, else the file is left as it was.
func (s settings) importConfig(home string, rep *Report) error {
	if s.config == nil {
		return nil
	}
	sets, skips := mapConfig(s.config)
	rep.Skipped = append(rep.Skipped, skips...)
	if len(sets) == 0 {
		return nil
	}
	path := filepath.Join(home, config.FileName)
	old, err := regfile.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("spool config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(old, &doc); err != nil {
		return fmt.Errorf("spool config %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	}
	top := doc.Content[0]
	var applied []string
	for _, group := range groupSettings(sets) {
		if held := heldKeys(top, group); len(held) > 0 {
			rep.Skipped = append(rep.Skipped, Skip{Kind: "config", ID: strings.Join(keysOf(group), ", "),
				Reason: "spool's config already sets " + strings.Join(held, ", ") + "; kept it"})
			continue
		}
		for _, st := range group {
			setKey(top, st)
			applied = append(applied, st.key+": "+st.value)
		}
	}
	if len(applied) == 0 {
		return nil
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return fmt.Errorf("spool config: %w", err)
	}
	if err := writeFile(path, b.Bytes()); err != nil {
		return err
	}
	if _, err := config.Load(home); err != nil {
		restore := writeFile(path, old)
		if old == nil {
			restore = os.Remove(path)
		}
		return errors.Join(fmt.Errorf("the settings taken from config.yaml do not load (%w); %s is as it was", err, path), restore)
	}
	rep.Config = append(rep.Config, applied...)
	return nil
}

// groupSettings splits sets into the provider keys (one group) and each other key alone.
func groupSettings(sets []setting) [][]setting {
	var prov []setting
	var out [][]setting
	for _, s := range sets {
		if strings.HasPrefix(s.key, "provider.") {
			prov = append(prov, s)
		} else {
			out = append(out, []setting{s})
		}
	}
	if len(prov) > 0 {
		out = append([][]setting{prov}, out...)
	}
	return out
}

func keysOf(group []setting) []string {
	keys := make([]string, len(group))
	for i, s := range group {
		keys[i] = s.key
	}
	return keys
}

// heldKeys are the keys of group's section that top already sets: for the provider, any of
// name, model and base_url (they go together); otherwise the key itself.
func heldKeys(top *yaml.Node, group []setting) []string {
	keys := keysOf(group)
	if strings.HasPrefix(keys[0], "provider.") {
		keys = []string{"provider.name", "provider.model", "provider.base_url"}
	}
	var held []string
	for _, k := range keys {
		section, name, _ := strings.Cut(k, ".")
		if sec := lookup(top, section); sec != nil && sec.Kind == yaml.MappingNode && lookup(sec, name) != nil {
			held = append(held, k)
		}
	}
	return held
}

func lookup(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// strTag is YAML's string tag: a model name such as "qwen3:8b" or "yes" stays a string.
const strTag = "!!str"

// setKey sets st in top, adding its section when it is missing.
func setKey(top *yaml.Node, st setting) {
	section, name, _ := strings.Cut(st.key, ".")
	sec := lookup(top, section)
	if sec == nil || sec.Kind != yaml.MappingNode {
		sec = &yaml.Node{Kind: yaml.MappingNode}
		top.Content = append(top.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: section}, sec)
	}
	v := &yaml.Node{Kind: yaml.ScalarNode, Value: st.value, Tag: st.tag}
	sec.Content = append(sec.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: name}, v)
}

// writeFile replaces path atomically; a new file (and its directory) is private.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("spool config: %w", err)
	}
	if err := tools.WriteAtomic(path, data, 0o600); err != nil {
		return fmt.Errorf("spool config %s: %w", path, err)
	}
	return nil
}
