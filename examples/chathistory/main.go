// Command chathistory keeps a chat's history in spool while the program calls the model with
// its own client: spool stores, searches and (when asked) compacts the history; the program
// owns the model call. It needs one import besides the standard library.
//
// It talks to any OpenAI-compatible endpoint:
//
//	OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-... MODEL=gpt-4o-mini \
//	  go run ./examples/chathistory "What is a spool?" "Say it shorter."
//
// Without OPENAI_BASE_URL it prints what to set and exits; its test runs it against spool's
// offline model served over HTTP.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/spoolhq/spool"
)

func main() {
	m := chatModel{baseURL: os.Getenv("OPENAI_BASE_URL"), apiKey: os.Getenv("OPENAI_API_KEY"), model: os.Getenv("MODEL")}
	if m.baseURL == "" || m.model == "" {
		fmt.Fprintln(os.Stderr, "chathistory: set OPENAI_BASE_URL and MODEL (and OPENAI_API_KEY) to an OpenAI-compatible endpoint")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Stdout, m, "chat.db", os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "chathistory:", err)
		os.Exit(1)
	}
}

// run sends each input in turn, with the history spool keeps, and stores the answers.
func run(ctx context.Context, w io.Writer, m chatModel, dsn string, inputs []string) error {
	db, err := spool.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	s, err := db.NewSession(ctx, "")
	if err != nil {
		return err
	}
	for _, in := range inputs {
		if err := s.Append(ctx, spool.UserMessage(in)); err != nil {
			return err
		}
		history, err := s.Load(ctx) // what the model sees
		if err != nil {
			return err
		}
		reply, err := m.complete(ctx, history)
		if err != nil {
			return err
		}
		if err := s.Append(ctx, spool.AssistantMessage(reply)); err != nil {
			return err
		}
		fmt.Fprintf(w, "> %s\n%s\n", in, reply)
	}
	all, err := s.Transcript(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "session %s holds %d messages\n", s.ID(), len(all))
	return nil
}

// chatModel is the program's own model client: one POST to /chat/completions.
type chatModel struct {
	baseURL, apiKey, model string
}

func (m chatModel) complete(ctx context.Context, history []spool.Message) (string, error) {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	req := struct {
		Model    string    `json:"model"`
		Messages []message `json:"messages"`
	}{Model: m.model}
	for _, h := range history {
		req.Messages = append(req.Messages, message{h.Role, h.Content})
	}
	body, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, m.baseURL+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	hr.Header.Set("Content-Type", "application/json")
	if m.apiKey != "" {
		hr.Header.Set("Authorization", "Bearer "+m.apiKey)
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		return "", fmt.Errorf("model: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return "", fmt.Errorf("model: %s: %s", resp.Status, b)
	}
	var out struct {
		Choices []struct {
			Message message `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return "", fmt.Errorf("model: %w", err)
	}
	if len(out.Choices) == 0 {
		return "", fmt.Errorf("model: no choices in the answer")
	}
	return out.Choices[0].Message.Content, nil
}
