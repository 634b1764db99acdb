package cli

import (
	"testing"

	"github.com/spoolhq/spool/config"
)

// The gateway's hygiene follows compression.enabled (it fires only when compression is
// enabled); the router's default share applies otherwise.
func TestHygieneFollowsCompressionEnabled(t *testing.T) {
	t.Parallel()
	for _, enabled := range []bool{true, false} {
		cfg := config.Default(t.TempDir())
		cfg.Compression.Enabled = enabled
		if got, off := hygieneAt(cfg), !enabled; (got < 0) != off {
			t.Errorf("compression.enabled %v: HygieneAt %v", enabled, got)
		}
	}
}
