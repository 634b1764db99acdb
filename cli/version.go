package cli

import (
	"cmp"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spoolhq/spool/store/sqlite"
)

// versionString is what `spool --version` prints: the module version and, when the build
// recorded them, the commit it was built from and that commit's time; then the SQLite library,
// the driver and the Go toolchain.
func versionString() string {
	bi, _ := debug.ReadBuildInfo()
	return fmt.Sprintf("%s · SQLite %s · driver %s · %s %s/%s", buildVersion(bi),
		cmp.Or(sqlite.LibraryVersion(), "unknown"), sqlite.DriverLabel, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// buildVersion is "spool VERSION" from bi (nil: no build info), followed by "(commit
// REVISION[+dirty][, TIME])" when the build recorded its VCS state. `go install …@v0.1.0` records
// the module version and no VCS state; a build in a checkout records the commit and "(devel)".
func buildVersion(bi *debug.BuildInfo) string {
	version, commit, when, dirty := "(devel)", "", "", ""
	if bi != nil {
		version = cmp.Or(bi.Main.Version, version)
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
	if commit == "" {
		return "spool " + version
	}
	return fmt.Sprintf("spool %s (commit %s%s%s)", version, commit, dirty, when)
}
