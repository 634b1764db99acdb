package cli

import (
	"cmp"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spoolhq/spool/store/sqlite"
)

// versionString is what `spool --version` prints: the module version, the commit it was built
// from (when the build recorded it), the SQLite library and the driver.
func versionString() string {
	version, commit, when, dirty := "(devel)", "unknown", "", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value[:min(len(s.Value), 12)]
			case "vcs.time":
				when = ", " + s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
	}
	return fmt.Sprintf("spool %s (commit %s%s%s) · SQLite %s · driver %s · %s %s/%s",
		version, commit, dirty, when, cmp.Or(sqlite.LibraryVersion(), "unknown"), sqlite.DriverLabel,
		runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
