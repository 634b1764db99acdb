package openai_test

import (
	"context"
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

var bg = context.Background()

func client(s *server, opts ...option.RequestOption) sdk.Client {
	return sdk.NewClient(append([]option.RequestOption{option.WithBaseURL(s.url + "/v1"), option.WithAPIKey("unused")}, opts...)...)
}

func userMsgs(texts ...string) []sdk.ChatCompletionMessageParamUnion {
	var out []sdk.ChatCompletionMessageParamUnion
	for i, t := range texts {
		if i%2 == 0 {
			out = append(out, sdk.UserMessage(t))
		} else {
			out = append(out, sdk.AssistantMessage(t))
		}
	}
	return out
}

func wantAnswer(t *testing.T, got, said string) {
	t.Helper()
	if !strings.HasPrefix(got, "Answer ") || !strings.Contains(got, said) {
		t.Fatalf("reply %q is not the fake model's answer to %q", got, said)
	}
}

func apiError(t *testing.T, err error, status int, code string) *sdk.Error {
	t.Helper()
	var ae *sdk.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %v is not an *openai.Error", err)
	}
	if ae.StatusCode != status || ae.Code != code {
		t.Fatalf("error = %d %q (%s), want %d %q", ae.StatusCode, ae.Code, ae.Message, status, code)
	}
	return ae
}

// TestChatCompletions drives the offline model through the official Go SDK: one answer, then
// a streamed one with the usage chunk on the same session, which the CLI then lists and shows.
func TestChatCompletions(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := startServe(t, home, "")
	c := client(s)

	var resp *http.Response
	got, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("hello there")}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	sid := resp.Header.Get("X-Spool-Session-Id")
	if sid == "" {
		t.Fatal("no X-Spool-Session-Id on the answer")
	}
	wantAnswer(t, got.Choices[0].Message.Content, "hello there")
	if got.Object != "chat.completion" || got.Choices[0].FinishReason != "stop" || got.Usage.PromptTokens == 0 || got.Usage.TotalTokens != got.Usage.PromptTokens+got.Usage.CompletionTokens {
		t.Fatalf("completion = %+v", got)
	}

	// Streamed, continuing the session by id with only the new message.
	stream := c.Chat.Completions.NewStreaming(bg, sdk.ChatCompletionNewParams{
		Model: "spool", Messages: userMsgs("and now streamed"),
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)},
	}, option.WithHeader("X-Spool-Session-Id", sid))
	var acc sdk.ChatCompletionAccumulator
	chunks, usageChunks := 0, 0
	for stream.Next() {
		ch := stream.Current()
		acc.AddChunk(ch)
		chunks++
		if len(ch.Choices) == 0 {
			usageChunks++
			if ch.Usage.PromptTokens == 0 || !ch.Usage.JSON.PromptTokensDetails.Valid() || !ch.Usage.JSON.CompletionTokensDetails.Valid() {
				t.Fatalf("usage chunk = %s", ch.RawJSON())
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if chunks < 3 || usageChunks != 1 {
		t.Fatalf("%d chunks, %d usage chunks; want several and exactly one", chunks, usageChunks)
	}
	wantAnswer(t, acc.Choices[0].Message.Content, "and now streamed")

	// The CLI sees one api session with both turns, and can continue it.
	src, _, _, msgs := transcript(t, home, sid)
	if src != "api" || len(msgs) != 4 || msgs[2].Content != "and now streamed" {
		t.Fatalf("session %s: source %q, %d messages %+v", sid, src, len(msgs), msgs)
	}
	if out := spoolCLI(t, home, "sessions", "list", "--source", "api"); !strings.Contains(out, sid) {
		t.Fatalf("sessions list --source api does not list %s:\n%s", sid, out)
	}
	spoolCLI(t, home, "run", "--resume", sid, "from the cli")
	got, err = c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "fake", Messages: userMsgs("back over the api")}, option.WithHeader("X-Spool-Session-Id", sid))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, msgs = transcript(t, home, sid); len(msgs) != 8 || msgs[4].Content != "from the cli" {
		t.Fatalf("after a CLI turn and an API turn: %d messages %+v", len(msgs), msgs)
	}

	models, err := c.Models.List(bg)
	if err != nil {
		t.Fatal(err)
	}
	if len(models.Data) < 1 || models.Data[0].ID != "spool" {
		t.Fatalf("models = %+v", models.Data)
	}
}

// TestErrorShapes checks that failures arrive as OpenAI errors the SDK decodes, and that
// errors no retry fixes are not retried.
func TestErrorShapes(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := startServe(t, home, "serve:\n  max_request_bytes: 4096\n")
	var mu sync.Mutex
	attempts := 0
	c := client(s, option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		mu.Lock()
		attempts++
		mu.Unlock()
		return next(r)
	}))
	cases := []struct {
		name   string
		params sdk.ChatCompletionNewParams
		opts   []option.RequestOption
		status int
		code   string
	}{
		{"unknown model", sdk.ChatCompletionNewParams{Model: "gpt-9", Messages: userMsgs("hi")}, nil, 404, "model_not_found"},
		{"unknown session", sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("hi")}, []option.RequestOption{option.WithHeader("X-Spool-Session-Id", "20200101_000000_abcdef")}, 404, "not_found"},
		{"no messages", sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs()}, nil, 400, "invalid_value"},
		{"last is not the user's", sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("hi", "there")}, nil, 400, "invalid_value"},
		{"too large", sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs(strings.Repeat("x", 5000))}, nil, 413, "request_too_large"},
		{"bad busy policy", sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("hi")}, []option.RequestOption{option.WithHeader("X-Spool-Busy", "sometimes")}, 400, "invalid_value"},
	}
	for _, tc := range cases {
		mu.Lock()
		attempts = 0
		mu.Unlock()
		_, err := c.Chat.Completions.New(bg, tc.params, tc.opts...)
		ae := apiError(t, err, tc.status, tc.code)
		if ae.Message == "" || ae.Type == "" {
			t.Errorf("%s: error without message or type: %s", tc.name, ae.RawJSON())
		}
		mu.Lock()
		if attempts != 1 {
			t.Errorf("%s: the SDK sent %d attempts, want 1 (x-should-retry: false)", tc.name, attempts)
		}
		mu.Unlock()
	}
	// A bad request stored nothing.
	if out := spoolCLI(t, home, "sessions", "list", "--json"); strings.Contains(out, `"id"`) {
		t.Fatalf("bad requests created sessions: %s", out)
	}
}

// TestNoKeysMeansLoopback: without keys a non-loopback address is refused in one line.
func TestNoKeysMeansLoopback(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(spoolBin, "--home", t.TempDir(), "serve", "--listen", "0.0.0.0:0")
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("serve on 0.0.0.0 without keys: %v\n%s", err, out)
	}
	first := strings.SplitN(string(out), "\n", 2)[0]
	if !strings.Contains(first, "refusing to listen on 0.0.0.0:0 without API keys") {
		t.Fatalf("first line = %q", first)
	}
}
