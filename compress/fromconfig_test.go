package compress

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/spoolhq/spool/config"
)

func TestFromConfig(t *testing.T) {
	t.Parallel()
	defaults := DefaultConfig()
	defaults.ModelThresholds = map[string]float64{}
	defaults.ContextTimeout = 120 * time.Second

	custom := config.Default("/home")
	custom.Compression = config.Compression{
		Enabled: false, Threshold: 0.6, ThresholdTokens: 90_000, TargetRatio: 0.3, TargetFill: 0.4, TailMode: "legacy",
		InPlace: false, ProtectLastN: 12, ProtectFirstN: 0, AbortOnSummaryFailure: true,
		ModelThresholds: map[string]float64{"gpt-5": 0.7, "anthropic:sonnet": 0.8}, Engine: "provider",
	}
	custom.Auxiliary.Compression = config.AuxModel{Model: "gpt-5-mini", Timeout: 45 * time.Second, ContextLength: 32_000}
	want := DefaultConfig()
	want.Enabled, want.Threshold, want.ThresholdTokens, want.TargetRatio, want.TargetFill, want.TailMode = false, 0.6, 90_000, 0.3, 0.4, TailLegacy
	want.ProtectLastN, want.ProtectFirstN, want.AbortOnSummaryFailure = 12, 0, true
	want.ModelThresholds = map[string]float64{"gpt-5": 0.7, "anthropic:sonnet": 0.8}
	want.Engine = "provider"
	want.SummaryModel, want.ContextTimeout, want.SummaryContextLength = "gpt-5-mini", 45*time.Second, 32_000
	want.SummaryModelConfig = "|||gpt-5-mini" // provider, base URL, key variable, model

	noTail := config.Default("/home")
	noTail.Compression.TailMode = ""

	for _, tc := range []struct {
		name string
		in   config.Config
		want Config
	}{
		{"built-in defaults agree", config.Default("/home"), defaults},
		{"every key carried", custom, want},
		{"empty tail mode keeps lean", noTail, defaults},
	} {
		got := FromConfig(tc.in)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}

	// The mapping owns a copy: changing the config afterwards changes nothing.
	got := FromConfig(custom)
	custom.Compression.ModelThresholds["gpt-5"] = 0.9
	if got.ModelThresholds["gpt-5"] != 0.7 {
		t.Error("FromConfig shares the model_thresholds map with the config")
	}
}

// TestFromConfigCoversEveryKey fails when config.Compression gains a key: map it in FromConfig
// (or say here why the compressor does not read it), then add it to this list.
func TestFromConfigCoversEveryKey(t *testing.T) {
	t.Parallel()
	var names []string
	for f := range reflect.TypeFor[config.Compression]().Fields() {
		names = append(names, f.Name)
	}
	known := []string{"Enabled", "Threshold", "ThresholdTokens", "TargetRatio", "TargetFill", "TailMode", "InPlace",
		"ProtectLastN", "ProtectFirstN", "AbortOnSummaryFailure", "ModelThresholds", "Engine"}
	slices.Sort(names)
	slices.Sort(known)
	if !slices.Equal(names, known) {
		t.Errorf("config.Compression fields %v, FromConfig knows %v", names, known)
	}
}
