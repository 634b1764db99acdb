package bench

import (
	"os"
	"os/exec"
	"testing"
)

func TestW5Bound(t *testing.T) {
	t.Parallel()
	before := cpuReading{machineBusy: 1000, machineIdle: 500, server: 300, wal: walCounters{syncs: 10, syncMS: 5}}
	// 8 s on 2 cores: 1,500 ticks busy, 100 idle; the server 700 ticks, the workers 5 s.
	after := cpuReading{machineBusy: 2500, machineIdle: 600, server: 1000, wal: walCounters{syncs: 5010, syncMS: 4005}}
	for _, tc := range []struct {
		name    string
		appends int
		w1      float64
		timed   bool
		want    *W5Bound
	}{
		{"flush times tracked", 16000, 1600, true, &W5Bound{Cores: 2, WallS: 8, Appends: 16000, MachineBusyShare: 0.938,
			ServerCPUUSPerAppend: 437.5, ClientsCPUUSPerAppend: 312.5, OtherCPUUSPerAppend: 187.5,
			CPUBoundPerS: 2666.667, W5ShareOfCPUBound: 0.75, MaxRatioToW1: 1.667,
			WALFlushes: 5000, AppendsPerFlush: 3.2, FlushMSMean: 0.8, FlushBusyShare: 0.5}},
		{"no flush times, no W1", 16000, 0, false, &W5Bound{Cores: 2, WallS: 8, Appends: 16000, MachineBusyShare: 0.938,
			ServerCPUUSPerAppend: 437.5, ClientsCPUUSPerAppend: 312.5, OtherCPUUSPerAppend: 187.5,
			CPUBoundPerS: 2666.667, W5ShareOfCPUBound: 0.75, WALFlushes: 5000, AppendsPerFlush: 3.2}},
		{"no appends", 0, 1600, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := w5Bound(before, after, 8, tc.appends, 5, tc.w1, 2, tc.timed)
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Fatalf("w5Bound = %+v\nwant      %+v", got, tc.want)
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
