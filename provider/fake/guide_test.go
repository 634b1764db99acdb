package fake

import (
	"strings"
	"testing"
)

// TestDescribeListingNamesTheConfig: the guide's answer names the config file it was given,
// and the default home's when it was given none.
func TestDescribeListingNamesTheConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ path, want string }{
		{"", "Configure a provider in ~/.spool/config.yaml "},
		{"/srv/spool-home/config.yaml", "Configure a provider in /srv/spool-home/config.yaml "},
	} {
		got := describeListing("a.txt\nsrc/\n", tc.path)
		if !strings.Contains(got, tc.want) || !strings.Contains(got, "1 directories and 1 files") {
			t.Errorf("describeListing(%q) = %q, want it to contain %q", tc.path, got, tc.want)
		}
	}
}
