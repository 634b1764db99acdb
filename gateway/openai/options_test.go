package openai_test

import (
	"net/http"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// TestResponsesRequestOptions: instructions reach the model with the turn (not the frozen
// prompt), max_output_tokens cuts the answer (status incomplete; chat: finish_reason length),
// and store: false leaves nothing behind: no session, no retrievable response.
func TestResponsesRequestOptions(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := startServe(t, home, "")
	c := client(s)

	// The fake model obeys a SAY directive anywhere in the user message's wire text.
	r1, err := c.Responses.New(bg, responses.ResponseNewParams{Model: "spool", Input: input("hello"), Instructions: sdk.String("SAY obeyed")})
	if err != nil {
		t.Fatal(err)
	}
	if r1.OutputText() != "obeyed" || r1.Instructions.OfString != "SAY obeyed" {
		t.Fatalf("instructions were not applied: %s", r1.RawJSON())
	}
	// They were this turn's only: the next one on the chain answers plainly.
	r2, err := c.Responses.New(bg, responses.ResponseNewParams{Model: "spool", Input: input("and now"), PreviousResponseID: sdk.String(r1.ID)})
	if err != nil {
		t.Fatal(err)
	}
	wantAnswer(t, r2.OutputText(), "and now")

	long := "SAY " + strings.Repeat("many words here ", 40)
	r3, err := c.Responses.New(bg, responses.ResponseNewParams{Model: "spool", Input: input(long), MaxOutputTokens: sdk.Int(16)})
	if err != nil {
		t.Fatal(err)
	}
	if r3.Status != "incomplete" || r3.IncompleteDetails.Reason != "max_output_tokens" || len(r3.OutputText()) >= len(long)-4 {
		t.Fatalf("max_output_tokens: %s", r3.RawJSON())
	}
	ch, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs(long), MaxCompletionTokens: sdk.Int(16)})
	if err != nil {
		t.Fatal(err)
	}
	if ch.Choices[0].FinishReason != "length" {
		t.Fatalf("chat max_completion_tokens: %s", ch.RawJSON())
	}

	before := spoolCLI(t, home, "sessions", "list", "--json")
	var resp *http.Response
	r4, err := c.Responses.New(bg, responses.ResponseNewParams{Model: "spool", Input: input("forget me"), Store: sdk.Bool(false)}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	wantAnswer(t, r4.OutputText(), "forget me")
	if strings.Contains(r4.RawJSON(), `"store":true`) {
		t.Fatalf("store: false answered as stored: %s", r4.RawJSON())
	}
	if after := spoolCLI(t, home, "sessions", "list", "--json"); after != before {
		t.Fatalf("store: false left a session:\nbefore %s\nafter  %s", before, after)
	}
	_, err = c.Responses.Get(bg, r4.ID, responses.ResponseGetParams{})
	apiError(t, err, 404, "not_found")
	_, err = c.Responses.New(bg, responses.ResponseNewParams{Model: "spool", Input: input("x"), Store: sdk.Bool(false), PreviousResponseID: sdk.String(r2.ID)})
	apiError(t, err, 400, "invalid_value")
	_, err = c.Responses.New(bg, responses.ResponseNewParams{Model: "spool", Input: input("x"), Truncation: "sometimes"})
	apiError(t, err, 400, "invalid_value")
}
