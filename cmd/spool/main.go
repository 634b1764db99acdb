// Command spool is the long-session agent engine's command line; see package cli.
package main

import (
	"fmt"
	"os"

	"github.com/spoolhq/spool/cli"
)

// dumpableEnv, set to 1, keeps the process dumpable (for a debugger or a profiler, and for the
// memory figures `spool bench gateway` reads from /proc/PID/smaps_rollup of the server it starts).
const dumpableEnv = "SPOOL_DUMPABLE"

func main() {
	if os.Getenv(dumpableEnv) != "1" {
		if err := nonDumpable(); err != nil {
			fmt.Fprintf(os.Stderr, "spool: warning: cannot keep other processes out of this one's memory: %v\n", err)
		}
	}
	os.Exit(cli.Execute(os.Args[1:]))
}
