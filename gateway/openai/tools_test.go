package openai_test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/spoolhq/spool/gateway"
)

var weatherParams = shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}

func chatTools() []sdk.ChatCompletionToolUnionParam {
	return []sdk.ChatCompletionToolUnionParam{sdk.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "get_weather", Description: sdk.String("Weather of a city."), Parameters: weatherParams,
	})}
}

// roles lists a transcript's roles, calls counted: "assistant(1)".
func shownRoles(msgs []shownMessage) string {
	var out []string
	for _, m := range msgs {
		r := m.Role
		if len(m.ToolCalls) > 0 {
			r += "(" + string(rune('0'+len(m.ToolCalls))) + ")"
		}
		out = append(out, r)
	}
	return strings.Join(out, " ")
}

// TestChatClientTools: a client-declared function tool through the official Go SDK, streamed
// and not. The model's call comes back as tool_calls (finish_reason tool_calls); the client
// resends its whole history with the tool result, and the same session goes on with the
// result stored.
func TestChatClientTools(t *testing.T) {
	t.Parallel()
	for _, streamed := range []bool{false, true} {
		name := "plain"
		if streamed {
			name = "streamed"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			s := startServe(t, home, "")
			c := client(s)
			ask := `CALL get_weather {"city":"Oslo"}`
			msgs := []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage(ask)}

			send := func(msgs []sdk.ChatCompletionMessageParamUnion) (sdk.ChatCompletionMessage, string, string) {
				t.Helper()
				params := sdk.ChatCompletionNewParams{Model: "spool", Messages: msgs, Tools: chatTools()}
				var resp *http.Response
				if !streamed {
					got, err := c.Chat.Completions.New(bg, params, option.WithResponseInto(&resp))
					if err != nil {
						t.Fatal(err)
					}
					return got.Choices[0].Message, string(got.Choices[0].FinishReason), resp.Header.Get("X-Spool-Session-Id")
				}
				st := c.Chat.Completions.NewStreaming(bg, params, option.WithResponseInto(&resp))
				var acc sdk.ChatCompletionAccumulator
				for st.Next() {
					acc.AddChunk(st.Current())
				}
				if err := st.Err(); err != nil {
					t.Fatal(err)
				}
				return acc.Choices[0].Message, string(acc.Choices[0].FinishReason), resp.Header.Get("X-Spool-Session-Id")
			}

			m, finish, sid := send(msgs)
			if finish != "tool_calls" || len(m.ToolCalls) != 1 || m.ToolCalls[0].Function.Name != "get_weather" ||
				m.ToolCalls[0].Function.Arguments != `{"city":"Oslo"}` || m.ToolCalls[0].ID == "" {
				t.Fatalf("first answer: finish %q, message %s", finish, m.RawJSON())
			}
			call := m.ToolCalls[0]
			if _, _, _, got := transcript(t, home, sid); shownRoles(got) != "user assistant(1)" {
				t.Fatalf("stored after the call: %s", shownRoles(got))
			}

			// The usual OpenAI loop: the assistant message goes back with the tool's result.
			msgs = append(msgs, m.ToParam(), sdk.ToolMessage("sunny, 21 C", call.ID))
			m2, finish2, sid2 := send(msgs)
			if sid2 != sid || finish2 != "stop" || len(m2.ToolCalls) != 0 || !strings.Contains(m2.Content, `get_weather returned "sunny, 21 C"`) {
				t.Fatalf("after the result: session %s (want %s), finish %q, %s", sid2, sid, finish2, m2.RawJSON())
			}
			_, _, _, got := transcript(t, home, sid)
			if shownRoles(got) != "user assistant(1) tool assistant" || got[2].ToolCallID != call.ID || got[2].Content != "sunny, 21 C" {
				t.Fatalf("stored after the result: %s %+v", shownRoles(got), got)
			}

			// A result for a call that is not waiting is a 400, and changes nothing.
			bad := append(msgs[:2:2], sdk.ToolMessage("late", "call_unknown"))
			_, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: bad, Tools: chatTools()}, option.WithHeader("X-Spool-Session-Id", sid))
			apiError(t, err, 400, "invalid_value")
			if _, _, _, again := transcript(t, home, sid); len(again) != len(got) {
				t.Fatalf("a refused result changed the session: %s", shownRoles(again))
			}
		})
	}
}

// TestResponsesClientTools: the same loop on the Responses API: function_call output items,
// then function_call_output on previous_response_id, streamed (responses.stream grammar) and not.
func TestResponsesClientTools(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := startServe(t, home, "")
	c := client(s)
	tools := []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "get_weather", Parameters: weatherParams}}}

	var resp *http.Response
	r1, err := c.Responses.New(bg, responses.ResponseNewParams{Model: "spool", Input: input(`CALL get_weather {"city":"Oslo"}`), Tools: tools}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	sid := resp.Header.Get("X-Spool-Session-Id")
	var call responses.ResponseFunctionToolCall
	for _, o := range r1.Output {
		if o.Type == "function_call" {
			call = o.AsFunctionCall()
		}
	}
	if call.CallID == "" || call.Name != "get_weather" || call.Arguments != `{"city":"Oslo"}` || r1.Status != "completed" {
		t.Fatalf("first response: %s", r1.RawJSON())
	}
	// GET returns the same function_call item.
	g1, err := c.Responses.Get(bg, r1.ID, responses.ResponseGetParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(g1.Output) != 1 || g1.Output[0].Type != "function_call" || g1.Output[0].CallID != call.CallID {
		t.Fatalf("GET of a tool-call response: %s", g1.RawJSON())
	}

	// Streamed: the result on previous_response_id, answered through the event grammar.
	out := responses.ResponseInputParam{{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
		CallID: sdk.String(call.CallID), Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: sdk.String("sunny, 21 C")}}}}
	st := c.Responses.NewStreaming(bg, responses.ResponseNewParams{Model: "spool", PreviousResponseID: sdk.String(r1.ID),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: out}, Tools: tools})
	var done responses.Response
	var types []string
	for st.Next() {
		ev := st.Current()
		types = append(types, ev.Type)
		if ev.Type == "response.completed" {
			done = ev.Response
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(done.OutputText(), `get_weather returned "sunny, 21 C"`) || done.Conversation.ID != sid {
		t.Fatalf("streamed answer after the result: %v\n%s", types, done.RawJSON())
	}

	// A streamed call: function_call items through the grammar, then the result, not streamed.
	st = c.Responses.NewStreaming(bg, responses.ResponseNewParams{Model: "spool", PreviousResponseID: sdk.String(done.ID),
		Input: input(`CALL get_weather {"city":"Bergen"}`), Tools: tools})
	types = nil
	var args string
	for st.Next() {
		ev := st.Current()
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.function_call_arguments.done":
			args = ev.Arguments
		case "response.completed":
			done = ev.Response
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	var call2 responses.ResponseFunctionToolCall
	for _, o := range done.Output {
		if o.Type == "function_call" {
			call2 = o.AsFunctionCall()
		}
	}
	if args != `{"city":"Bergen"}` || call2.Name != "get_weather" || call2.Arguments != args {
		t.Fatalf("streamed call: %v\n%s", types, done.RawJSON())
	}
	out[0].OfFunctionCallOutput.CallID = sdk.String(call2.CallID)
	out[0].OfFunctionCallOutput.Output.OfString = sdk.String("rain")
	r4, err := c.Responses.New(bg, responses.ResponseNewParams{Model: "spool", PreviousResponseID: sdk.String(done.ID),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: out}, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r4.OutputText(), `get_weather returned "rain"`) {
		t.Fatalf("after the second result: %s", r4.RawJSON())
	}
	_, _, _, msgs := transcript(t, home, sid)
	if got := shownRoles(msgs); got != "user assistant(1) tool assistant user assistant(1) tool assistant" {
		t.Fatalf("the session holds %s", got)
	}

	// The conversation's items list the calls and their outputs as the Responses API does, with
	// the function_call items' ids those of the responses' output; paging and GET work on them.
	items, err := c.Conversations.Items.List(bg, sid, conversations.ItemListParams{Order: conversations.ItemListParamsOrderAsc})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, it := range items.Data {
		kinds = append(kinds, it.Type)
	}
	want := "message function_call function_call_output message message function_call function_call_output message"
	if got := strings.Join(kinds, " "); got != want || items.Data[1].ID != call.ID || items.Data[1].CallID != call.CallID ||
		items.Data[1].Name != "get_weather" || !strings.Contains(items.Data[1].RawJSON(), `"arguments":"{\"city\":\"Oslo\"}"`) ||
		items.Data[2].CallID != call.CallID || !strings.Contains(items.Data[2].RawJSON(), "sunny, 21 C") || items.Data[5].ID != call2.ID {
		t.Fatalf("items %q, want %q:\n%s", got, want, items.RawJSON())
	}
	page, err := c.Conversations.Items.List(bg, sid, conversations.ItemListParams{Order: conversations.ItemListParamsOrderAsc,
		After: sdk.String(call.ID), Limit: sdk.Int(2)})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 2 || page.Data[0].Type != "function_call_output" || page.Data[1].Type != "message" || !page.HasMore {
		t.Fatalf("the page after %s: %s", call.ID, page.RawJSON())
	}
	desc, err := c.Conversations.Items.List(bg, sid, conversations.ItemListParams{After: sdk.String(items.Data[2].ID), Limit: sdk.Int(5)})
	if err != nil {
		t.Fatal(err)
	}
	if len(desc.Data) != 2 || desc.Data[0].ID != call.ID || desc.Data[1].Type != "message" || desc.HasMore {
		t.Fatalf("newest first after %s: %s", items.Data[2].ID, desc.RawJSON())
	}
	got, err := c.Conversations.Items.Get(bg, sid, call2.ID, conversations.ItemGetParams{})
	if err != nil || got.Type != "function_call" || got.CallID != call2.CallID {
		t.Fatalf("GET %s: %v %v", call2.ID, got, err)
	}
}

// TestOwnToolsPerKey: serve.tools gives alice spool's session_search and memory; bob has none.
// Alice's search finds her sessions and never bob's; her memory lands in her own home; bob's
// model is not offered the tools at all.
func TestOwnToolsPerKey(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cfg := fmt.Sprintf("serve:\n  keys:\n    alice: %s\n    bob: %s\n  tools:\n    alice: session_search memory\n",
		gateway.HashKey("sk-alice"), gateway.HashKey("sk-bob"))
	s := startServe(t, home, cfg)
	alice := client(s, option.WithAPIKey("sk-alice"))
	bob := client(s, option.WithAPIKey("sk-bob"))
	say := func(c sdk.Client, text string) (string, string) {
		t.Helper()
		var resp *http.Response
		got, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs(text)}, option.WithResponseInto(&resp))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Get("X-Spool-Session-Id"), got.Choices[0].Message.Content
	}
	bobSid, _ := say(bob, "my zebrafish notes")
	aliceOld, _ := say(alice, "my zebrafish diary")

	sid, reply := say(alice, `CALL session_search {"query":"zebrafish"}`)
	_, _, _, msgs := transcript(t, home, sid)
	var result string
	for _, m := range msgs {
		if m.Role == "tool" {
			result = m.Content
		}
	}
	if !strings.Contains(reply, "session_search returned") || !strings.Contains(result, aliceOld) || strings.Contains(result, bobSid) {
		t.Fatalf("alice's search (hers %s, bob's %s): reply %q, result %s", aliceOld, bobSid, reply, result)
	}

	_, reply = say(alice, `CALL memory {"action":"add","content":"alice likes tea"}`)
	b, err := os.ReadFile(filepath.Join(home, "principals", "alice", "memories", "MEMORY.md"))
	if err != nil || !strings.Contains(string(b), "alice likes tea") {
		t.Fatalf("alice's memory (reply %q): %v %q", reply, err, b)
	}
	if _, err := os.Stat(filepath.Join(home, "memories", "MEMORY.md")); err == nil {
		t.Fatal("alice's memory was written to the CLI user's memories")
	}

	// Bob's model is offered no tools: the fake model says so and nothing runs.
	sid, reply = say(bob, `CALL memory {"action":"add","content":"bob was here"}`)
	if _, _, _, msgs := transcript(t, home, sid); shownRoles(msgs) != "user assistant" {
		t.Fatalf("bob's turn ran a tool: %s (reply %q)", shownRoles(msgs), reply)
	}
	if _, err := os.Stat(filepath.Join(home, "principals", "bob")); err == nil {
		t.Fatal("bob got a memory directory")
	}
}

// TestServeToolsConfig: a serve.tools entry that names no principal or a tool that is not
// offered over the API stops spool serve with one line.
func TestServeToolsConfig(t *testing.T) {
	t.Parallel()
	cases := []struct{ cfg, want string }{
		{"serve:\n  tools:\n    alice: memory\n", `serve.tools.alice: without serve.keys the only principal is "local"`},
		{"serve:\n  tools:\n    local: terminal\n", `serve.tools.local: "terminal" is not one of spool's tools for API sessions`},
	}
	for _, c := range cases {
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(c.cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(spoolBin, "--home", home, "serve", "--listen", "127.0.0.1:0")
		cmd.Env = cleanEnv()
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(strings.SplitN(string(out), "\n", 2)[0], c.want) {
			t.Errorf("%q: %v, first line of\n%s\nwant %q", c.cfg, err, out, c.want)
		}
	}
}
