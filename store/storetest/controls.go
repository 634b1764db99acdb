package storetest

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

// controlEnv names, in a child process of Controls, the tier to run on a broken backend.
const controlEnv = "SPOOL_STORETEST_CONTROL"

// A control is a negative control of one tier: a backend broken in the tier's domain, and the
// test of the tier that must fail on it.
type control struct {
	tier, test, breaks string
	run                func(t *testing.T, h Harness)
}

// controls are one per tier. Each wrapper breaks one promise of its domain and keeps the rest.
var controls = []control{
	{"Base", "MessageRoundTrip", "Conversation returns messages newest first", func(t *testing.T, h Harness) {
		b := h.Base()
		open := b.Open
		b.Open = func(ctx context.Context, dsn string) (BaseBackend, error) {
			st, err := open(ctx, dsn)
			return reversed{st}, err
		}
		Base(t, b)
	}},
	{"Leases", "Leases", "ReleaseLease keeps the lease", wrapped(Leases, func(b store.Backend) store.Backend { return keptLease{b} })},
	{"Compaction", "CompressionLocks", "a compression lock is granted to every holder", wrapped(Compaction, func(b store.Backend) store.Backend { return openLock{b} })},
	{"Platform", "ClaimRoute", "every route claim wins", wrapped(Platform, func(b store.Backend) store.Backend { return greedyRoutes{b} })},
	{"API", "Idempotency", "every idempotency claim wins", wrapped(API, func(b store.Backend) store.Backend { return greedyKeys{b} })},
	{"Accounting", "UsageByDay", "usage by day is always empty", wrapped(Accounting, func(b store.Backend) store.Backend { return noUsage{b} })},
	{"Admin", "Prune", "prune deletes nothing", wrapped(Admin, func(b store.Backend) store.Backend { return noPrune{b} })},
}

// wrapped runs tier on h's backend wrapped by wrap.
func wrapped(tier func(*testing.T, Harness), wrap func(store.Backend) store.Backend) func(*testing.T, Harness) {
	return func(t *testing.T, h Harness) {
		open := h.Open
		h.Open = func(ctx context.Context, dsn string) (store.Backend, error) {
			st, err := open(ctx, dsn)
			if err != nil {
				return nil, err
			}
			return wrap(st), nil
		}
		tier(t, h)
	}
}

// Controls proves that every tier can fail: for each tier it runs this test binary again, with
// the tier on h's backend broken in that tier's domain, and fails unless the tier's chosen test
// fails there. A backend's test package calls it from a test of its own (named by nothing
// else, as it reruns that test by name), with TestMain routed through Main.
func Controls(t *testing.T, h Harness) {
	if name := os.Getenv(controlEnv); name != "" { // the child: run the broken tier
		for _, c := range controls {
			if c.tier == name {
				t.Run(c.tier, func(t *testing.T) { c.run(t, h) })
			}
		}
		return
	}
	top := strings.SplitN(t.Name(), "/", 2)[0]
	for _, c := range controls {
		t.Run(c.tier, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^"+regexp.QuoteMeta(top)+"$", "-test.count=1", "-test.failfast", "-test.v")
			cmd.Env = append(os.Environ(), controlEnv+"="+c.tier)
			out, err := cmd.CombinedOutput()
			want := "--- FAIL: " + top + "/" + c.tier + "/" + c.test + " "
			if err == nil || !strings.Contains(string(out), want) {
				t.Fatalf("tier %s on a backend where %s: test %s did not fail (exit %v)\n%s", c.tier, c.breaks, c.test, err, tail(out, 40))
			}
		})
	}
}

// tail is the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

type reversed struct{ BaseBackend }

func (r reversed) Conversation(ctx context.Context, sid string, v store.View) ([]store.Message, error) {
	ms, err := r.BaseBackend.Conversation(ctx, sid, v)
	for i, j := 0, len(ms)-1; i < j; i, j = i+1, j-1 {
		ms[i], ms[j] = ms[j], ms[i]
	}
	return ms, err
}

type keptLease struct{ store.Backend }

func (keptLease) ReleaseLease(context.Context, store.Lease) error { return nil }

type openLock struct{ store.Backend }

func (openLock) AcquireCompressionLock(context.Context, string, string, time.Duration) (bool, error) {
	return true, nil
}

type greedyRoutes struct{ store.Backend }

func (g greedyRoutes) ClaimRoute(ctx context.Context, r store.Route) (store.Route, bool, error) {
	return r, true, g.PutRoute(ctx, r)
}

type greedyKeys struct{ store.Backend }

func (g greedyKeys) ClaimIdempotencyKey(ctx context.Context, c store.IdempotencyClaim) (store.IdempotencyEntry, bool, error) {
	e, _, err := g.Backend.ClaimIdempotencyKey(ctx, c)
	return e, true, err
}

type noUsage struct{ store.Backend }

func (noUsage) UsageByDay(context.Context, store.UsageQuery) ([]store.UsageRow, error) {
	return nil, nil
}

type noPrune struct{ store.Backend }

func (noPrune) Prune(context.Context, time.Time) (int, error) { return 0, nil }
