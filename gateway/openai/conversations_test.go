package openai_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/responses"
)

func item(text string, role responses.EasyInputMessageRole) responses.ResponseInputItemUnionParam {
	return responses.ResponseInputItemParamOfMessage(text, role)
}

// TestConversationsAndCompact: a conversation is a session: created with items, continued by
// responses, its items paged with cursors (archived rows included after a compaction run
// through /v1/responses/compact), and deleted.
func TestConversationsAndCompact(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := startServe(t, home, "compression:\n  protect_first_n: 1\n  protect_last_n: 2\n")
	c := client(s)

	items := []responses.ResponseInputItemUnionParam{item("we are planning a trip", responses.EasyInputMessageRoleUser), item("noted", responses.EasyInputMessageRoleAssistant)}
	for i := 1; i <= 9; i++ {
		items = append(items, item(fmt.Sprintf("detail %d: %s", i, strings.Repeat("the plan has many parts ", 20)), responses.EasyInputMessageRoleUser),
			item(fmt.Sprintf("ack %d", i), responses.EasyInputMessageRoleAssistant))
	}
	conv, err := c.Conversations.New(bg, conversations.ConversationNewParams{Items: items, Metadata: map[string]string{"topic": "travel"}})
	if err != nil {
		t.Fatal(err)
	}
	if src, _, _, msgs := transcript(t, home, conv.ID); src != "api" || len(msgs) != 20 {
		t.Fatalf("conversation %s: source %q, %+v", conv.ID, src, msgs)
	}
	got, err := c.Conversations.Get(bg, conv.ID)
	if err != nil || !strings.Contains(got.RawJSON(), `"topic":"travel"`) {
		t.Fatalf("get: %+v, %v", got, err)
	}
	if _, err := c.Conversations.Items.New(bg, conv.ID, conversations.ItemNewParams{
		Items: []responses.ResponseInputItemUnionParam{item("the budget is small", responses.EasyInputMessageRoleUser)},
	}); err != nil {
		t.Fatal(err)
	}
	var last *responses.Response
	for _, q := range []string{"where to", "when", "how long", "what to pack"} {
		last, err = c.Responses.New(bg, responses.ResponseNewParams{Model: "spool", Input: input(q),
			Conversation: responses.ResponseNewParamsConversationUnion{OfString: sdk.String(conv.ID)}})
		if err != nil {
			t.Fatal(err)
		}
	}
	wantAnswer(t, last.OutputText(), "what to pack")

	// Items newest first, two at a time, through the SDK's own cursor paging.
	var texts []string
	pager := c.Conversations.Items.ListAutoPaging(bg, conv.ID, conversations.ItemListParams{Limit: sdk.Int(2)})
	for pager.Next() {
		texts = append(texts, firstText(pager.Current().RawJSON()))
	}
	if err := pager.Err(); err != nil {
		t.Fatal(err)
	}
	if len(texts) != 29 || texts[1] != "what to pack" || texts[len(texts)-1] != "we are planning a trip" {
		t.Fatalf("items newest first: %q", texts)
	}
	asc, err := c.Conversations.Items.List(bg, conv.ID, conversations.ItemListParams{Limit: sdk.Int(3), Order: conversations.ItemListParamsOrderAsc})
	if err != nil {
		t.Fatal(err)
	}
	if len(asc.Data) != 3 || !asc.HasMore || !strings.HasPrefix(firstText(asc.Data[2].RawJSON()), "detail 1: ") {
		t.Fatalf("items oldest first: %s", asc.RawJSON())
	}
	one, err := c.Conversations.Items.Get(bg, conv.ID, asc.Data[0].ID, conversations.ItemGetParams{})
	if err != nil || firstText(one.RawJSON()) != "we are planning a trip" {
		t.Fatalf("item get: %v %v", one, err)
	}

	// Compaction through the API: spool's own compactor; the item points at its summary.
	cmp, err := c.Responses.Compact(bg, responses.ResponseCompactParams{Model: "spool", PreviousResponseID: sdk.String(last.ID)})
	if err != nil {
		var ae *sdk.Error
		if errors.As(err, &ae) {
			t.Fatalf("compact: %s", ae.RawJSON())
		}
		t.Fatal(err)
	}
	n := len(cmp.Output)
	if n < 2 || cmp.Output[n-1].Type != "compaction" || !strings.Contains(cmp.Output[n-1].RawJSON(), "spool:session="+conv.ID) {
		t.Fatalf("compact output: %s", cmp.RawJSON())
	}
	_, _, _, msgs := transcript(t, home, conv.ID)
	summaries, archived := 0, 0
	for _, m := range msgs {
		if m.Summary && m.Active {
			summaries++
		}
		if !m.Active {
			archived++
		}
	}
	if summaries != 1 || archived == 0 {
		t.Fatalf("after /v1/responses/compact: %d active summaries, %d archived rows: %+v", summaries, archived, msgs)
	}
	// The chain goes on after the compaction, on the same session.
	next, err := c.Responses.New(bg, responses.ResponseNewParams{Model: "spool", Input: input("after compaction"), PreviousResponseID: sdk.String(last.ID)})
	if err != nil {
		t.Fatal(err)
	}
	if next.Conversation.ID != conv.ID {
		t.Fatalf("after compaction the chain went to %s, want %s", next.Conversation.ID, conv.ID)
	}
	// Archived rows stay listed.
	all, err := c.Conversations.Items.List(bg, conv.ID, conversations.ItemListParams{Limit: sdk.Int(100), Order: conversations.ItemListParamsOrderAsc})
	if err != nil {
		t.Fatal(err)
	}
	if firstText(all.Data[0].RawJSON()) != "we are planning a trip" || firstText(all.Data[len(all.Data)-1].RawJSON()) == "" {
		t.Fatalf("items after compaction: %s", all.RawJSON())
	}

	if _, err := c.Conversations.Delete(bg, conv.ID); err != nil {
		t.Fatal(err)
	}
	_, err = c.Conversations.Get(bg, conv.ID)
	apiError(t, err, 404, "not_found")
}

// firstText is the text of an item's first content part.
func firstText(raw string) string {
	i := strings.Index(raw, `"text":"`)
	if i < 0 {
		return ""
	}
	rest := raw[i+len(`"text":"`):]
	return rest[:strings.Index(rest, `"`)]
}

// TestAutomaticCompaction: a long conversation over the API compacts by itself (the agent's
// preflight), and the chain goes on.
func TestAutomaticCompaction(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := startServe(t, home, "compression:\n  threshold_tokens: 1500\n  protect_first_n: 1\n  protect_last_n: 2\n", "--context-length", "4096")
	c := client(s)
	var items []responses.ResponseInputItemUnionParam
	for i := 1; i <= 10; i++ {
		items = append(items, item(fmt.Sprintf("fact %d: %s", i, strings.Repeat("the long plan continues ", 30)), responses.EasyInputMessageRoleUser),
			item(fmt.Sprintf("ack %d", i), responses.EasyInputMessageRoleAssistant))
	}
	conv, err := c.Conversations.New(bg, conversations.ConversationNewParams{Items: items})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Responses.New(bg, responses.ResponseNewParams{Model: "spool", Input: input("what now"),
		Conversation: responses.ResponseNewParamsConversationUnion{OfString: sdk.String(conv.ID)}})
	if err != nil {
		t.Fatal(err)
	}
	// (The fake model answers the start of the wire text, which after a compaction is spool's
	// reference note, so only the shape of the answer is checked.)
	if !strings.HasPrefix(r.OutputText(), "Answer ") || r.Status != "completed" {
		t.Fatalf("answer after the compaction: %s", r.RawJSON())
	}
	_, _, _, msgs := transcript(t, home, conv.ID)
	summaries := 0
	for _, m := range msgs {
		if m.Summary && m.Active {
			summaries++
		}
	}
	if summaries == 0 {
		t.Fatalf("no automatic compaction: %+v", msgs)
	}
	if _, err := c.Responses.New(bg, responses.ResponseNewParams{Model: "spool", Input: input("and then"), PreviousResponseID: sdk.String(r.ID)}); err != nil {
		t.Fatal(err)
	}
}
