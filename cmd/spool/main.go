// Command spool is the long-session agent engine's command line; see package cli.
package main

import (
	"os"

	"github.com/spoolhq/spool/cli"
)

func main() {
	os.Exit(cli.Execute(os.Args[1:]))
}
