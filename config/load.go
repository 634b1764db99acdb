package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/spoolhq/spool/internal/regfile"
)

// HomeEnv names the variable that sets the spool home when no explicit home is given.
const HomeEnv = "SPOOL_HOME"

// Error is a configuration problem: which key, where it came from, and why.
type Error struct {
	Source string // "path/config.yaml:12", "SPOOL_X", or "" when not tied to one place
	Key    string // dotted key, "" for a file-level problem
	Reason string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	if e.Source != "" {
		b.WriteString(e.Source)
		b.WriteString(": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// ResolveHome returns home, else $SPOOL_HOME, else ~/.spool, as an absolute path.
func ResolveHome(home string) (string, error) {
	if home == "" {
		home = os.Getenv(HomeEnv)
	}
	if home == "" {
		dir, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("config: cannot find the home directory (set %s): %w", HomeEnv, err)
		}
		home = filepath.Join(dir, ".spool")
	}
	home, err := expandTilde(home)
	if err != nil {
		return "", err
	}
	return filepath.Abs(home)
}

// Load reads the configuration for home ("" means $SPOOL_HOME or ~/.spool): defaults, then
// home/config.yaml when it exists, then SPOOL_* environment variables. Paths in the result are
// absolute. The home directory is not created. A config.yaml that is not a regular file (a
// directory, a named pipe, a device) is an error, found without blocking on it.
func Load(home string) (Config, error) {
	home, err := ResolveHome(home)
	if err != nil {
		return Config{}, err
	}
	cfg := Default(home)
	file := filepath.Join(home, FileName)
	sources := map[string]string{}
	data, err := regfile.ReadFile(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return Config{}, &Error{Source: file, Reason: err.Error()}
	default:
		if err := decodeFile(&cfg, file, data, sources); err != nil {
			return Config{}, err
		}
		cfg.File = file
	}
	if err := applyEnv(&cfg, os.Environ(), sources); err != nil {
		return Config{}, err
	}
	if err := cfg.validate(sources); err != nil {
		return Config{}, err
	}
	if cfg.Database.Path, err = expandTilde(cfg.Database.Path); err != nil {
		return Config{}, err
	}
	if !filepath.IsAbs(cfg.Database.Path) {
		cfg.Database.Path = filepath.Join(home, cfg.Database.Path)
	}
	return cfg, nil
}

func expandTilde(p string) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p, nil
	}
	dir, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("config: expand %q: %w", p, err)
	}
	return filepath.Join(dir, p[1:]), nil
}

var yamlLineRe = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func decodeFile(cfg *Config, file string, data []byte, sources map[string]string) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := strings.SplitN(err.Error(), "\n", 2)[0]
		if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
			return &Error{Source: file + ":" + m[1], Reason: "invalid YAML: " + m[2]}
		}
		return &Error{Source: file, Reason: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil
	}
	w := walker{file: file, sources: sources}
	return w.node(reflect.ValueOf(cfg).Elem(), root, "")
}

type walker struct {
	file    string
	sources map[string]string
}

func (w walker) at(n *yaml.Node) string { return fmt.Sprintf("%s:%d", w.file, n.Line) }

// node decodes n into v, which is the value of key (dotted, "" for the root).
func (w walker) node(v reflect.Value, n *yaml.Node, key string) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch {
	case v.Kind() == reflect.Struct && v.Type() != durationType:
		if n.Kind != yaml.MappingNode {
			if key == "" {
				return &Error{Source: w.at(n), Reason: "the file must be a mapping of keys"}
			}
			return &Error{Source: w.at(n), Key: key, Reason: "must be a mapping of keys"}
		}
		fields := structFields(v.Type())
		seen := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			full := joinKey(key, k.Value)
			if first, dup := seen[k.Value]; dup {
				return &Error{Source: w.at(k), Key: full, Reason: fmt.Sprintf("appears twice (first on line %d): keep one", first.Line)}
			}
			seen[k.Value] = k
			idx, ok := fields[k.Value]
			if !ok {
				return &Error{Source: w.at(k), Key: full, Reason: "unknown key" + suggest(full)}
			}
			if err := w.node(v.Field(idx), val, full); err != nil {
				return err
			}
		}
		return nil
	case v.Kind() == reflect.Slice:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return nil
		}
		if n.Kind != yaml.SequenceNode {
			return &Error{Source: w.at(n), Key: key, Reason: "must be a list"}
		}
		list := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, el := range n.Content {
			if err := w.node(list.Index(i), el, fmt.Sprintf("%s[%d]", key, i)); err != nil {
				return err
			}
		}
		v.Set(list)
		w.sources[key] = w.at(n)
		return nil
	case v.Kind() == reflect.Map:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return nil
		}
		if n.Kind != yaml.MappingNode {
			return &Error{Source: w.at(n), Key: key, Reason: "must be a mapping"}
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		seen := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			full := key + "." + k.Value
			if first, dup := seen[k.Value]; dup {
				return &Error{Source: w.at(k), Key: full, Reason: fmt.Sprintf("appears twice (first on line %d): keep one", first.Line)}
			}
			seen[k.Value] = k
			if val.Kind != yaml.ScalarNode {
				return &Error{Source: w.at(val), Key: full, Reason: "must be a single value"}
			}
			elem := reflect.New(v.Type().Elem()).Elem()
			if err := setScalar(elem, val.Value); err != nil {
				return &Error{Source: w.at(val), Key: full, Reason: err.Error()}
			}
			v.SetMapIndex(reflect.ValueOf(k.Value), elem)
			w.sources[full] = w.at(val)
		}
		w.sources[key] = w.at(n)
		return nil
	default:
		if n.Kind != yaml.ScalarNode {
			return &Error{Source: w.at(n), Key: key, Reason: "must be a single value, not a list or mapping"}
		}
		if n.Tag == "!!null" {
			return &Error{Source: w.at(n), Key: key, Reason: "has no value (delete the line to use the default)"}
		}
		if err := setScalar(v, n.Value); err != nil {
			return &Error{Source: w.at(n), Key: key, Reason: err.Error()}
		}
		w.sources[key] = w.at(n)
		return nil
	}
}

func joinKey(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

var durationType = reflect.TypeOf(time.Duration(0))

// structFields maps YAML key names to field indexes.
func structFields(t reflect.Type) map[string]int {
	m := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		name := yamlName(t.Field(i))
		if name != "" {
			m[name] = i
		}
	}
	return m
}

func yamlName(f reflect.StructField) string {
	tag := f.Tag.Get("yaml")
	if tag == "-" || !f.IsExported() {
		return ""
	}
	if tag == "" {
		return strings.ToLower(f.Name)
	}
	return strings.Split(tag, ",")[0]
}

// setScalar parses s into v by v's type.
func setScalar(v reflect.Value, s string) error {
	s = strings.TrimSpace(s)
	switch {
	case v.Type() == durationType:
		d, err := ParseDuration(s)
		if err != nil {
			return err
		}
		v.SetInt(int64(d))
	case v.Kind() == reflect.String:
		v.SetString(s)
	case v.Kind() == reflect.Bool:
		switch strings.ToLower(s) {
		case "true", "yes", "on", "1":
			v.SetBool(true)
		case "false", "no", "off", "0":
			v.SetBool(false)
		default:
			return fmt.Errorf("%q is not a boolean (want true or false)", s)
		}
	case v.Kind() == reflect.Int:
		n, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a whole number", s)
		}
		v.SetInt(n)
	case v.Kind() == reflect.Float64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", s)
		}
		v.SetFloat(f)
	default:
		return fmt.Errorf("unsupported type %s", v.Type())
	}
	return nil
}

// ParseDuration accepts Go durations ("90s", "1h30m") and a number of days ("30d"). A bare
// number has no unit and is refused ("5" could mean seconds or minutes), except 0.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty duration")
	}
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		switch {
		case n < 0:
			return 0, fmt.Errorf("%q is negative", s)
		case n == 0:
			return 0, nil
		}
		return 0, fmt.Errorf("%q has no unit: write %ss or %sm (units: s, m, h, d)", s, s, s)
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a duration (examples: 30d, 12h, 90m, 45s)", s)
		}
		return time.Duration(n * 24 * float64(time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration (examples: 30d, 12h, 90m, 45s)", s)
	}
	return d, nil
}

// leaf is one settable key, for environment lookup and validation.
type leaf struct {
	key   string
	field reflect.StructField
	value reflect.Value
}

func leaves(v reflect.Value, prefix string) []leaf {
	var out []leaf
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := yamlName(f)
		if name == "" {
			continue
		}
		key := joinKey(prefix, name)
		fv := v.Field(i)
		if fv.Kind() == reflect.Struct && f.Type != durationType {
			out = append(out, leaves(fv, key)...)
			continue
		}
		out = append(out, leaf{key: key, field: f, value: fv})
	}
	return out
}

// Keys lists every configuration key, sorted.
func Keys() []string {
	cfg := Default("")
	var keys []string
	for _, l := range leaves(reflect.ValueOf(&cfg).Elem(), "") {
		keys = append(keys, l.key)
	}
	sort.Strings(keys)
	return keys
}

// EnvName is the environment variable that overrides key.
func EnvName(key string) string {
	return "SPOOL_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// nonConfigEnv are SPOOL_* variables spool reads that are not configuration keys.
var nonConfigEnv = []string{HomeEnv, "SPOOL_HOST_ID", "SPOOL_DUMPABLE", "SPOOL_CHROMIUM", "SPOOL_SCREENSHOTS", "SPOOL_RECORD_DIR"}

// otherEnv reports whether a SPOOL_* variable is one spool reads outside the configuration, or
// one its tests and benchmarks use (SPOOL_TEST_*, SPOOL_BENCH_*, SPOOL_..._TEST_...).
func otherEnv(name string) bool {
	return slices.Contains(nonConfigEnv, name) || strings.HasPrefix(name, "SPOOL_TEST_") ||
		strings.HasPrefix(name, "SPOOL_BENCH_") || strings.Contains(name, "_TEST_") || strings.HasSuffix(name, "_TEST")
}

// applyEnv applies SPOOL_* overrides from environ ("K=V" pairs). A map key takes
// "name=value,name=value". A variable that names no key but starts like a config section
// (SPOOL_LEASES_...) or is a few letters from a key's name (SPOOL_COMPRESION_THRESHOLD) is a
// typo: it is ignored with a warning in cfg.Warnings that names the closest key. Other SPOOL_*
// variables are left alone: SPOOL_HOME and the like (otherEnv), and other tools share the prefix.
func applyEnv(cfg *Config, environ []string, sources map[string]string) error {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "SPOOL_") {
			env[k] = v
		}
	}
	known := map[string]bool{}
	for _, l := range leaves(reflect.ValueOf(cfg).Elem(), "") {
		known[EnvName(l.key)] = true
	}
	sections := structFields(reflect.TypeOf(*cfg))
	for _, name := range sortedEnv(env) {
		if known[name] || otherEnv(name) {
			continue
		}
		key := strings.ToLower(strings.TrimPrefix(name, "SPOOL_"))
		hint := suggestEnv(key)
		inSection := false
		for section := range sections {
			inSection = inSection || strings.HasPrefix(name, EnvName(section)+"_")
		}
		if inSection || hint != "" {
			cfg.Warnings = append(cfg.Warnings, fmt.Sprintf("%s names no setting and is ignored%s", name, hint))
		}
	}
	for _, l := range leaves(reflect.ValueOf(cfg).Elem(), "") {
		name := EnvName(l.key)
		s, ok := env[name]
		if !ok {
			continue
		}
		if l.value.Kind() == reflect.Slice {
			return &Error{Source: name, Key: l.key, Reason: "is a list: set it in the config file"}
		}
		if l.value.Kind() == reflect.Map {
			m := reflect.MakeMap(l.value.Type())
			for _, part := range strings.Split(s, ",") {
				if strings.TrimSpace(part) == "" {
					continue
				}
				k, val, ok := strings.Cut(part, "=")
				if !ok {
					return &Error{Source: name, Key: l.key, Reason: fmt.Sprintf("%q is not name=value", part)}
				}
				elem := reflect.New(l.value.Type().Elem()).Elem()
				if err := setScalar(elem, val); err != nil {
					return &Error{Source: name, Key: l.key + "." + strings.TrimSpace(k), Reason: err.Error()}
				}
				m.SetMapIndex(reflect.ValueOf(strings.TrimSpace(k)), elem)
			}
			l.value.Set(m)
			sources[l.key] = name
			continue
		}
		if err := setScalar(l.value, s); err != nil {
			return &Error{Source: name, Key: l.key, Reason: err.Error()}
		}
		sources[l.key] = name
	}
	return nil
}

// validate checks enum, range and min tags, then cross-field rules.
func (c *Config) validate(sources map[string]string) error {
	bad := func(key, format string, args ...any) error {
		return &Error{Source: sources[key], Key: key, Reason: fmt.Sprintf(format, args...)}
	}
	for _, l := range leaves(reflect.ValueOf(c).Elem(), "") {
		if enum, ok := l.field.Tag.Lookup("enum"); ok {
			allowed := strings.Split(enum, ",")
			s := l.value.String()
			if !contains(allowed, s) {
				return bad(l.key, "%q is not one of %s", s, describeEnum(allowed))
			}
		}
		if r, ok := l.field.Tag.Lookup("range"); ok {
			lo, hi := parseRange(r)
			check := func(key string, f float64) error {
				if !(f > lo && f <= hi) {
					return bad(key, "%v is out of range (want more than %v, at most %v)", f, lo, hi)
				}
				return nil
			}
			if l.value.Kind() == reflect.Map {
				iter := l.value.MapRange()
				for iter.Next() {
					key := l.key + "." + iter.Key().String()
					if _, ok := sources[key]; !ok {
						sources[key] = sources[l.key]
					}
					if err := check(key, iter.Value().Float()); err != nil {
						return err
					}
				}
			} else if err := check(l.key, l.value.Float()); err != nil {
				return err
			}
		}
		if m, ok := l.field.Tag.Lookup("min"); ok {
			lo, _ := strconv.ParseInt(m, 10, 64)
			if n := l.value.Int(); n < lo {
				if l.value.Type() == durationType {
					return bad(l.key, "%s is too small (want a positive duration)", time.Duration(n))
				}
				return bad(l.key, "%d is too small (want at least %d)", n, lo)
			}
		}
	}
	if c.Database.Path == "" {
		return bad("database.path", "is empty")
	}
	if u := c.Database.URL; u != "" && !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		return bad("database.url", "must start with postgres:// or postgresql:// (the SQLite file is database.path)")
	}
	if c.Leases.RenewEvery >= c.Leases.TTL {
		if _, set := sources["leases.renew_every"]; !set {
			// Only the TTL was set: it is the setting to name.
			return bad("leases.ttl", "%s is not longer than leases.renew_every (%s by default): use a ttl of more than %s, or set leases.renew_every below it too (a third of the ttl is usual)",
				c.Leases.TTL, c.Leases.RenewEvery, c.Leases.RenewEvery)
		}
		return bad("leases.renew_every", "%s must be shorter than leases.ttl (%s)", c.Leases.RenewEvery, c.Leases.TTL)
	}
	if aux := c.Auxiliary.Compression; aux.Model == "" && aux.hasOwnClient(c.Provider) {
		key := "auxiliary.compression.provider"
		if aux.Provider == "" {
			key = "auxiliary.compression.base_url"
		}
		return bad(key, "needs auxiliary.compression.model: the main model's name means nothing to another endpoint")
	}
	if err := c.validateFallbacks(sources); err != nil {
		return err
	}
	if err := c.validatePlatforms(sources); err != nil {
		return err
	}
	return c.validateMCP(sources)
}

var fallbackName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,40}$`)

// validateFallbacks checks each fallback model: a unique name, a model, a known provider and API.
func (c *Config) validateFallbacks(sources map[string]string) error {
	seen := map[string]int{}
	for i, f := range c.Provider.Fallbacks {
		key := fmt.Sprintf("provider.fallbacks[%d]", i)
		bad := func(field, format string, args ...any) error {
			src, ok := sources[key+"."+field]
			if !ok {
				src = sources["provider.fallbacks"]
			}
			return &Error{Source: src, Key: key + "." + field, Reason: fmt.Sprintf(format, args...)}
		}
		p := f.ProviderFor(c.Provider)
		switch {
		case !fallbackName.MatchString(f.Name):
			return bad("name", "%q is not a fallback name (want 1-40 letters, digits, '.', '_' or '-')", f.Name)
		case f.Name == "main":
			return bad("name", `"main" names the main model: pick another name`)
		case strings.TrimSpace(f.Model) == "":
			return bad("model", "fallback %s needs a model", f.Name)
		case !contains([]string{"openai", "anthropic", "fake"}, p.Name):
			if f.Provider == "" {
				return bad("provider", "fallback %s needs a provider (openai, anthropic or fake): the main model is the offline one", f.Name)
			}
			return bad("provider", "%q is not one of openai, anthropic, fake", f.Provider)
		case !contains([]string{"", "chat", "responses"}, f.API):
			return bad("api", "%q is not one of chat, responses (or empty)", f.API)
		case p.API == "responses" && p.Name != "openai":
			return bad("api", "fallback %s: api responses is an OpenAI setting", f.Name)
		case f.ContextLength != 0 && f.ContextLength < 1024:
			return bad("context_length", "%d is too small (want at least 1024 tokens, or 0 for the table of known models)", f.ContextLength)
		case f.BaseURL != "" && !strings.HasPrefix(f.BaseURL, "http://") && !strings.HasPrefix(f.BaseURL, "https://"):
			return bad("base_url", "%q must start with http:// or https://", f.BaseURL)
		}
		if j, dup := seen[f.Name]; dup {
			return bad("name", "%q is also the name of provider.fallbacks[%d]: names must be unique", f.Name, j)
		}
		seen[f.Name] = i
	}
	return nil
}

var mcpServerName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// validateMCP checks each MCP server: a unique, tool-name-safe name and exactly one transport.
func (c *Config) validateMCP(sources map[string]string) error {
	seen := map[string]int{}
	for i, s := range c.MCP.Servers {
		key := fmt.Sprintf("mcp.servers[%d]", i)
		at := func(field string) string {
			if src, ok := sources[key+"."+field]; ok {
				return src
			}
			return sources["mcp.servers"]
		}
		bad := func(field, format string, args ...any) error {
			return &Error{Source: at(field), Key: key + "." + field, Reason: fmt.Sprintf(format, args...)}
		}
		if !mcpServerName.MatchString(s.Name) {
			return bad("name", "%q is not a server name (want 1-32 letters, digits, '_' or '-'; it becomes part of tool names)", s.Name)
		}
		if j, dup := seen[s.Name]; dup {
			return bad("name", "%q is also the name of mcp.servers[%d]: names must be unique", s.Name, j)
		}
		seen[s.Name] = i
		switch {
		case len(s.Command) == 0 && s.URL == "":
			return bad("command", "server %s needs a command (argv list) or a url", s.Name)
		case len(s.Command) > 0 && s.URL != "":
			return bad("url", "server %s has both a command and a url: keep one", s.Name)
		case len(s.Command) > 0 && strings.TrimSpace(s.Command[0]) == "":
			return bad("command", "server %s: the program (first item) is empty", s.Name)
		case s.URL != "" && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://"):
			return bad("url", "%q must start with http:// or https:// (a streamable HTTP endpoint)", s.URL)
		case s.URL != "" && len(s.Env) > 0:
			return bad("env", "server %s: env applies to a command, not a url", s.Name)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func describeEnum(allowed []string) string {
	var parts []string
	empty := false
	for _, a := range allowed {
		if a == "" {
			empty = true
			continue
		}
		parts = append(parts, a)
	}
	s := strings.Join(parts, ", ")
	if empty {
		s += " (or empty)"
	}
	return s
}

func parseRange(r string) (lo, hi float64) {
	a, b, _ := strings.Cut(r, ",")
	lo, _ = strconv.ParseFloat(a, 64)
	hi, _ = strconv.ParseFloat(b, 64)
	return lo, hi
}

// suggest names the closest known key when one is near enough to be a typo.
// sortedEnv lists env's names in order.
func sortedEnv(env map[string]string) []string {
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// suggestEnv is suggest for an environment variable name lowered to "section_key" form.
func suggestEnv(lowered string) string {
	best, bestD := "", 4
	for _, k := range Keys() {
		cand := strings.ToLower(strings.TrimPrefix(EnvName(k), "SPOOL_"))
		if d := EditDistance(lowered, cand); d < bestD {
			best, bestD = EnvName(k), d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

func suggest(key string) string {
	best, bestD := "", 4
	for _, k := range Keys() {
		// Sections are candidates too: "databse" should point at "database".
		for cand := k; cand != ""; {
			if d := EditDistance(key, cand); d < bestD {
				best, bestD = cand, d
			}
			i := strings.LastIndexByte(cand, '.')
			if i < 0 {
				break
			}
			cand = cand[:i]
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// EditDistance is the Levenshtein distance between a and b in bytes: the typo measure of the
// did-you-mean hints of the config and the command line.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
