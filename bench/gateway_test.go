package bench

import (
	"context"
	"testing"
)

// TestGatewaySmall runs the gateway benchmark scaled down: every turn lands once, in order,
// and the report's figures are filled in.
func TestGatewaySmall(t *testing.T) {
	t.Parallel()
	rep, err := Gateway(context.Background(), GatewayConfig{Dir: t.TempDir(), Clients: 4, Turns: 3, Shared: 2, IdleStreams: 5})
	if err != nil {
		t.Fatalf("%v\n%+v", err, rep)
	}
	if rep.Distinct.Turns != 12 || rep.Shared.Turns != 12 || rep.Distinct.Sessions != 4 || rep.Shared.Sessions != 2 {
		t.Fatalf("turns: %+v / %+v", rep.Distinct, rep.Shared)
	}
	if rep.IdleStreams != 5 || rep.WritesPerTurn <= 0 || rep.StoreBoundTurnsPerSec <= 0 || rep.RatioToStoreBound <= 0 || rep.TTFB.P50 <= 0 {
		t.Fatalf("report: %+v", rep)
	}
}
