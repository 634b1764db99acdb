package openai_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/gateway"
	"github.com/spoolhq/spool/gateway/openai"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/store/sqlite"
)

// smallSendBuffers gives every accepted connection a small kernel send buffer, so what a client
// does not read stays in the server process (where the bound applies) after a few KB rather
// than the megabytes loopback would buffer.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(8 << 10)
	}
	return c, err
}

// inProcess serves the real handler and gateway (SQLite, the fake model) on 127.0.0.1.
func inProcess(t *testing.T, o openai.Options) (*gateway.Gateway, string, *fake.Model) {
	t.Helper()
	return inProcessAt(t, filepath.Join(t.TempDir(), "spool.db"), o)
}

// inProcessAt is inProcess on the SQLite database at path; o.Log is also the gateway's log.
func inProcessAt(t *testing.T, path string, o openai.Options) (*gateway.Gateway, string, *fake.Model) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	model := fake.New(fake.Config{})
	ag, err := agent.New(agent.Deps{Store: db, Client: model, Config: agent.Config{Model: "fake", Source: gateway.Source}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(gateway.Deps{Store: db, Runner: ag, Log: o.Log, Config: gateway.Config{Model: "fake"}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.Models = []string{"fake"}
	srv := &http.Server{Handler: openai.New(g, o)}
	go srv.Serve(smallSendBuffers{ln})
	t.Cleanup(func() { srv.Close() })
	return g, "http://" + ln.Addr().String(), model
}

// TestStreamBufferBound: a client that stops reading mid-answer (a small receive buffer, then no
// reads) makes the stream hold the events it has not taken. Past serve.stream_buffer_bytes the
// stream is cut: the connection closes before the answer's end, the cut is logged once without
// content, and the turn runs to its end regardless: its answer is stored whole, fetchable with
// GET /v1/responses/{id} and in the conversation. The controls: the same client with a bound
// above the whole answer gets all of it once it reads again, and nothing is logged; and an
// answer whose deltas fit in the bound but whose closing events (the Responses API repeats the
// text in four of them) do not is not cut: the tail, once the turn is over, is queued whole.
func TestStreamBufferBound(t *testing.T) {
	t.Parallel()
	answer := func(words, size int) string {
		var ws []string
		for i := 0; i < words; i++ {
			ws = append(ws, fmt.Sprintf("quokka%04d%s", i, strings.Repeat("x", size-10)))
		}
		return strings.Join(ws, " ")
	}
	// About 150 KB of answer, streamed as 1,500 deltas: the events come to over 400 KB.
	long := answer(1500, 100)
	// 30 KB in 30 deltas (under 40 KB of events), repeated in 120 KB of closing events.
	short := answer(30, 1000)
	cases := []struct {
		name, route, text string
		bound             int
		cut               bool
	}{
		{"responses cut", "/v1/responses", long, 64 << 10, true},
		{"chat cut", "/v1/chat/completions", long, 64 << 10, true},
		{"responses within the bound", "/v1/responses", long, 16 << 20, false},
		{"chat within the bound", "/v1/chat/completions", long, 16 << 20, false},
		{"responses closing events over the bound", "/v1/responses", short, 64 << 10, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			text := tc.text
			var logged syncBuffer
			g, base, model := inProcess(t, openai.Options{StreamBuffer: tc.bound, WriteTimeout: 1 << 62,
				Log: slog.New(slog.NewTextHandler(&logged, nil))})
			// The model answers once the test has read the stream's first event (the barrier's
			// second arrival), then all at once.
			const prompt = "WAIT first-event 2\nSAY "
			var body []byte
			if tc.route == "/v1/responses" {
				body, _ = json.Marshal(map[string]any{"model": "spool", "stream": true, "input": prompt + text})
			} else {
				body, _ = json.Marshal(map[string]any{"model": "spool", "stream": true, "messages": []map[string]string{{"role": "user", "content": prompt + text}}})
			}
			// The client: a small receive buffer, set before the connection (so its window is small).
			d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
				return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
			}}
			conn, err := d.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			req, _ := http.NewRequest("POST", base+tc.route, strings.NewReader(string(body)))
			req.Header.Set("Content-Type", "application/json")
			if err := req.Write(conn); err != nil {
				t.Fatal(err)
			}
			res, err := http.ReadResponse(bufio.NewReaderSize(conn, 4096), req)
			if err != nil {
				t.Fatal(err)
			}
			sid := res.Header.Get("X-Spool-Session-Id")
			if res.StatusCode != http.StatusOK || sid == "" {
				b, _ := io.ReadAll(io.LimitReader(res.Body, 2000))
				t.Fatalf("status %d, session %q: %s", res.StatusCode, sid, b)
			}
			// Read the first event (the response's id), sent before the model is called; then
			// let the model answer and stop reading.
			br := bufio.NewReaderSize(res.Body, 16)
			first, err := br.ReadString('}')
			if err != nil {
				t.Fatal(err)
			}
			respID := ""
			if tc.route == "/v1/responses" {
				var ev struct {
					Response struct{ ID string } `json:"response"`
				}
				line, _ := br.ReadString('\n')
				raw := strings.TrimPrefix(first+line, "event: response.created\ndata: ")
				if err := json.Unmarshal([]byte(raw), &ev); err != nil || ev.Response.ID == "" {
					t.Fatalf("first event %q: %v", first+line, err)
				}
				respID = ev.Response.ID
			}
			if _, err := model.Chat(context.Background(), provider.Request{Messages: []provider.Message{{Role: "user", Content: "WAIT first-event 2"}}}, nil); err != nil {
				t.Fatal(err)
			}
			// The turn ends without the client reading a byte more (Drain waits for it).
			if err := g.Drain(context.Background()); err != nil {
				t.Fatal(err)
			}
			rest, readErr := io.ReadAll(br)
			done := "data: [DONE]"
			if tc.route == "/v1/responses" {
				done = "event: response.completed"
			}
			cuts := strings.Count(logged.String(), "stream cut")
			if tc.cut {
				if readErr == nil || strings.Contains(string(rest), done) || cuts != 1 {
					t.Fatalf("cut stream: read error %v, %d bytes, %q in them: %v, %d cuts logged:\n%s",
						readErr, len(rest), done, strings.Contains(string(rest), done), cuts, logged.String())
				}
				if strings.Contains(logged.String(), "quokka") {
					t.Fatalf("the log holds message content:\n%s", logged.String())
				}
			} else {
				if readErr != nil || !strings.Contains(string(rest), done) || cuts != 0 {
					t.Fatalf("stream within the bound: read error %v, %q in it: %v, %d cuts logged:\n%s",
						readErr, done, strings.Contains(string(rest), done), cuts, logged.String())
				}
			}
			// Nothing is lost: the answer is stored whole.
			if respID != "" {
				var got struct {
					Status string
					Output []struct {
						Content []struct{ Text string }
					}
				}
				getJSON(t, base+"/v1/responses/"+respID, &got)
				if got.Status != "completed" || len(got.Output) == 0 || len(got.Output[0].Content) == 0 || got.Output[0].Content[0].Text != text {
					t.Fatalf("GET /v1/responses/%s after the stream: status %q, %d outputs", respID, got.Status, len(got.Output))
				}
			}
			var items struct {
				Data []struct {
					Role    string
					Content []struct{ Text string }
				}
			}
			getJSON(t, base+"/v1/conversations/"+sid+"/items?order=desc&limit=1", &items)
			if len(items.Data) != 1 || items.Data[0].Role != "assistant" || len(items.Data[0].Content) == 0 || items.Data[0].Content[0].Text != text {
				t.Fatalf("the conversation's last item is not the whole answer: %+v", len(items.Data))
			}
			var metrics strings.Builder
			res, err = http.Get(base + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(&metrics, res.Body)
			res.Body.Close()
			want := "spool_streams_cut_total 0"
			if tc.cut {
				want = "spool_streams_cut_total 1"
			}
			if !strings.Contains(metrics.String(), want) {
				t.Fatalf("/metrics lacks %q", want)
			}
		})
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
