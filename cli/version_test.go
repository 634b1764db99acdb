package cli

import (
	"runtime/debug"
	"testing"
)

func TestBuildVersion(t *testing.T) {
	t.Parallel()
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-12-07T04:00:00Z"}}
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "spool (devel)"},
		{"go install at a tag", &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}}, "spool v0.1.0"},
		{"go install at a commit", &debug.BuildInfo{Main: debug.Module{Version: "v0.1.1-0.20261207040000-0123456789ab"}}, "spool v0.1.1-0.20261207040000-0123456789ab"},
		{"a build in a checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs}, "spool (devel) (commit 0123456789ab, 2026-12-07T04:00:00Z)"},
		{"with local changes", &debug.BuildInfo{Settings: append(vcs[:1:1], debug.BuildSetting{Key: "vcs.modified", Value: "true"})}, "spool (devel) (commit 0123456789ab+dirty)"},
	} {
		if got := buildVersion(c.bi); got != c.want {
			t.Errorf("%s: buildVersion = %q, want %q", c.name, got, c.want)
		}
	}
}
