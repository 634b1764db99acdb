package compress

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkCompress1000 measures compaction overhead excluding the model call (the summariser
// answers instantly) on a 1,000-message coding history with a 200K window.
func BenchmarkCompress1000(b *testing.B) { benchCompress1000(b, 200_000) }

// BenchmarkCompress1000Window8K is the same history on an 8K window: the ladder climbs to
// its lower rungs, each assembled and measured.
func BenchmarkCompress1000Window8K(b *testing.B) { benchCompress1000(b, 8_192) }

func benchCompress1000(b *testing.B, window int) {
	s := newSession(nil)
	for i := 0; len(s.active) < 1000; i++ {
		out := fmt.Sprintf("building pkg%d\n%s\nexit code: %d", i, strings.Repeat(fmt.Sprintf("src/pkg%d/file.go:%d: ok\n", i, i), 25), i%3)
		codingTurn(s, i, fmt.Sprintf("Step %d: fix #%d in src/pkg%d/file.go; let's keep the API stable.", i, 100+i, i), fmt.Sprintf("go test ./pkg%d/...", i), out)
	}
	ms := s.active[:1000]
	c := New(DefaultConfig(), SummarizerFunc(func(context.Context, string, string) (string, error) {
		return "## Goal\nbench", nil
	}))
	model := Model{Name: "m", ContextLength: window}
	res, err := Resolve(c.Config, model)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Compress(context.Background(), Request{SessionID: "sess", Messages: ms, Model: model, Threshold: &res, State: &State{}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSelect1000 measures the per-request view of the same history.
func BenchmarkSelect1000(b *testing.B) {
	s := newSession(nil)
	for i := 0; len(s.active) < 1000; i++ {
		codingTurn(s, i, "step", "go test ./...", strings.Repeat("ok\n", 100))
	}
	ms := s.active[:1000]
	c := New(DefaultConfig(), nil)
	for b.Loop() {
		if _, err := c.Select(context.Background(), Request{Messages: ms}); err != nil {
			b.Fatal(err)
		}
	}
}
