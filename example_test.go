package spool_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/spoolhq/spool"
	"github.com/spoolhq/spool/provider/fake"
)

// A chat's history kept in spool while your own code talks to the model.
func Example() {
	ctx := context.Background()
	db, err := spool.Open(ctx, spool.Memory) // or "chat.db", or a postgres:// URL
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	s, err := db.NewSession(ctx, "support")
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Append(ctx, spool.UserMessage("My order 1042 has not arrived."),
		spool.AssistantMessage("Sorry about that! Order 1042 left the depot on Monday.")); err != nil {
		log.Fatal(err)
	}
	history, err := s.Load(ctx) // send this to your model, then Append its answer
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range history {
		fmt.Printf("%s: %s\n", m.Role, m.Content)
	}
	hits, err := s.Search(ctx, "depot", 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("search depot:", len(hits), "hit")
	// Output:
	// user: My order 1042 has not arrived.
	// assistant: Sorry about that! Order 1042 left the depot on Monday.
	// search depot: 1 hit
}

// One turn of spool's agent loop with a model client (here the offline model) and the
// caller's own system prompt.
func ExampleAgent_Run() {
	ctx := context.Background()
	db, err := spool.Open(ctx, spool.Memory)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ag, err := db.NewAgent(spool.AgentOptions{
		Client:       fake.New(fake.Config{}), // your provider.Client
		Model:        "fake",
		SystemPrompt: "You are a terse assistant.",
	})
	if err != nil {
		log.Fatal(err)
	}
	s, err := db.NewSession(ctx, "")
	if err != nil {
		log.Fatal(err)
	}
	res, err := ag.Run(ctx, s, "SAY hello")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Reply)
	fmt.Println("model calls:", res.Calls)
	// Output:
	// hello
	// model calls: 1
}

// Pop undoes the last exchange and Clear every one: the model no longer sees them.
func ExampleSession_Pop() {
	ctx := context.Background()
	db, err := spool.Open(ctx, spool.Memory)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	s, _ := db.NewSession(ctx, "")
	_ = s.Append(ctx, spool.UserMessage("first question"), spool.AssistantMessage("first answer"),
		spool.UserMessage("a typo"), spool.AssistantMessage("an answer to the typo"))
	n, _ := s.Pop(ctx)
	history, _ := s.Load(ctx)
	fmt.Println("popped", n, "kept", len(history))

	n, _ = s.Clear(ctx)
	history, _ = s.Load(ctx)
	fmt.Println("cleared", n, "kept", len(history))
	// Output:
	// popped 2 kept 2
	// cleared 2 kept 0
}

// Compact plans and commits a compaction: the model then sees a summary and the recent
// messages; what was replaced stays searchable.
func ExampleSession_Compact() {
	ctx := context.Background()
	db, err := spool.Open(ctx, spool.Memory)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	s, _ := db.NewSession(ctx, "")
	for i := range 30 {
		_ = s.Append(ctx, spool.UserMessage(fmt.Sprintf("step %d: %s", i, strings.Repeat("details ", 40))),
			spool.AssistantMessage(fmt.Sprintf("done with step %d", i)))
	}
	_ = s.Append(ctx, spool.UserMessage("remember: the deploy key is rotated on Fridays"), spool.AssistantMessage("noted"))
	for i := 30; i < 40; i++ {
		_ = s.Append(ctx, spool.UserMessage(fmt.Sprintf("step %d: %s", i, strings.Repeat("details ", 40))),
			spool.AssistantMessage(fmt.Sprintf("done with step %d", i)))
	}
	c, err := s.Compact(ctx, "my-model", 4000, "")
	if err != nil {
		log.Fatal(err)
	}
	active, _ := s.Load(ctx)
	all, _ := s.Transcript(ctx)
	fmt.Println("compacted:", c.Messages > 0, "active shorter:", len(active) < len(all))
	hits, _ := s.Search(ctx, "deploy key Fridays", 0)
	fmt.Println("still searchable:", len(hits) > 0)
	// Output:
	// compacted: true active shorter: true
	// still searchable: true
}
