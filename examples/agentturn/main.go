// Command agentturn runs spool's agent loop with the program's own provider client and its own
// tool, on a model with a 4,000-token window: spool compacts the history before a request would
// outgrow it, and keeps what it replaced searchable.
//
//	go run ./examples/agentturn
//
// The client here wraps spool's offline model (provider/fake), so it runs anywhere; a program
// puts its own model API call in myClient.Chat, keeping provider.Client's contract: report the
// real prompt token count, or zero to let spool estimate it.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spoolhq/spool"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/tools"
)

const window = 4000

func main() {
	if err := run(context.Background(), os.Stdout, &myClient{model: fake.New(fake.Config{ContextWindow: window})}); err != nil {
		fmt.Fprintln(os.Stderr, "agentturn:", err)
		os.Exit(1)
	}
}

// myClient is the program's own provider client.
type myClient struct {
	model       provider.Client // stands in for the program's model API
	largestSent int             // the largest prompt sent, in tokens
}

func (c *myClient) Name() string { return "mine" }

func (c *myClient) Chat(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	resp, err := c.model.Chat(ctx, req, onDelta)
	// The contract: Usage.InputTokens is the prompt's real size as the model counted it (or 0).
	c.largestSent = max(c.largestSent, int(resp.Usage.InputTokens))
	return resp, err
}

// orderStatus is the program's own tool: a long answer, so the history grows fast.
func orderStatus() spool.Tool {
	return spool.Tool{
		Name:        "order_status",
		Description: "Look up an order's shipping status by its number.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`),
		Run: func(_ context.Context, _ tools.Env, args json.RawMessage) (string, error) {
			var a struct{ ID string }
			if err := json.Unmarshal(args, &a); err != nil {
				return "", err
			}
			return fmt.Sprintf("order %s: shipped; tracking log: %s", a.ID, strings.Repeat("scanned at depot; ", 150)), nil
		},
	}
}

func run(ctx context.Context, w io.Writer, client *myClient) error {
	db, err := spool.Open(ctx, spool.Memory)
	if err != nil {
		return err
	}
	defer db.Close()
	ag, err := db.NewAgent(spool.AgentOptions{
		Client:        client,
		Model:         "my-model",
		ContextLength: window,
		Tools:         []spool.Tool{orderStatus()},
		SystemPrompt:  "You answer questions about orders. Use order_status to look them up.",
	})
	if err != nil {
		return err
	}
	s, err := db.NewSession(ctx, "orders")
	if err != nil {
		return err
	}
	compactions := 0
	for i := range 8 {
		// The offline model follows scripts: CALL runs a tool, then it answers.
		res, err := ag.Run(ctx, s, fmt.Sprintf(`CALL order_status {"id":"%d"}`, 1040+i))
		if err != nil {
			return err
		}
		compactions += res.Compactions
		fmt.Fprintf(w, "turn %d: %d model calls, %d tool call\n", i+1, res.Calls, res.ToolCalls)
	}
	hits, err := s.Search(ctx, "1040", 0)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "compactions: %d (largest prompt %d tokens)\n", compactions, client.largestSent)
	fmt.Fprintf(w, "largest prompt within the window: %v\n", client.largestSent <= window)
	fmt.Fprintf(w, "the first order still found by search: %v\n", len(hits) > 0)
	return nil
}
