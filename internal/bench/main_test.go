package bench

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// workerEnv makes the test binary act as a W5 worker process, so the end-to-end test starts real
// OS processes exactly as the CLI's hidden worker command would.
const workerEnv = "SPOOL_BENCH_TEST_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		if err := RunStoreWorker(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
