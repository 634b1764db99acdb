package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// leaseWorkerEnv makes the test binary a lease worker process. It is checked in init, before
// the package's TestMain, so the worker never runs the tests.
const leaseWorkerEnv = "SPOOL_BENCH_TEST_LEASE_WORKER"

func init() {
	if os.Getenv(leaseWorkerEnv) != "1" {
		return
	}
	if err := RunLeaseWorker(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// The lease benchmark end to end with real worker processes, scaled down: every phase reports
// its operations and the generation check passes. No figure is asserted (that is the
// benchmark's job, not a test's).
func TestLeaseBenchmark(t *testing.T) {
	t.Parallel()
	cfg := LeaseConfig{Iterations: 50, Procs: 3, PerProc: 10, Handovers: 5,
		WorkerExe: os.Args[0], WorkerArgs: []string{"-test.run=^$"}, WorkerEnv: []string{leaseWorkerEnv + "=1"},
		Dir: t.TempDir()}
	var out bytes.Buffer
	if err := RunLease(context.Background(), cfg, &out, true); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	var rep LeaseReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out.String())
	}
	for _, p := range []struct {
		name string
		got  LeasePhase
		n    int
	}{{"uncontended", rep.Uncont, 50}, {"own", rep.OwnConv, 30}, {"shared", rep.SharedCon, 30}} {
		if p.got.N != p.n || p.got.Errors != 0 || p.got.P50 <= 0 || p.got.P99 < p.got.P50 {
			t.Errorf("%s phase: %+v", p.name, p.got)
		}
	}
	if rep.Handover.N != 5 || rep.Handover.P50 <= 0 || !rep.VerifyOK {
		t.Errorf("handover %+v, verify %v", rep.Handover, rep.VerifyOK)
	}
	var text bytes.Buffer
	if err := RunLease(context.Background(), cfg, &text, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "hand-over") || strings.HasPrefix(text.String(), "{") {
		t.Errorf("text report:\n%s", text.String())
	}
}
