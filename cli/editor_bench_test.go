package cli

import (
	"fmt"
	"io"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// BenchmarkEditorKeyLongLine: the chat editor's work for one typed key (the model's update,
// the view, the draw to a discarded terminal) when the message is one line of n characters,
// on a 160-column terminal. The textarea re-wraps the changed line on every key, so the cost
// grows with the line.
//
//	go test ./cli -run '^$' -bench EditorKeyLongLine -benchtime 200x
func BenchmarkEditorKeyLongLine(b *testing.B) {
	for _, n := range []int{100, 2000, 6000} {
		b.Run(fmt.Sprintf("chars=%d", n), func(b *testing.B) {
			t := &tui{lines: make(chan string, 64), answers: make(chan string, 1), picks: make(chan string, 1),
				intr: make(chan struct{}, 1), eof: make(chan struct{}), done: make(chan struct{})}
			t.scr = newScreen(nil, io.Discard, nil, 160, 50)
			m := newEditorModel(t, tuiOptions{history: loadHistory("")})
			m.Update(tea.WindowSizeMsg{Width: 160, Height: 50})
			m.ed.SetValue(strings.Repeat("word ", n/5))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%40 == 0 { // keep the line at about n characters
					b.StopTimer()
					m.ed.SetValue(strings.Repeat("word ", n/5))
					b.StartTimer()
				}
				m.Update(tea.KeyPressMsg{Code: 'x', Text: "x"})
			}
		})
	}
}
