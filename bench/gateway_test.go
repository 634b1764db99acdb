package bench

import (
	"context"
	"testing"
)

// TestGatewaySmall runs the gateway benchmark scaled down: every turn lands once, in order,
// and the report's figures are filled in.
func TestGatewaySmall(t *testing.T) {
	t.Parallel()
	rep, err := Gateway(context.Background(), GatewayConfig{Dir: t.TempDir(), Clients: 4, Turns: 3, Shared: 2})
	if err != nil {
		t.Fatalf("%v\n%+v", err, rep)
	}
	if rep.Distinct.Turns != 12 || rep.Shared.Turns != 12 || rep.Distinct.Sessions != 4 || rep.Shared.Sessions != 2 {
		t.Fatalf("turns: %+v / %+v", rep.Distinct, rep.Shared)
	}
	// The parts of the time in spool add up to it (means over the same turns; each mean rounded).
	for _, ph := range []GatewayPhase{rep.Distinct, rep.Shared} {
		p := ph.Parts
		sum := p.BeforeTurn.Mean + p.Lease.Mean + p.StoreWrites.Mean + p.StoreReads.Mean + p.Agent.Mean + p.AfterTurn.Mean
		if d := sum - ph.InSpool.Mean; d > 0.01 || d < -0.01 || p.StoreWrites.Mean <= 0 || p.Lease.Mean <= 0 {
			t.Fatalf("parts %+v add up to %.3f ms, time in spool %.3f ms", p, sum, ph.InSpool.Mean)
		}
	}
	if rep.Idle != nil || rep.WritesPerTurn <= 0 || rep.StoreBoundTurnsPerSec <= 0 || rep.RatioToStoreBound <= 0 || rep.TTFB.P50 <= 0 {
		t.Fatalf("report: %+v", rep)
	}
}
