package compress_test

import (
	"fmt"
	"log"

	"github.com/spoolhq/spool/compress"
)

// The compaction trigger of a model: the prompt size at which the agent compacts before
// sending, here for a 4,000-token window and a 200,000-token one.
func ExampleResolve() {
	for _, window := range []int{4_000, 200_000} {
		r, err := compress.Resolve(compress.DefaultConfig(), compress.Model{Name: "my-model", ContextLength: window})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("window %d: compact at %d tokens\n", window, r.Tokens)
	}
	// Output:
	// window 4000: compact at 3400 tokens
	// window 200000: compact at 150000 tokens
}
