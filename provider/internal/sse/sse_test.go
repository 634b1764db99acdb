package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []Event
	}{
		{"two events", "data: a\n\ndata: b\n\n", []Event{{Data: []byte("a")}, {Data: []byte("b")}}},
		{"no trailing blank line", "data: a\n\ndata: [DONE]", []Event{{Data: []byte("a")}, {Data: []byte("[DONE]")}}},
		{"named events and crlf", "event: ping\r\ndata: {}\r\n\r\n", []Event{{Type: "ping", Data: []byte("{}")}}},
		{"multi-line data and comment", ": hi\ndata: x\ndata:y\n\n", []Event{{Data: []byte("x\ny")}}},
		{"event without data is dropped", "event: x\n\ndata: z\n\n", []Event{{Data: []byte("z")}}},
		{"long line", "data: " + strings.Repeat("q", 200000) + "\n\n", []Event{{Data: []byte(strings.Repeat("q", 200000))}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := NewReader(strings.NewReader(tt.in))
			var got []Event
			for {
				ev, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, Event{Type: ev.Type, Data: append([]byte(nil), ev.Data...)})
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d events %q, want %d", len(got), got, len(tt.want))
			}
			for i := range got {
				if got[i].Type != tt.want[i].Type || string(got[i].Data) != string(tt.want[i].Data) {
					t.Errorf("event %d = %q/%q, want %q/%q", i, got[i].Type, got[i].Data, tt.want[i].Type, tt.want[i].Data)
				}
			}
		})
	}
}

func TestReaderReportsReadError(t *testing.T) {
	t.Parallel()
	cut := errors.New("connection reset")
	r := NewReader(io.MultiReader(strings.NewReader("data: a\n\ndata: par"), iotest.ErrReader(cut)))
	if ev, err := r.Next(); err != nil || string(ev.Data) != "a" {
		t.Fatalf("first = %q, %v", ev.Data, err)
	}
	if _, err := r.Next(); !errors.Is(err, cut) {
		t.Fatalf("second err = %v, want %v", err, cut)
	}
}
