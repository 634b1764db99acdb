package openai_test

import (
	"net/http"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

func input(s string) responses.ResponseNewParamsInputUnion {
	return responses.ResponseNewParamsInputUnion{OfString: sdk.String(s)}
}

// TestResponses drives /v1/responses with the official Go SDK: a response, a chain by
// previous_response_id on one session, a branch from an older response, the streaming grammar
// through responses.stream, retrieval, input items, conversation by id, and deletion.
func TestResponses(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := startServe(t, home, "")
	c := client(s)

	var resp *http.Response
	r1, err := c.Responses.New(bg, responses.ResponseNewParams{Model: "spool", Input: input("hello responses")}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	sid := resp.Header.Get("X-Spool-Session-Id")
	wantAnswer(t, r1.OutputText(), "hello responses")
	if r1.Status != "completed" || !strings.HasPrefix(r1.ID, "resp_") || r1.Usage.InputTokens == 0 {
		t.Fatalf("response = %s", r1.RawJSON())
	}

	r2, err := c.Responses.New(bg, responses.ResponseNewParams{Model: "spool", Input: input("second"), PreviousResponseID: sdk.String(r1.ID)}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Header.Get("X-Spool-Session-Id"); got != sid {
		t.Fatalf("a chained response went to %s, want %s", got, sid)
	}
	wantAnswer(t, r2.OutputText(), "second")
	if _, _, _, msgs := transcript(t, home, sid); len(msgs) != 4 || msgs[2].Content != "second" {
		t.Fatalf("chain: %+v", msgs)
	}

	// Continuing from r1 again (older than the latest) branches there.
	r3, err := c.Responses.New(bg, responses.ResponseNewParams{Model: "spool", Input: input("another way"), PreviousResponseID: sdk.String(r1.ID)}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	branch := resp.Header.Get("X-Spool-Session-Id")
	_, _, parent, msgs := transcript(t, home, branch)
	if branch == sid || parent != sid || len(msgs) != 4 || msgs[0].Content != "hello responses" || msgs[2].Content != "another way" {
		t.Fatalf("branch %s of %s (parent %q): %+v", branch, sid, parent, msgs)
	}
	wantAnswer(t, r3.OutputText(), "another way")

	// Streaming: the full event grammar with increasing sequence numbers.
	st := c.Responses.NewStreaming(bg, responses.ResponseNewParams{Model: "spool", Input: input("stream it"), PreviousResponseID: sdk.String(r2.ID)})
	var types []string
	var deltas strings.Builder
	var completed responses.Response
	last := int64(-1)
	for st.Next() {
		ev := st.Current()
		if ev.SequenceNumber != last+1 {
			t.Fatalf("sequence_number %d after %d", ev.SequenceNumber, last)
		}
		last = ev.SequenceNumber
		if len(types) == 0 || types[len(types)-1] != ev.Type {
			types = append(types, ev.Type)
		}
		switch ev.Type {
		case "response.output_text.delta":
			deltas.WriteString(ev.Delta)
		case "response.completed":
			completed = ev.Response
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	want := "response.created,response.in_progress,response.output_item.added,response.content_part.added,response.output_text.delta," +
		"response.output_text.done,response.content_part.done,response.output_item.done,response.completed"
	if strings.Join(types, ",") != want {
		t.Fatalf("events:\n%s\nwant\n%s", strings.Join(types, ","), want)
	}
	wantAnswer(t, deltas.String(), "stream it")
	if completed.OutputText() != deltas.String() || completed.Status != "completed" {
		t.Fatalf("response.completed = %s", completed.RawJSON())
	}

	got, err := c.Responses.Get(bg, r2.ID, responses.ResponseGetParams{})
	if err != nil {
		t.Fatal(err)
	}
	if got.OutputText() != r2.OutputText() || got.Status != "completed" {
		t.Fatalf("retrieved %s", got.RawJSON())
	}
	items, err := c.Responses.InputItems.List(bg, r2.ID, responses.InputItemListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(items.Data) != 1 || !strings.Contains(items.Data[0].RawJSON(), `"second"`) {
		t.Fatalf("input items: %+v", items.Data)
	}

	// conversation names a session.
	if _, err := c.Responses.New(bg, responses.ResponseNewParams{Model: "spool", Input: input("by conversation"),
		Conversation: responses.ResponseNewParamsConversationUnion{OfString: sdk.String(sid)}}); err != nil {
		t.Fatal(err)
	}
	if _, _, _, msgs := transcript(t, home, sid); len(msgs) != 8 || msgs[6].Content != "by conversation" {
		t.Fatalf("conversation: %+v", msgs)
	}

	if err := c.Responses.Delete(bg, r1.ID); err != nil {
		t.Fatal(err)
	}
	_, err = c.Responses.Get(bg, r1.ID, responses.ResponseGetParams{})
	apiError(t, err, 404, "not_found")
	_, err = c.Responses.New(bg, responses.ResponseNewParams{Model: "spool", Input: input("x"), PreviousResponseID: sdk.String("resp_nope")})
	apiError(t, err, 404, "not_found")
}
