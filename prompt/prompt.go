package prompt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Default size bounds, in characters (runes).
const (
	// DefaultMaxRuleChars bounds the project rule file; larger files keep a 70% head and a 20%
	// tail around a truncation marker.
	DefaultMaxRuleChars = 20_000
	// DefaultMaxMemoryChars bounds each memory file (MEMORY.md, USER.md).
	DefaultMaxMemoryChars = 8_000
)

// Skill is one entry of the skills index.
type Skill struct {
	Name        string
	Description string
}

// Env is everything a build reads. Nothing else (no globals, no clock) goes into the bytes.
type Env struct {
	// Home is $SPOOL_HOME: memories live in Home/memories/{MEMORY.md,USER.md}; an identity in
	// Home/SOUL.md replaces the built-in one. Empty means no home files.
	Home string
	// WorkDir is where the project rule file search starts. Empty means no rule file.
	WorkDir string
	Model   string
	// Provider names the model endpoint ("openai", "anthropic", "fake").
	Provider string
	// Platform is where the session talks to its user ("cli", "api", "telegram", ...).
	Platform string
	// PlatformHint is the configured hint for Platform; it is appended to the built-in hint, or
	// replaces it when ReplacePlatformHint is set.
	PlatformHint        string
	ReplacePlatformHint bool
	SessionID           string
	// StartedAt is the session's start time, never now: it is what keeps rebuilds identical.
	// It is written in UTC at second precision, so a time read back from the store matches.
	StartedAt time.Time
	// SystemMessage is the caller's own system message (context tier).
	SystemMessage string
	// Tools are the names of the tools the session offers; order does not matter.
	Tools []string
	// Skills is the skills index; order does not matter.
	Skills []Skill
	// Notes are lines placed just before the session line, such as the compressor's note after
	// the first compaction. They are inputs like any other: the same notes give the same bytes.
	Notes []string
	// Identity, when set, replaces both Home/SOUL.md and the built-in identity.
	Identity string
	// Custom makes SystemMessage the whole prompt, byte for byte: no identity, no guidance
	// (spool's task, tool, memory, session_search and delegate guidance), no model or platform
	// hint, no rule file, memories, skills or notes. A program embedding the agent sets it to
	// own the agent's voice; it can opt in to spool's guidance by including Guidance's text.
	Custom bool
	// Size bounds; zero means the default.
	MaxRuleChars   int
	MaxMemoryChars int
}

// Prompt is a built (or restored) system prompt.
type Prompt struct {
	Stable   string
	Context  string
	Volatile string
	// RuleFile is the project rule file the context tier used ("" when none).
	RuleFile string
	// restored holds the persisted bytes of a restored prompt, whose tiers are unknown.
	restored *string
}

// Tiers returns the non-empty tiers in wire order. A restored prompt is one opaque tier.
func (p Prompt) Tiers() []string {
	if p.restored != nil {
		return []string{*p.restored}
	}
	var out []string
	for _, t := range []string{p.Stable, p.Context, p.Volatile} {
		if t != "" {
			out = append(out, t)
		}
	}
	return out
}

// Text is the system prompt as sent: the tiers joined by a blank line in the fixed order
// stable, context, volatile. Empty tiers are left out rather than leaving stray blank lines.
func (p Prompt) Text() string { return strings.Join(p.Tiers(), "\n\n") }

// Hash is the lowercase hex sha256 of Text, the key the store persists it under.
func (p Prompt) Hash() string { return Hash(p.Text()) }

// Restored reports whether p came from persisted bytes rather than a build.
func (p Prompt) Restored() bool { return p.restored != nil }

// Hash is the lowercase hex sha256 of a prompt text.
func Hash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// Restore wraps persisted prompt bytes. Nothing is re-read or re-rendered: the text is returned
// exactly as it was stored.
func Restore(text string) Prompt { return Prompt{restored: &text} }

// Build assembles the three tiers from env. It fails only when a file exists but cannot be read.
func Build(env Env) (Prompt, error) {
	if env.Custom {
		return Prompt{Context: env.SystemMessage}, nil
	}
	stable, err := stableTier(env)
	if err != nil {
		return Prompt{}, err
	}
	ctxTier, rule, err := contextTier(env)
	if err != nil {
		return Prompt{}, err
	}
	vol, err := volatileTier(env)
	if err != nil {
		return Prompt{}, err
	}
	return Prompt{Stable: stable, Context: ctxTier, Volatile: vol, RuleFile: rule}, nil
}

// Rebuild builds the prompt again after a compaction. The result's text is byte-identical to
// prev when nothing the build reads changed; changed says whether it differs.
func Rebuild(prev string, env Env) (p Prompt, changed bool, err error) {
	p, err = Build(env)
	if err != nil {
		return Prompt{}, false, err
	}
	if p.Text() == prev {
		return p, false, nil
	}
	return p, true, nil
}

// Persister is the part of store.Backend that keeps frozen prompts.
type Persister interface {
	SetSystemPrompt(ctx context.Context, sessionID, prompt string) (hash string, err error)
	SystemPrompt(ctx context.Context, sessionID string) (string, error)
}

// Load returns the session's frozen prompt: the persisted bytes when there are any, otherwise a
// fresh build of env that is persisted before it is returned. This is the once-per-session path
// an agent takes on every turn.
func Load(ctx context.Context, st Persister, env Env) (Prompt, error) {
	if env.SessionID == "" {
		return Prompt{}, errors.New("load prompt: session id is empty")
	}
	text, err := st.SystemPrompt(ctx, env.SessionID)
	if err != nil {
		return Prompt{}, fmt.Errorf("load prompt of %s: %w", env.SessionID, err)
	}
	if text != "" {
		return Restore(text), nil
	}
	p, err := Build(env)
	if err != nil {
		return Prompt{}, fmt.Errorf("build prompt of %s: %w", env.SessionID, err)
	}
	if _, err := st.SetSystemPrompt(ctx, env.SessionID, p.Text()); err != nil {
		return Prompt{}, fmt.Errorf("persist prompt of %s: %w", env.SessionID, err)
	}
	return p, nil
}

func stableTier(env Env) (string, error) {
	identity := strings.TrimSpace(env.Identity)
	if identity == "" && env.Home != "" {
		soul, err := readBounded(filepath.Join(env.Home, "SOUL.md"), maxOr(env.MaxMemoryChars, DefaultMaxMemoryChars))
		if err != nil {
			return "", err
		}
		identity = soul
	}
	if identity == "" {
		identity = defaultIdentity
	}
	parts := []string{identity, Guidance(env.Tools)}
	if len(env.Skills) > 0 {
		parts = append(parts, skillsGuidance)
	}
	if h := modelHint(env.Model); h != "" {
		parts = append(parts, h)
	}
	if h := platformHint(env); h != "" {
		parts = append(parts, h)
	}
	return strings.Join(parts, "\n\n"), nil
}

func contextTier(env Env) (text, ruleFile string, err error) {
	var parts []string
	if s := strings.TrimSpace(env.SystemMessage); s != "" {
		parts = append(parts, s)
	}
	if env.WorkDir != "" {
		path, err := FindRuleFile(env.WorkDir)
		if err != nil {
			return "", "", err
		}
		if path != "" {
			body, err := readBounded(path, maxOr(env.MaxRuleChars, DefaultMaxRuleChars))
			if err != nil {
				return "", "", err
			}
			if body != "" {
				ruleFile = path
				parts = append(parts, fmt.Sprintf("# Project rules (%s)\n\n%s", displayPath(env.WorkDir, path), body))
			}
		}
	}
	return strings.Join(parts, "\n\n"), ruleFile, nil
}

func volatileTier(env Env) (string, error) {
	var parts []string
	if env.Home != "" {
		limit := maxOr(env.MaxMemoryChars, DefaultMaxMemoryChars)
		for _, f := range []struct{ name, title string }{
			{MemoryFile, "Memory (MEMORY.md, as of session start)"},
			{UserFile, "User profile (USER.md, as of session start)"},
		} {
			body, err := readBounded(filepath.Join(env.Home, "memories", f.name), limit)
			if err != nil {
				return "", err
			}
			if body != "" {
				parts = append(parts, "# "+f.title+"\n\n"+body)
			}
		}
	}
	if len(env.Skills) > 0 {
		skills := slices.Clone(env.Skills)
		slices.SortFunc(skills, func(a, b Skill) int {
			if c := strings.Compare(a.Name, b.Name); c != 0 {
				return c
			}
			return strings.Compare(a.Description, b.Description)
		})
		var b strings.Builder
		b.WriteString("# Skills")
		for _, s := range skills {
			b.WriteString("\n- " + oneLine(s.Name))
			if d := oneLine(s.Description); d != "" {
				b.WriteString(": " + d)
			}
		}
		parts = append(parts, b.String())
	}
	for _, n := range env.Notes {
		if n = strings.TrimSpace(n); n != "" {
			parts = append(parts, n)
		}
	}
	parts = append(parts, sessionLine(env))
	return strings.Join(parts, "\n\n"), nil
}

// sessionLine is the last line of the prompt. Every field is fixed for the session's life.
func sessionLine(env Env) string {
	fields := []string{"Conversation started"}
	if !env.StartedAt.IsZero() {
		fields[0] += ": " + env.StartedAt.UTC().Truncate(time.Second).Format(time.RFC3339)
	}
	add := func(k, v string) {
		if v = oneLine(v); v != "" {
			fields = append(fields, k+" "+v)
		}
	}
	add("session", env.SessionID)
	add("model", env.Model)
	add("provider", env.Provider)
	add("platform", env.Platform)
	add("cwd", env.WorkDir)
	return strings.Join(fields, " | ")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func maxOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func displayPath(workDir, path string) string {
	if rel, err := filepath.Rel(workDir, path); err == nil {
		return filepath.ToSlash(rel)
	}
	return filepath.ToSlash(path)
}

// Guidance is spool's guidance for an agent offering tools (the sorted, deduplicated names),
// as the built prompt states it: finishing the task, using tools, the memory snapshot,
// session_search and delegate when offered. A program that writes its own prompt (Env.Custom)
// may append it.
func Guidance(tools []string) string {
	tools = slices.Clone(tools)
	slices.Sort(tools)
	tools = slices.Compact(tools)
	parts := []string{taskGuidance}
	if len(tools) > 0 {
		parts = append(parts, toolGuidance+"\nAvailable tools: "+strings.Join(tools, ", ")+".")
	}
	has := func(name string) bool { _, ok := slices.BinarySearch(tools, name); return ok }
	if has(ToolEditFile) {
		parts = append(parts, editGuidance)
	}
	if has(ToolMemory) {
		parts = append(parts, memoryToolGuidance)
	} else {
		parts = append(parts, memoryGuidance)
	}
	if has(ToolSessionSearch) {
		parts = append(parts, sessionSearchGuidance)
	}
	if has(ToolDelegate) {
		parts = append(parts, delegateGuidance)
	}
	return strings.Join(parts, "\n\n")
}
