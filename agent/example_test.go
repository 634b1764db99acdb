package agent_test

import (
	"context"
	"fmt"
	"log"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/compress"
	"github.com/spoolhq/spool/prompt"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/store/sqlite"
)

// One turn on a new session with the offline model, the caller's own system prompt and
// compaction enabled.
func Example() {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Memory, sqlite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	a, err := agent.New(agent.Deps{Store: st, Client: fake.New(fake.Config{}), Config: agent.Config{
		Model:         "fake",
		ContextLength: 32_000,
		Compression:   compress.DefaultConfig(),
		Prompt:        prompt.Env{Custom: true, SystemMessage: "You are terse."},
	}})
	if err != nil {
		log.Fatal(err)
	}
	res, err := a.Run(ctx, "", "SAY hello", agent.RunOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Reply, res.Calls, len(res.Messages)) // the reply, one model call, two messages stored
	// Output:
	// hello 1 2
}
