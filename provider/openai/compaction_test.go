package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/internal/replay"
	"github.com/spoolhq/spool/provider/openai"
)

// fixtureItem returns output item i of a recorded Responses body, compacted, and its
// encrypted_content.
func fixtureItem(t *testing.T, name string, i int) ([]byte, string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "responses", name))
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Output []json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, body.Output[i]); err != nil {
		t.Fatal(err)
	}
	var it struct {
		EncryptedContent string `json:"encrypted_content"`
	}
	_ = json.Unmarshal(body.Output[i], &it)
	return buf.Bytes(), it.EncryptedContent
}

// POST /responses/compact against the recorded 07a answer, whole and in 5-byte chunks: the
// output items (the retained user message and the compaction item with its 3.5 kB encrypted
// content) come back exactly, with usage; the request is the compact endpoint's own (model,
// instructions, input items, no tools or store); replayed on a summary row, the window is sent
// byte for byte before the row's text.
func TestResponsesCompactFixture(t *testing.T) {
	t.Parallel()
	wantItem, enc := fixtureItem(t, "07a-responses-compact.RESERIALIZED.json", 1)
	wantMsg, _ := fixtureItem(t, "07a-responses-compact.RESERIALIZED.json", 0)
	if len(enc) < 3000 {
		t.Fatalf("fixture compaction item has %d bytes of encrypted content", len(enc))
	}
	for _, chunk := range []int{0, 5} {
		t.Run("chunk"+strconv.Itoa(chunk), func(t *testing.T) {
			t.Parallel()
			resp := replay.Load(t, rfix("07a-responses-compact.RESERIALIZED.json"))
			resp.ChunkSize = chunk
			srv := replay.Serve(t, resp)
			c := newResponsesClient(t, srv)
			if !c.CanCompact() {
				t.Fatal("a Responses client cannot compact")
			}
			req := provider.Request{Model: "gpt-4o-mini", System: "Summarize very briefly", Messages: []provider.Message{
				{Role: "user", Content: "Hello!"}, {Role: "assistant", Content: "Hello! How can I assist you today?"}}}
			got, err := c.Compact(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if got.Usage != (provider.Usage{InputTokens: 124, OutputTokens: 268}) || got.Model != "gpt-4o-mini" {
				t.Errorf("usage %+v model %q", got.Usage, got.Model)
			}
			var items []json.RawMessage
			if err := json.Unmarshal(got.Items, &items); err != nil || len(items) != 2 {
				t.Fatalf("items %s: %v", got.Items, err)
			}
			if !bytes.Equal(items[0], wantMsg) || !bytes.Equal(items[1], wantItem) {
				t.Errorf("items differ from the recording:\n%s\n%s", items[0], items[1][:120])
			}
			sent := srv.Requests()[0]
			if sent.Path != "/v1/responses/compact" {
				t.Errorf("path %s", sent.Path)
			}
			var body map[string]json.RawMessage
			if err := json.Unmarshal(sent.Body, &body); err != nil {
				t.Fatal(err)
			}
			// The recorded request's fields (07a-….request.json: input, instructions, model).
			for _, k := range []string{"input", "instructions", "model"} {
				if _, ok := body[k]; !ok {
					t.Errorf("compact request lacks %s: %s", k, sent.Body)
				}
			}
			for _, k := range []string{"tools", "store", "include", "stream"} {
				if _, ok := body[k]; ok {
					t.Errorf("compact request has %s: %s", k, sent.Body)
				}
			}

			// The window on a summary row goes out first, byte for byte, then the row's text.
			win, err := provider.CompactedWindow(got.Items)
			if err != nil {
				t.Fatal(err)
			}
			plain := replay.Load(t, rfix("01c-nonstream-cached-tokens.json"))
			plain.Header.Del("Content-Encoding")
			next := replay.Serve(t, plain)
			turn := provider.Request{Model: "gpt-4o-mini", System: "sys", Temperature: -1, Messages: []provider.Message{
				{Role: "user", Content: "[summary text with the ledger]", ReasoningDetails: win},
				{Role: "user", Content: "go on"}}}
			if _, err := newResponsesClient(t, next).Chat(context.Background(), turn, nil); err != nil {
				t.Fatal(err)
			}
			b := next.Requests()[0].Body
			want := append([]byte(`"input":[`), wantMsg...)
			want = append(want, ',')
			want = append(want, wantItem...)
			want = append(want, []byte(`,{"content":"[summary text with the ledger]","role":"user"},{"content":"go on","role":"user"}]`)...)
			if !bytes.Contains(b, want) {
				t.Errorf("the summary row's window is not replayed byte for byte:\n%s", b)
			}
		})
	}
}

// A normal /responses answer that carries a compaction item (07b: server-side compaction,
// context_management): the item is kept with the assistant message (its 41 kB encrypted content
// untouched), Response.Compacted says so, and the next request sends it back byte for byte
// after the message. context_management goes out as configured.
func TestResponsesInlineCompactionFixture(t *testing.T) {
	t.Parallel()
	wantItem, enc := fixtureItem(t, "07b-response-with-compaction-item.RESERIALIZED.json", 1)
	if len(enc) < 40000 {
		t.Fatalf("fixture compaction item has %d bytes of encrypted content", len(enc))
	}
	for _, chunk := range []int{0, 7} {
		t.Run("chunk"+strconv.Itoa(chunk), func(t *testing.T) {
			t.Parallel()
			resp := replay.Load(t, rfix("07b-response-with-compaction-item.RESERIALIZED.json"))
			resp.ChunkSize = chunk
			srv := replay.Serve(t, resp)
			req := userReq("testing strategies")
			req.CompactThreshold = 50000
			got, err := newResponsesClient(t, srv).Chat(context.Background(), req, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Compacted || got.Model != "gpt-5.2-2025-12-11" || got.Usage.InputTokens != 51097 || got.FinishReason != "stop" {
				t.Errorf("got compacted=%v model=%q usage=%+v finish=%q", got.Compacted, got.Model, got.Usage, got.FinishReason)
			}
			items := reasoningItems(t, got.ReasoningDetails)
			if len(items) != 2 || items[0]["type"] != "message" || items[1]["type"] != "compaction" || items[1]["encrypted_content"] != enc {
				t.Fatalf("kept items %v", len(items))
			}
			if b := srv.Requests()[0].Body; !bytes.Contains(b, []byte(`"context_management":[{"type":"compaction","compact_threshold":50000}]`)) {
				t.Errorf("request lacks context_management: %s", b)
			}

			plain := replay.Load(t, rfix("01c-nonstream-cached-tokens.json"))
			plain.Header.Del("Content-Encoding")
			next := replay.Serve(t, plain)
			turn := userReq("testing strategies")
			turn.Messages = append(turn.Messages, provider.Message{Role: "assistant", Content: got.Content, ReasoningDetails: got.ReasoningDetails},
				provider.Message{Role: "user", Content: "more"})
			if _, err := newResponsesClient(t, next).Chat(context.Background(), turn, nil); err != nil {
				t.Fatal(err)
			}
			b := next.Requests()[0].Body
			if !bytes.Contains(b, wantItem) {
				t.Fatal("the compaction item is not replayed byte for byte")
			}
			if bytes.Contains(b, []byte(`"context_management"`)) {
				t.Error("context_management sent without CompactThreshold")
			}
			if i, j := bytes.Index(b, []byte(`"id":"msg_0a311635443846b4016994b3e254048196b97b781550681246"`)), bytes.Index(b, wantItem); i < 0 || j < i {
				t.Errorf("the message does not precede the compaction item as in the output (%d, %d)", i, j)
			}
		})
	}
}

// A Chat Completions client does not compact: Compact answers provider.ErrNoCompaction.
func TestChatAPICannotCompact(t *testing.T) {
	t.Parallel()
	c, err := openai.New(openai.Config{BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if c.CanCompact() {
		t.Error("chat client says it compacts")
	}
	if _, err := c.Compact(context.Background(), userReq("x")); !errors.Is(err, provider.ErrNoCompaction) {
		t.Errorf("err %v", err)
	}
}

// A provider compaction's window is the Responses API's alone: on Chat Completions (a fallback
// model, or the session moved to another API) the summary row goes out as its text only.
func TestChatSendsSummaryRowAsText(t *testing.T) {
	t.Parallel()
	win, err := provider.CompactedWindow(json.RawMessage(`[{"type":"compaction","id":"cmp_1","encrypted_content":"gAAAAABxyz"}]`))
	if err != nil {
		t.Fatal(err)
	}
	srv := replay.Serve(t, replay.Load(t, "01-chat-nonstream-cached-tokens.json"))
	req := userReq("go on")
	req.Messages = append([]provider.Message{{Role: "user", Content: "[summary text]", ReasoningDetails: win}}, req.Messages...)
	if _, err := newClient(t, srv, "sk-test").Chat(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	b := srv.Requests()[0].Body
	if bytes.Contains(b, []byte("compaction")) || bytes.Contains(b, []byte("gAAAAABxyz")) || !bytes.Contains(b, []byte(`"[summary text]"`)) {
		t.Errorf("chat request: %s", b)
	}
}

// The streamed form of 07b (its 284 kB twin was not copied; SOURCES.md says its compaction item
// arrives through response.output_item.added/done only): a stream built from 07b's own items,
// in 7-byte chunks, keeps the compaction item exactly as the non-streamed answer does.
func TestResponsesStreamedCompactionItem(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("testdata", "responses", "07b-response-with-compaction-item.RESERIALIZED.json"))
	if err != nil {
		t.Fatal(err)
	}
	var full map[string]json.RawMessage
	if err := json.Unmarshal(raw, &full); err != nil {
		t.Fatal(err)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(full["output"], &items); err != nil {
		t.Fatal(err)
	}
	var sse bytes.Buffer
	seq := 0
	event := func(typ string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		b, _ := json.Marshal(fields)
		sse.WriteString("event: " + typ + "\ndata: " + string(b) + "\n\n")
	}
	for i, it := range items {
		var c bytes.Buffer
		_ = json.Compact(&c, it)
		event("response.output_item.added", map[string]any{"output_index": i, "item": json.RawMessage(c.Bytes())})
		event("response.output_item.done", map[string]any{"output_index": i, "item": json.RawMessage(c.Bytes())})
	}
	final := map[string]json.RawMessage{}
	for k, v := range full {
		final[k] = v
	}
	final["output"] = json.RawMessage("[]")
	event("response.completed", map[string]any{"response": final})
	wantItem, enc := fixtureItem(t, "07b-response-with-compaction-item.RESERIALIZED.json", 1)

	srv := replay.Serve(t, replay.Response{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}}, Body: sse.Bytes(), ChunkSize: 7})
	var deltas int
	got, err := newResponsesClient(t, srv).Chat(context.Background(), userReq("testing strategies"), func(provider.Delta) { deltas++ })
	if err != nil {
		t.Fatal(err)
	}
	if !got.Compacted || got.Usage.InputTokens != 51097 {
		t.Errorf("compacted %v, usage %+v", got.Compacted, got.Usage)
	}
	kept := reasoningItems(t, got.ReasoningDetails)
	if len(kept) != 2 || kept[1]["type"] != "compaction" || kept[1]["encrypted_content"] != enc {
		t.Fatalf("kept %d items", len(kept))
	}
	if !bytes.Contains(got.ReasoningDetails, wantItem) {
		t.Error("the streamed compaction item is not kept byte for byte")
	}
}
