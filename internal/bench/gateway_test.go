package bench

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// TestGatewaySmall runs the gateway benchmark scaled down: every turn lands once, in order,
// and the report's figures are filled in.
func TestGatewaySmall(t *testing.T) {
	t.Parallel()
	var cpu, mem bytes.Buffer
	rep, err := Gateway(context.Background(), GatewayConfig{Dir: t.TempDir(), Clients: 4, Turns: 3, Shared: 2, CPUProfile: &cpu, MemProfile: &mem})
	if err != nil {
		t.Fatalf("%v\n%+v", err, rep)
	}
	// Both profiles are written, in pprof's format (gzipped protocol buffers).
	for name, b := range map[string][]byte{"cpu": cpu.Bytes(), "heap": mem.Bytes()} {
		if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Fatalf("%s profile: %d bytes, not gzip", name, len(b))
		}
	}
	if rep.Distinct.CPUPerTurn <= 0 || rep.Shared.CPUPerTurn <= 0 {
		t.Fatalf("CPU a turn: %v / %v", rep.Distinct.CPUPerTurn, rep.Shared.CPUPerTurn)
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
	// Little's law: the closed loop's floor is clients ÷ turns/s, and the measured mean round
	// trip cannot exceed it (each client's round trips fit in the phase's time).
	for _, ph := range []GatewayPhase{rep.Distinct, rep.Shared} {
		want := 4 / ph.TurnsPerSec * 1000
		if d := ph.ClosedLoopFloor - want; ph.ClosedLoopFloor <= 0 || d > want*1e-3 || d < -want*1e-3 {
			t.Fatalf("closed-loop floor %.3f ms at %.3f turns/s, want 4 ÷ turns/s = %.3f ms", ph.ClosedLoopFloor, ph.TurnsPerSec, want)
		}
		if ph.Latency.Mean > ph.ClosedLoopFloor+0.002 {
			t.Fatalf("mean round trip %.3f ms above the closed-loop floor %.3f ms", ph.Latency.Mean, ph.ClosedLoopFloor)
		}
	}
	if ol := rep.OpenLoop; ol != nil {
		p := ol.Parts
		sum := p.BeforeTurn.Mean + p.Lease.Mean + p.StoreWrites.Mean + p.StoreReads.Mean + p.Agent.Mean + p.AfterTurn.Mean
		if d := sum - ol.InSpool.Mean; d > 0.01 || d < -0.01 || p.Lease.Mean <= 0 {
			t.Fatalf("open-loop parts %+v add up to %.3f ms, time in spool %.3f ms", p, sum, ol.InSpool.Mean)
		}
	}
	if ol := rep.OpenLoop; ol == nil || ol.Turns != 12 || ol.FractionOfCapacity != 0.5 || ol.OfferedPerSec <= 0 || ol.InSpool.P50 <= 0 {
		t.Fatalf("open loop: %+v", rep.OpenLoop)
	}
	if rep.Idle != nil || rep.WritesPerTurn <= 0 || rep.StoreBoundTurnsPerSec <= 0 || rep.RatioToStoreBound <= 0 || rep.TTFB.P50 <= 0 {
		t.Fatalf("report: %+v", rep)
	}
}

// A slow store shows in the open-loop figure: every write takes at least 20 ms and a turn makes
// at least two (its lease with its message, its last commit), so no turn spends under 40 ms in
// spool, below capacity or not.
func TestGatewayOpenLoopReportsSlowStore(t *testing.T) {
	t.Parallel()
	const delay = 20 * time.Millisecond
	rep, err := Gateway(context.Background(), GatewayConfig{Dir: t.TempDir(), Clients: 3, Turns: 2, Shared: 1, writeDelay: delay})
	if err != nil {
		t.Fatalf("%v\n%+v", err, rep)
	}
	floor := float64(2*delay) / float64(time.Millisecond)
	if ol := rep.OpenLoop; ol == nil || ol.Turns != 6 || ol.InSpool.P50 < floor || ol.InSpool.P99 < floor {
		t.Fatalf("open loop %+v: want every turn at least %.0f ms in spool", rep.OpenLoop, floor)
	}
	if rep.Distinct.InSpool.P50 < floor {
		t.Fatalf("closed loop %+v: want at least %.0f ms in spool", rep.Distinct.InSpool, floor)
	}
}

func TestClosedLoopFloor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		clients int
		perSec  float64
		want    float64
	}{
		{64, 2000, 32},     // the quiet machine's figure: 32 ms mean, whatever a turn costs
		{64, 12800, 5},     // what a 5 ms mean at 64 clients takes
		{64, 2039, 31.388}, // rounded to 3 decimals
		{1, 500, 2},        // one client: the round trip itself
		{64, 0, 0},         // no throughput: no figure
		{0, 100, 0},        // no clients
		{64, -1, 0},        // nonsense in, no figure out
	} {
		if got := closedLoopFloor(c.clients, c.perSec); got != c.want {
			t.Errorf("closedLoopFloor(%d, %v) = %v, want %v", c.clients, c.perSec, got, c.want)
		}
	}
}
