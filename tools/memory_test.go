package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/spoolhq/spool/prompt"
)

func memoryFile(t *testing.T, home, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, "memories", name))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

func TestMemoryEdits(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := Env{Home: home}
	steps := []struct {
		args    string
		isErr   bool
		want    string
		file    string // MEMORY.md after the step
		userMem string // USER.md after the step
	}{
		{`{"action":"add","content":"the build uses make"}`, false, "Added an entry to MEMORY.md. It takes effect when the system prompt is next built",
			"the build uses make\n", ""},
		{`{"action":"add","content":"  deploys go through CI\nnever by hand  "}`, false, "MEMORY.md now has 2 entries",
			"the build uses make\n§\ndeploys go through CI\nnever by hand\n", ""},
		{`{"action":"add","content":"the build uses make"}`, false, "Already saved in MEMORY.md; nothing changed.",
			"the build uses make\n§\ndeploys go through CI\nnever by hand\n", ""},
		{`{"action":"add","target":"user","content":"prefers terse answers"}`, false, "Added an entry to USER.md",
			"the build uses make\n§\ndeploys go through CI\nnever by hand\n", "prefers terse answers\n"},
		{`{"action":"replace","old_text":"uses make","content":"the build uses mage"}`, false, "Replaced an entry in MEMORY.md",
			"the build uses mage\n§\ndeploys go through CI\nnever by hand\n", "prefers terse answers\n"},
		{`{"action":"replace","old_text":"e","content":"x"}`, true, `old_text "e" matches more than one entry in MEMORY.md`,
			"the build uses mage\n§\ndeploys go through CI\nnever by hand\n", "prefers terse answers\n"},
		{`{"action":"remove","old_text":"no such thing"}`, true, `no entry in MEMORY.md contains "no such thing"`,
			"the build uses mage\n§\ndeploys go through CI\nnever by hand\n", "prefers terse answers\n"},
		{`{"action":"remove","old_text":"by hand"}`, false, "Removed an entry from MEMORY.md. It takes effect",
			"the build uses mage\n", "prefers terse answers\n"},
		{`{"action":"remove","target":"user","old_text":"terse"}`, false, "USER.md now has 0 entries, 0/2000 characters",
			"the build uses mage\n", ""},
		{`{"action":"add"}`, true, "add needs content", "the build uses mage\n", ""},
		{`{"action":"remove"}`, true, "remove needs old_text", "the build uses mage\n", ""},
		{`{"action":"add","content":"a\n§\nb"}`, true, "may not contain a line holding only", "the build uses mage\n", ""},
		{`{"action":"forget","content":"x"}`, true, `action: want one of "add", "replace", "remove"`, "the build uses mage\n", ""},
		{`{"action":"add","target":"team","content":"x"}`, true, `target: want one of "memory", "user"`, "the build uses mage\n", ""},
	}
	for i, s := range steps {
		res := call(t, env, "memory", s.args)
		if res.IsError != s.isErr || !strings.Contains(res.Content, s.want) {
			t.Fatalf("step %d %s: %+v, want IsError=%v and %q", i, s.args, res, s.isErr, s.want)
		}
		if got := memoryFile(t, home, "MEMORY.md"); got != s.file {
			t.Fatalf("step %d: MEMORY.md = %q, want %q", i, got, s.file)
		}
		if got := memoryFile(t, home, "USER.md"); got != s.userMem {
			t.Fatalf("step %d: USER.md = %q, want %q", i, got, s.userMem)
		}
	}
	if res := call(t, Env{}, "memory", `{"action":"add","content":"x"}`); !res.IsError || !strings.Contains(res.Content, "no spool home") {
		t.Fatalf("memory without a home: %+v", res)
	}
}

func TestMemoryCaps(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		target, file string
		limit        int
	}{{"memory", "MEMORY.md", MemoryCharLimit}, {"user", "USER.md", UserCharLimit}} {
		t.Run(c.target, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			env := Env{Home: home}
			add := func(content string) Result {
				b, _ := json.Marshal(map[string]string{"action": "add", "target": c.target, "content": content})
				return call(t, env, "memory", string(b))
			}
			// Multi-byte characters: the cap counts characters, not bytes.
			entry := strings.Repeat("ü", 97)
			n := 0
			for ; ; n++ {
				res := add(fmt.Sprintf("%03d%s", n, entry))
				if res.IsError {
					if !strings.Contains(res.Content, fmt.Sprintf("over its %d character limit", c.limit)) {
						t.Fatalf("refusal: %s", res.Content)
					}
					break
				}
			}
			text := memoryFile(t, home, c.file)
			if got := len([]rune(text)); got > c.limit || got < c.limit-110 {
				t.Fatalf("%s holds %d characters after filling, limit %d", c.file, got, c.limit)
			}
			if strings.Count(text, "\n§\n") != n-1 {
				t.Fatalf("%d entries written, %d separators", n, strings.Count(text, "\n§\n"))
			}
			// A replace that would overflow is refused and changes nothing; one that fits works.
			b, _ := json.Marshal(map[string]string{"action": "replace", "target": c.target, "old_text": "000", "content": strings.Repeat("z", 500)})
			if res := call(t, env, "memory", string(b)); !res.IsError || memoryFile(t, home, c.file) != text {
				t.Fatalf("overflowing replace: %+v", res)
			}
			b, _ = json.Marshal(map[string]string{"action": "replace", "target": c.target, "old_text": "000", "content": "short"})
			if res := call(t, env, "memory", string(b)); res.IsError || !strings.HasPrefix(memoryFile(t, home, c.file), "short\n§\n001") {
				t.Fatalf("replace: %+v", res)
			}
			// The prompt shows the whole file: the cap keeps it under the prompt's own bound.
			if c.limit > prompt.DefaultMaxMemoryChars {
				t.Fatalf("cap %d exceeds the prompt's bound %d", c.limit, prompt.DefaultMaxMemoryChars)
			}
		})
	}
}

// A hand-written file (no separators) is one entry; edits keep what the user wrote.
func TestMemoryHandWrittenFile(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeTree(t, home, map[string]string{"memories/MEMORY.md": "- uses make\n- deploys on friday\n"})
	res := call(t, Env{Home: home}, "memory", `{"action":"add","content":"new fact"}`)
	if res.IsError {
		t.Fatal(res.Content)
	}
	if got := memoryFile(t, home, "MEMORY.md"); got != "- uses make\n- deploys on friday\n§\nnew fact\n" {
		t.Fatalf("MEMORY.md = %q", got)
	}
}

// Concurrent writers in separate processes do not lose each other's entries.
func TestMemoryConcurrentProcesses(t *testing.T) {
	t.Parallel()
	if os.Getenv("SPOOL_MEMORY_CHILD") != "" {
		t.Skip("child process")
	}
	home := t.TempDir()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const procs, each = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, procs)
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(bin, "-test.run=^TestMemoryChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "SPOOL_MEMORY_CHILD="+fmt.Sprint(p), "SPOOL_MEMORY_HOME="+home, fmt.Sprintf("SPOOL_MEMORY_EACH=%d", each))
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("child %d: %v\n%s", p, err, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	entries, err := readEntries(filepath.Join(home, "memories", "MEMORY.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != procs*each {
		t.Fatalf("%d entries survived, want %d: %q", len(entries), procs*each, entries)
	}
}

// TestMemoryChild is the body of TestMemoryConcurrentProcesses's child processes.
func TestMemoryChild(t *testing.T) {
	id := os.Getenv("SPOOL_MEMORY_CHILD")
	if id == "" {
		t.Skip("runs only as a child of TestMemoryConcurrentProcesses")
	}
	env := Env{Home: os.Getenv("SPOOL_MEMORY_HOME")}
	var each int
	fmt.Sscan(os.Getenv("SPOOL_MEMORY_EACH"), &each)
	for i := range each {
		res := Default().Call(context.Background(), env, "memory", fmt.Sprintf(`{"action":"add","content":"process %s fact %d"}`, id, i))
		if res.IsError {
			t.Fatal(res.Content)
		}
	}
}

// TestMergeMemory: entries the file holds are not added again, the file's own stay first, and
// an entry that would go over the limit is left out while a later one that fits is added.
func TestMergeMemory(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir := filepath.Join(home, "memories")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "USER.md"), []byte("own entry\n§\nshared\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", UserCharLimit)
	got, err := MergeMemory(home, "user", []string{"shared", long, "new one", "  "})
	if err != nil {
		t.Fatal(err)
	}
	if got.Added != 1 || got.Present != 1 || len(got.Over) != 1 || got.Over[0] != long {
		t.Errorf("merge = added %d, present %d, over %d", got.Added, got.Present, len(got.Over))
	}
	data, err := os.ReadFile(filepath.Join(dir, "USER.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "own entry\n§\nshared\n§\nnew one\n"; string(data) != want {
		t.Errorf("USER.md = %q, want %q", data, want)
	}
	if _, err := MergeMemory(home, "soul", nil); err == nil {
		t.Error("an unknown target merged")
	}
}
