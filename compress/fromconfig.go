package compress

import (
	"maps"
	"strings"

	"github.com/spoolhq/spool/config"
)

// FromConfig maps the `compression.*` and `auxiliary.compression.*` settings onto Config.
// Settings the file format does not have (attempt limits, the user-ask budget, the Codex raise,
// ...) keep DefaultConfig's values. compression.in_place is not the compressor's business: the
// caller that commits the plan reads it.
func FromConfig(c config.Config) Config {
	out := DefaultConfig()
	cc := c.Compression
	out.Enabled = cc.Enabled
	out.Threshold = cc.Threshold
	out.ThresholdTokens = cc.ThresholdTokens
	out.TargetRatio = cc.TargetRatio
	out.TargetFill = cc.TargetFill
	if cc.TailMode != "" {
		out.TailMode = cc.TailMode
	}
	out.ProtectLastN = cc.ProtectLastN
	out.ProtectFirstN = cc.ProtectFirstN
	out.AbortOnSummaryFailure = cc.AbortOnSummaryFailure
	out.ModelThresholds = maps.Clone(cc.ModelThresholds)
	if cc.Engine != "" {
		out.Engine = cc.Engine
	}
	out.SummaryModel = c.Auxiliary.Compression.Model
	if out.SummaryModel != "" {
		p, _ := c.Auxiliary.Compression.ClientFor(c.Provider)
		out.SummaryModelConfig = strings.Join([]string{p.Name, p.BaseURL, p.KeyEnv(), out.SummaryModel}, "|")
	}
	out.SummaryContextLength = c.Auxiliary.Compression.ContextLength
	out.ContextTimeout = c.Auxiliary.Compression.Timeout
	return out
}
