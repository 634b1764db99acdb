package platformsoak

import (
	"context"
	"testing"
	"time"
)

// TestPlatformsSoakShort runs the soak briefly with every fault kind, duplicate deliveries,
// bursts into running turns and gateway restarts: nothing lost, duplicated, interleaved or
// mixed up. (The latency figure is reported, not judged: no verdict on wall time.)
func TestPlatformsSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds of soak")
	}
	rep, err := Run(context.Background(), Config{Dir: t.TempDir(), Duration: 6 * time.Second, Lanes: 8, Rate: 8,
		FirstToken: 5 * time.Millisecond, FaultEvery: 150 * time.Millisecond, DupShare: 0.3, BurstShare: 0.2, RestartEvery: 2 * time.Second})
	if rep.Messages == 0 || rep.Telegram == 0 || rep.Slack == 0 || rep.Discord == 0 || rep.Restarts == 0 || rep.DiscordAbrupt == 0 || rep.DuplicateDeliveries == 0 {
		t.Fatalf("the soak did not exercise what it should: %+v (%v)", rep, err)
	}
	if rep.Lost != 0 || rep.DuplicatedSends != 0 || rep.DuplicatedTurns != 0 || rep.Interleaved != 0 || rep.KeysMixed != 0 {
		t.Fatalf("soak: %+v (%v)", rep, err)
	}
	t.Logf("%d messages, %d duplicate deliveries, faults %v, %d restarts, %d queued; added latency idle %+v", rep.Messages,
		rep.DuplicateDeliveries, rep.Faults, rep.Restarts, rep.QueuedNotices, rep.AddedLatency)
}

// TestPlatformsControlScoresBadly: with deduplication defeated (every delivery a fresh event
// id) and every message delivered twice, the soak reports duplicated sends and turns and
// fails — it can tell a bad gateway from a good one.
func TestPlatformsControlScoresBadly(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds of soak")
	}
	rep, err := Run(context.Background(), Config{Dir: t.TempDir(), Duration: 3 * time.Second, Lanes: 4, Rate: 6,
		FirstToken: 5 * time.Millisecond, FaultEvery: -1, DupShare: 1, RestartEvery: -1, NoDedup: true})
	if err == nil || rep.TargetsMet {
		t.Fatalf("the control met the targets: %+v", rep)
	}
	if rep.Messages == 0 || rep.DuplicatedSends == 0 || rep.DuplicatedTurns == 0 {
		t.Fatalf("the control did not show its duplicates: %+v", rep)
	}
}
