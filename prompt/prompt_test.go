package prompt

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fixture lays out a home with memories and a git project with a rule file.
func fixture(t *testing.T) Env {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	proj := filepath.Join(root, "proj")
	write(t, filepath.Join(home, "memories", "MEMORY.md"), "- the build uses make\n")
	write(t, filepath.Join(home, "memories", "USER.md"), "Prefers terse answers.\n")
	if err := os.MkdirAll(filepath.Join(proj, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(proj, "SPOOL.md"), "Run go test before committing.\n")
	return Env{
		Home:          home,
		WorkDir:       filepath.Join(proj),
		Model:         "gpt-5",
		Provider:      "openai",
		Platform:      "cli",
		SessionID:     "20261129_154233_a3f9c1",
		StartedAt:     time.Date(2026, 11, 29, 15, 42, 33, 0, time.UTC),
		SystemMessage: "You review Go code.",
		Tools:         []string{"terminal", "session_search", "memory", "read_file"},
		Skills:        []Skill{{Name: "release", Description: "cut a release"}},
	}
}

func TestBuildTiers(t *testing.T) {
	t.Parallel()
	env := fixture(t)
	p, err := Build(env)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Text(), p.Stable+"\n\n"+p.Context+"\n\n"+p.Volatile; got != want {
		t.Fatalf("Text is not the tiers joined in order")
	}
	for _, c := range []struct {
		tier, name, want string
	}{
		{p.Stable, "stable", defaultIdentity},
		{p.Stable, "stable", "Available tools: memory, read_file, session_search, terminal."},
		{p.Stable, "stable", "Use the session_search tool"},
		{p.Stable, "stable", "Use the memory tool"},
		{p.Stable, "stable", "call it; do not describe the call"}, // gpt family hint
		{p.Stable, "stable", builtinPlatformHints["cli"]},
		{p.Context, "context", "You review Go code."},
		{p.Context, "context", "# Project rules (SPOOL.md)\n\nRun go test before committing."},
		{p.Volatile, "volatile", "- the build uses make"},
		{p.Volatile, "volatile", "Prefers terse answers."},
		{p.Volatile, "volatile", "# Skills\n- release: cut a release"},
	} {
		if !strings.Contains(c.tier, c.want) {
			t.Errorf("%s tier lacks %q:\n%s", c.name, c.want, c.tier)
		}
	}
	wantLine := "Conversation started: 2026-11-29T15:42:33Z | session 20261129_154233_a3f9c1 | model gpt-5 | provider openai | platform cli | cwd " + env.WorkDir
	if !strings.HasSuffix(p.Volatile, "\n\n"+wantLine) {
		t.Errorf("volatile tier does not end with the session line %q:\n%s", wantLine, p.Volatile)
	}
	for _, leak := range []string{"MEMORY.md, as of", "Prefers terse", "Conversation started"} {
		if strings.Contains(p.Stable, leak) || strings.Contains(p.Context, leak) {
			t.Errorf("%q leaked out of the volatile tier", leak)
		}
	}
	if p.RuleFile != filepath.Join(env.WorkDir, "SPOOL.md") {
		t.Errorf("RuleFile = %q", p.RuleFile)
	}
	if p.Hash() != Hash(p.Text()) || len(p.Hash()) != 64 {
		t.Errorf("Hash = %q", p.Hash())
	}
}

func TestBuildIsDeterministic(t *testing.T) {
	t.Parallel()
	env := fixture(t)
	base, err := Build(env)
	if err != nil {
		t.Fatal(err)
	}
	same := []struct {
		name string
		edit func(*Env)
	}{
		{"tools reordered and repeated", func(e *Env) { e.Tools = []string{"read_file", "memory", "terminal", "session_search", "memory"} }},
		{"start time in another zone", func(e *Env) { e.StartedAt = e.StartedAt.In(time.FixedZone("X", 5*3600)) }},
		{"start time with sub-second part read back from a store", func(e *Env) { e.StartedAt = e.StartedAt.Add(400 * time.Millisecond) }},
	}
	for _, c := range same {
		e := env
		e.Tools = append([]string(nil), env.Tools...)
		c.edit(&e)
		p, err := Build(e)
		if err != nil {
			t.Fatal(err)
		}
		if p.Text() != base.Text() {
			t.Errorf("%s: bytes changed", c.name)
		}
	}
	// Skills order must not matter either: compare two orders of the same set.
	e1, e2 := env, env
	e1.Skills = []Skill{{Name: "b"}, {Name: "a", Description: "x"}}
	e2.Skills = []Skill{{Name: "a", Description: "x"}, {Name: "b"}}
	p1, _ := Build(e1)
	p2, _ := Build(e2)
	if p1.Text() != p2.Text() {
		t.Error("skills order changed the bytes")
	}
}

func TestRebuildAfterCompaction(t *testing.T) {
	t.Parallel()
	env := fixture(t)
	first, err := Build(env)
	if err != nil {
		t.Fatal(err)
	}
	again, changed, err := Rebuild(first.Text(), env)
	if err != nil {
		t.Fatal(err)
	}
	if changed || again.Text() != first.Text() {
		t.Fatalf("rebuild with unchanged files changed the bytes (changed=%v)", changed)
	}
	env.Notes = []string{"Earlier turns were compacted; use session_search for details."}
	noted, changed, err := Rebuild(first.Text(), env)
	if err != nil {
		t.Fatal(err)
	}
	if !changed || !strings.HasSuffix(noted.Volatile, "\n\n"+env.Notes[0]+"\n\n"+sessionLine(env)) {
		t.Fatalf("a compaction note belongs just before the session line:\n%s", noted.Volatile)
	}
	if again, changed, _ := Rebuild(noted.Text(), env); changed || again.Text() != noted.Text() {
		t.Fatal("rebuild with the same note changed the bytes")
	}
	write(t, filepath.Join(env.Home, "memories", "MEMORY.md"), "- the build uses mage now\n")
	next, changed, err := Rebuild(noted.Text(), env)
	if err != nil {
		t.Fatal(err)
	}
	if !changed || next.Text() == noted.Text() {
		t.Fatal("rebuild after a MEMORY.md edit kept the old bytes")
	}
	if !strings.Contains(next.Volatile, "mage now") || next.Stable != noted.Stable || next.Context != noted.Context {
		t.Error("a MEMORY.md edit should change the volatile tier only")
	}
}

type memStore struct {
	prompts map[string]string
	sets    int
}

func (m *memStore) SetSystemPrompt(_ context.Context, id, text string) (string, error) {
	m.sets++
	m.prompts[id] = text
	return Hash(text), nil
}

func (m *memStore) SystemPrompt(_ context.Context, id string) (string, error) {
	return m.prompts[id], nil
}

func TestLoadFreezesPrompt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := fixture(t)
	st := &memStore{prompts: map[string]string{}}
	first, err := Load(ctx, st, env)
	if err != nil {
		t.Fatal(err)
	}
	if first.Restored() || st.sets != 1 || st.prompts[env.SessionID] != first.Text() {
		t.Fatalf("first load should build and persist once (sets=%d)", st.sets)
	}
	write(t, filepath.Join(env.Home, "memories", "MEMORY.md"), "- edited mid-session\n")
	write(t, filepath.Join(env.WorkDir, "SPOOL.md"), "changed rules\n")
	second, err := Load(ctx, st, env)
	if err != nil {
		t.Fatal(err)
	}
	if !second.Restored() || second.Text() != first.Text() || st.sets != 1 {
		t.Fatalf("second load must restore the persisted bytes without a rebuild (restored=%v sets=%d)", second.Restored(), st.sets)
	}
	if second.Hash() != first.Hash() {
		t.Error("restored hash differs")
	}
	if _, err := Load(ctx, st, Env{}); err == nil || !strings.Contains(err.Error(), "session id is empty") {
		t.Errorf("Load without session id: %v", err)
	}
}

func TestRestoreIsVerbatim(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"", "a\n\nb", "  spaced  \n", "héllo \x00 wörld"} {
		p := Restore(text)
		if p.Text() != text || !p.Restored() || p.Hash() != Hash(text) {
			t.Errorf("Restore(%q).Text() = %q", text, p.Text())
		}
	}
}

func TestIdentityAndHints(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	write(t, filepath.Join(home, "SOUL.md"), "I am Quill.\n")
	cases := []struct {
		name    string
		env     Env
		want    []string
		notWant []string
	}{
		{"SOUL.md replaces the default identity", Env{Home: home}, []string{"I am Quill."}, []string{defaultIdentity}},
		{"Identity overrides SOUL.md", Env{Home: home, Identity: "I am Ink."}, []string{"I am Ink."}, []string{"Quill"}},
		{"no home: default identity", Env{}, []string{defaultIdentity, memoryGuidance}, []string{"session_search", "Use the memory tool"}},
		{"edit_file offered: prefer it for existing files", Env{Tools: []string{"write_file", "edit_file"}}, []string{editGuidance}, nil},
		{"no edit_file: no advice to use it", Env{Tools: []string{"write_file"}}, nil, []string{"use edit_file"}},
		{"claude gets no gpt hint", Env{Model: "claude-sonnet-4"}, nil, []string{"do not describe the call", "literally"}},
		{"o-series by base name", Env{Model: "openai/o3-mini"}, []string{"do not describe the call"}, nil},
		{"gemini hint", Env{Model: "gemini-2.5-pro"}, []string{"literally"}, []string{"do not describe the call"}},
		{"platform hint appended", Env{Platform: "telegram", PlatformHint: "Group chat."}, []string{builtinPlatformHints["telegram"] + "\nGroup chat."}, nil},
		{"platform hint replaces", Env{Platform: "telegram", PlatformHint: "Group chat.", ReplacePlatformHint: true}, []string{"Group chat."}, []string{"Telegram"}},
		{"unknown platform keeps the configured hint", Env{Platform: "matrix", PlatformHint: "Matrix room."}, []string{"Matrix room."}, nil},
	}
	for _, c := range cases {
		p, err := Build(c.env)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, w := range c.want {
			if !strings.Contains(p.Stable, w) {
				t.Errorf("%s: stable tier lacks %q", c.name, w)
			}
		}
		for _, w := range c.notWant {
			if strings.Contains(p.Stable, w) {
				t.Errorf("%s: stable tier has %q", c.name, w)
			}
		}
	}
}

func TestEmptyTiersLeaveNoBlankLines(t *testing.T) {
	t.Parallel()
	p, err := Build(Env{SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Context != "" {
		t.Fatalf("context tier should be empty, got %q", p.Context)
	}
	if strings.Contains(p.Text(), "\n\n\n") {
		t.Error("an empty tier left a stray blank line")
	}
	if !strings.HasSuffix(p.Text(), "\n\nConversation started | session s1") {
		t.Errorf("session line without a start time: %q", p.Volatile)
	}
}

func TestUnreadableFileIsAnError(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "memories", "MEMORY.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Build(Env{Home: home})
	if err == nil || !strings.Contains(err.Error(), "MEMORY.md: is a directory, not a regular file") {
		t.Fatalf("Build with a directory as MEMORY.md: %v", err)
	}
}

func TestMemoryIsBounded(t *testing.T) {
	t.Parallel()
	env := fixture(t)
	env.MaxMemoryChars = 100
	write(t, filepath.Join(env.Home, "memories", "MEMORY.md"), "START"+strings.Repeat("m", 500)+"END")
	p, err := Build(env)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Volatile, "START") || !strings.Contains(p.Volatile, "END") ||
		!strings.Contains(p.Volatile, TruncationMarker("MEMORY.md", 508-70-20)) {
		t.Errorf("memory not cut to 100 characters with a marker:\n%s", p.Volatile)
	}
}
