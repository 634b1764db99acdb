package cli_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoolhq/spool/provider/fake"
)

// reportLatency reports the p50 and p99 of ds in milliseconds.
func reportLatency(b *testing.B, name string, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	q := func(p float64) float64 {
		return float64(ds[min(int(p*float64(len(ds))), len(ds)-1)]) / float64(time.Millisecond)
	}
	b.ReportMetric(q(0.50), name+"-p50-ms")
	b.ReportMetric(q(0.99), name+"-p99-ms")
	b.ReportMetric(float64(ds[len(ds)-1])/float64(time.Millisecond), name+"-max-ms")
}

// lastLine is the screen's last non-empty line.
func lastLine(screen string) string {
	lines := strings.Split(strings.TrimRight(screen, " \n"), "\n")
	return strings.TrimRight(lines[len(lines)-1], " ")
}

// BenchmarkChatKeystrokeEcho: the time from a key written to spool chat's pty until the
// terminal emulator's screen shows it in the editor (the real binary, colour on).
//
//	go test ./cli -run '^$' -bench ChatKeystrokeEcho -benchtime 300x
func BenchmarkChatKeystrokeEcho(b *testing.B) {
	url := startFakeLLM(b)
	s, _ := startPTY(b, b.TempDir(), nil, "chat", "--provider", "openai", "--base-url", url+"/v1", "--model", "fake-model")
	s.prompt()
	var ds []time.Duration
	typed := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if typed == 40 {
			b.StopTimer()
			s.press("\x03") // Ctrl-C clears the editor
			s.waitFor("cleared", func(string) bool { return lastLine(s.screen()) == "›" })
			typed = 0
			b.StartTimer()
		}
		typed++
		want := "› " + strings.Repeat("x", typed)
		seen := s.arm(func(screen string) bool { return lastLine(screen) == want })
		start := time.Now()
		s.press("x")
		select {
		case at := <-seen:
			ds = append(ds, at.Sub(start))
		case <-time.After(30 * time.Second):
			b.Fatalf("the key never showed; screen:\n%s", s.screen())
		}
	}
	b.StopTimer()
	reportLatency(b, "echo", ds)
}

// BenchmarkChatFirstDelta: the time from the model's first delta leaving the server until the
// screen shows it (colour on: styled as markdown, live), one turn per iteration.
//
//	go test ./cli -run '^$' -bench ChatFirstDelta -benchtime 50x
func BenchmarkChatFirstDelta(b *testing.B) {
	g, url := startGatedModel(b)
	s, _ := startPTY(b, b.TempDir(), nil, "chat", "--provider", "openai", "--base-url", url+"/v1", "--model", "gated")
	s.prompt()
	var ds []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s.press(fmt.Sprintf("turn %d", i), "\r")
		<-g.asked
		word := fmt.Sprintf("delta%dshown", i)
		seen := s.arm(func(screen string) bool {
			return strings.Contains(screen, "**"+word) || strings.Contains(screen, word+" ")
		})
		b.StartTimer()
		start := time.Now()
		g.deltas <- word + " and **more"
		select {
		case at := <-seen:
			ds = append(ds, at.Sub(start))
		case <-time.After(30 * time.Second):
			b.Fatalf("the delta never showed; screen:\n%s", s.screen())
		}
		b.StopTimer()
		g.deltas <- ""
		s.prompt()
		b.StartTimer()
	}
	b.StopTimer()
	reportLatency(b, "first-delta", ds)
}

// BenchmarkRunStartup20k: the time from starting `spool run --resume` on a session of 20,000
// messages until the model receives the first request (the process's whole start: config,
// store, loading the conversation, building the request).
//
//	go test ./cli -run '^$' -bench RunStartup20k -benchtime 20x
func BenchmarkRunStartup20k(b *testing.B) {
	for _, v := range []struct {
		name      string
		compacted bool
	}{{"all-active", false}, {"compacted", true}} {
		b.Run(v.name, func(b *testing.B) { benchRunStartup(b, v.compacted) })
	}
}

func benchRunStartup(b *testing.B, compacted bool) {
	const messages = 20000
	home := b.TempDir()
	sid := "20261201_000000_bench1"
	path := filepath.Join(home, "long.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	line := func(v any) {
		bs, _ := json.Marshal(v)
		w.Write(bs)
		w.WriteByte('\n')
	}
	start := time.Now().Add(-48 * time.Hour)
	line(map[string]any{"spool_export": 1, "exported_at": time.Now().UTC(), "sessions": 1})
	line(map[string]any{"type": "session", "id": sid, "source": "cli", "title": "long", "model": "fake-model", "started_at": start.UTC()})
	keep := 40 // with compacted, only a summary and the last keep messages are active
	for i := 1; i <= messages; i++ {
		role, content := "user", fmt.Sprintf("question %d about the parser in file%d.go", i, i%97)
		if i%2 == 0 {
			role, content = "assistant", fmt.Sprintf("answer %d: the parser in file%d.go handles that case", i, i%97)
		}
		active := !compacted || i > messages-keep
		line(map[string]any{"type": "message", "session_id": sid, "id": i, "role": role, "content": content,
			"timestamp": start.Add(time.Duration(i) * time.Second).UTC(), "summary": false, "active": active, "compacted": !active})
	}
	if compacted {
		line(map[string]any{"type": "message", "session_id": sid, "id": messages + 1, "role": "user",
			"content": "[CONTEXT COMPACTION] summary of the earlier turns: the parser work.", "timestamp": start.Add(time.Duration(messages+1) * time.Second).UTC(),
			"summary": true, "active": true, "compacted": false})
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	spool(b, home, "sessions", "import", path).ok(b, "import")

	var mu sync.Mutex
	var first time.Time
	h := fake.New(fake.Config{}).Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if first.IsZero() {
			first = time.Now()
		}
		mu.Unlock()
		h.ServeHTTP(rw, r)
	}))
	b.Cleanup(srv.Close)
	var ds []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		mu.Lock()
		first = time.Time{}
		mu.Unlock()
		cmd := spoolCmd(home, "run", "--provider", "openai", "--base-url", srv.URL+"/v1", "--model", "fake-model",
			"--context-length", "4000000", "--resume", sid, fmt.Sprintf("next %d", i))
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("spool run: %v", err)
		}
		mu.Lock()
		if first.IsZero() {
			b.Fatal("no request reached the model")
		}
		ds = append(ds, first.Sub(t0))
		mu.Unlock()
	}
	b.StopTimer()
	reportLatency(b, "to-first-request", ds)
}

// spoolCmd is the spool binary with --home home and args, not yet started.
func spoolCmd(home string, args ...string) *exec.Cmd {
	cmd := exec.Command(spoolBin, append([]string{"--home", home}, args...)...)
	cmd.Env = cleanEnv()
	return cmd
}
