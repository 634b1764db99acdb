package bench

import (
	"os"
	"os/exec"
	"testing"
)

func TestW5Bound(t *testing.T) {
	t.Parallel()
	// W5: 8 s on 2 cores, 1,500 ticks busy and 100 idle; the server 700 ticks, the workers 5 s.
	w5 := func(timed bool) *cpuSpan {
		return &cpuSpan{
			before: cpuReading{machineBusy: 1000, machineIdle: 500, server: 300, wal: walCounters{syncs: 10, syncMS: 5}},
			after:  cpuReading{machineBusy: 2500, machineIdle: 600, server: 1000, wal: walCounters{syncs: 5010, syncMS: 4005}},
			wallS:  8, appends: 16000, clientsCPUS: 5, timed: timed}
	}
	// W1: 10,000 appends in 6 s; the server 2.5 s, the writer 1.5 s, 0.2 s of other work, 1.5 s
	// of flushes.
	w1 := &cpuSpan{
		before: cpuReading{machineBusy: 0, machineIdle: 0, server: 0, wal: walCounters{syncMS: 100}},
		after:  cpuReading{machineBusy: 420, machineIdle: 780, server: 250, wal: walCounters{syncMS: 1600}},
		wallS:  6, appends: 10000, clientsCPUS: 1.5, timed: true}
	w5Part := W5Bound{Cores: 2, WallS: 8, Appends: 16000, MachineBusyShare: 0.938,
		ServerCPUUSPerAppend: 437.5, ClientsCPUUSPerAppend: 312.5, OtherCPUUSPerAppend: 187.5,
		CPUBoundPerS: 2666.667, W5ShareOfCPUBound: 0.75, WALFlushes: 5000, AppendsPerFlush: 3.2}
	timed := w5Part
	timed.MaxRatioToW1, timed.FlushMSMean, timed.FlushBusyShare = 1.667, 0.8, 0.5
	withW1 := timed
	withW1.W1 = &W1CPU{LatencyUS: 600, ServerCPUUSPerAppend: 250, ClientCPUUSPerAppend: 150, OtherCPUUSPerAppend: 20,
		FlushUSPerAppend: 150, WaitUSPerAppend: 50}
	withW1.ExtraCPUUSPerAppend = 350
	for _, tc := range []struct {
		name   string
		w5, w1 *cpuSpan
		w1PerS float64
		want   *W5Bound
	}{
		{"flush times tracked", w5(true), nil, 1600, &timed},
		{"no flush times, no W1 rate", w5(false), nil, 0, &w5Part},
		{"with W1's account", w5(true), w1, 1600, &withW1},
		{"no W5 account", nil, w1, 1600, nil},
		{"no appends", &cpuSpan{wallS: 8}, nil, 1600, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := w5Bound(tc.w5, tc.w1, 2, tc.w1PerS)
			if (got == nil) != (tc.want == nil) {
				t.Fatalf("w5Bound = %+v, want %+v", got, tc.want)
			}
			if got == nil {
				return
			}
			if (got.W1 == nil) != (tc.want.W1 == nil) || got.W1 != nil && *got.W1 != *tc.want.W1 {
				t.Fatalf("w5Bound W1 = %+v, want %+v", got.W1, tc.want.W1)
			}
			g, w := *got, *tc.want
			g.W1, w.W1 = nil, nil
			if g != w {
				t.Fatalf("w5Bound = %+v\nwant      %+v", g, w)
			}
		})
	}
}

// TestTreeTicksCountsReapedChildren: a child's CPU time moves from the live children to the
// reaped ones when it is waited for, and the tree's total keeps it.
func TestTreeTicksCountsReapedChildren(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc on this system: the W5 CPU accounting reads Linux's /proc")
	}
	me := os.Getpid()
	start, err := treeTicks(me)
	if err != nil {
		t.Fatal(err)
	}
	// A child that burns at least 20 ticks (0.2 s) of CPU, then exits and is reaped.
	cmd := exec.Command("sh", "-c", `s=$(cut -d' ' -f14,15 /proc/$$/stat); i=0; while :; do i=$((i+1)); if [ $((i % 2000)) = 0 ]; then set -- $(cut -d' ' -f14,15 /proc/$$/stat); [ $(($1+$2)) -ge 20 ] && break; fi; done`)
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	end, err := treeTicks(me)
	if err != nil {
		t.Fatal(err)
	}
	if end-start < 20 {
		t.Fatalf("tree ticks went %d -> %d: the reaped child's 20 ticks are missing", start, end)
	}
	busy, idle, err := machineTicks()
	if err != nil || busy <= 0 || idle < 0 {
		t.Fatalf("machineTicks = %d, %d, %v", busy, idle, err)
	}
}
