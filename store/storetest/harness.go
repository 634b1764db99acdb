package storetest

import (
	"context"
	"testing"

	"github.com/spoolhq/spool/store"
)

// BaseBackend is what the base tier needs of a backend: sessions, transcripts and search. A
// third-party backend that keeps only chat history provides this much and passes Base alone.
type BaseBackend interface {
	store.Sessions
	store.Transcript
	store.Searcher
	// LeaseTaker: Transcript's edits (undo, hide) take a store.Fence, which only a lease gives,
	// so a backend that keeps history takes and releases the turn leases its fences name.
	store.LeaseTaker
	Close() error
}

// Harness tells the suite how to reach a full backend (every domain).
type Harness struct {
	// NewDSN returns the location of a fresh, empty database for one test (a file path, a
	// database URL). It must be usable from other processes.
	NewDSN func(t *testing.T) string
	// Open opens the database at dsn, creating the schema if needed.
	Open func(ctx context.Context, dsn string) (store.Backend, error)
	// Pending names the suite's tests this backend does not pass yet, each with the reason; they
	// are skipped with it, so the gap shows in every run instead of failing it. A backend is
	// conformant when Pending is empty.
	Pending map[string]string
	// OneProcess says the database is reachable from this process only (an in-memory
	// database): the tests that start other processes on it are skipped, and changes "from
	// another process" come from another handle of this one.
	OneProcess bool
}

// processes skips t when the backend's database cannot be reached from another process.
func (h Harness) processes(t *testing.T) {
	if h.OneProcess {
		t.Skip("the database lives in this process only")
	}
}

// BaseHarness tells the base tier how to reach a backend that may provide only BaseBackend.
type BaseHarness struct {
	// NewDSN and Pending are as in Harness.
	NewDSN  func(t *testing.T) string
	Open    func(ctx context.Context, dsn string) (BaseBackend, error)
	Pending map[string]string
}

// Base returns h as a BaseHarness, for the base tier.
func (h Harness) Base() BaseHarness {
	return BaseHarness{NewDSN: h.NewDSN, Pending: h.Pending, Open: func(ctx context.Context, dsn string) (BaseBackend, error) {
		return h.Open(ctx, dsn)
	}}
}

// open returns a store on a fresh database, closed when the test ends.
func (h Harness) open(t *testing.T) (store.Backend, string) {
	t.Helper()
	dsn := h.NewDSN(t)
	return h.reopen(t, dsn), dsn
}

func (h Harness) reopen(t *testing.T, dsn string) store.Backend {
	t.Helper()
	return openAt(t, h.Open, dsn)
}

func (h BaseHarness) open(t *testing.T) (BaseBackend, string) {
	t.Helper()
	dsn := h.NewDSN(t)
	return openAt(t, h.Open, dsn), dsn
}

// openAt opens dsn with open and closes it when the test ends.
func openAt[B interface{ Close() error }](t *testing.T, open func(context.Context, string) (B, error), dsn string) B {
	t.Helper()
	st, err := open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("open %s: %v", dsn, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// A tier is a named list of the suite's tests over one kind of harness.
type tier[H any] []struct {
	name string
	fn   func(t *testing.T, h H)
}

// run runs each test of the tier as a parallel subtest, skipping the pending ones.
func (tt tier[H]) run(t *testing.T, h H, pending map[string]string) {
	for _, tc := range tt {
		t.Run(tc.name, func(t *testing.T) {
			if why, ok := pending[tc.name]; ok {
				t.Skip("pending on this backend: " + why)
			}
			t.Parallel()
			tc.fn(t, h)
		})
	}
}

// Run runs every tier, each as a subtest named by the tier: Base, then Leases, Compaction,
// Platform, API, Accounting and Admin.
func Run(t *testing.T, h Harness) {
	t.Run("Base", func(t *testing.T) { Base(t, h.Base()) })
	for _, x := range extended {
		t.Run(x.name, func(t *testing.T) { x.tests.run(t, h, h.Pending) })
	}
}

// Base runs the base tier: sessions, transcripts (lineage and branch included) and search. A
// backend that provides only BaseBackend passes it alone.
func Base(t *testing.T, h BaseHarness) {
	// Not parallel: it replaces the random source of generated ids while nothing else runs.
	t.Run("GeneratedIDs", func(t *testing.T) {
		if why, ok := h.Pending["GeneratedIDs"]; ok {
			t.Skip("pending on this backend: " + why)
		}
		testGeneratedIDs(t, h)
	})
	baseTier.run(t, h, h.Pending)
}

// Leases runs the turn-lease tier (store.Leaser): fencing, turns, held leases, and writers in
// several goroutines and processes.
func Leases(t *testing.T, h Harness) { leaseTier.run(t, h, h.Pending) }

// Compaction runs the compaction tier (store.Compactor): archive-and-compact, rotation, copies
// and compression locks.
func Compaction(t *testing.T, h Harness) { compactionTier.run(t, h, h.Pending) }

// Platform runs the platform-state tier (store.PlatformState): routes, inbox, send ledger, read
// cursors.
func Platform(t *testing.T, h Harness) { platformTier.run(t, h, h.Pending) }

// API runs the API-state tier (store.APIState): idempotency keys.
func API(t *testing.T, h Harness) { apiTier.run(t, h, h.Pending) }

// Accounting runs the accounting tier (store.Accounting): model-call records and usage by day.
func Accounting(t *testing.T, h Harness) { accountingTier.run(t, h, h.Pending) }

// Admin runs the maintenance tier (store.Admin): import, prune, stats, check, delete.
func Admin(t *testing.T, h Harness) { adminTier.run(t, h, h.Pending) }

var baseTier = tier[BaseHarness]{
	{"Sessions", testSessions},
	{"SessionWithFirstMessages", testSessionWithFirstMessages},
	{"Titles", testTitles},
	{"TitlesPerPrincipal", testTitlesPerPrincipal},
	{"Resolve", testResolve},
	{"MessageRoundTrip", testMessageRoundTrip},
	{"TextCleaning", testTextCleaning},
	{"BatchAtomic", testBatchAtomic},
	{"Undo", testUndo},
	{"HideMessage", testHideMessage},
	{"Branch", testBranch},
	{"List", testList},
	{"ListFilters", testListFilters},
	{"ListTrees", testListTrees},
	{"ConversationPage", testConversationPage},
	{"Search", testSearch},
	{"SearchRelevance", testSearchRelevance},
	{"SearchRelevanceAtSize", testSearchRelevanceAtSize},
	{"SearchSelectiveFilter", testSearchSelectiveFilter},
	{"SearchNeverErrors", testSearchNeverErrors},
	{"SearchCJK", testSearchCJK},
	{"SearchLongToolOutput", testSearchLongToolOutput},
	{"SearchCJKOperators", testSearchCJKOperators},
	{"SearchSortsByTimestamp", testSearchSortsByTimestamp},
	{"SearchToolCallEnvelope", testSearchToolCallEnvelope},
	{"SearchByUser", testSearchByUser},
	{"DisplayKeepsIdenticalMessages", testDisplayKeepsIdenticalMessages},
}

var leaseTier = tier[Harness]{
	{"Leases", testLeases},
	{"StaleFence", testStaleFence},
	{"CommitTurn", testCommitTurn},
	{"CommitTurnEqualsParts", testCommitTurnEqualsParts},
	{"BeginTurn", testBeginTurn},
	{"BeginTurnEqualsAppend", testBeginTurnEqualsAppend},
	{"HistoryStaysCurrent", testHistoryStaysCurrent},
	{"HeldLeases", testHeldLeases},
	{"NamedLeases", testNamedLeases},
	{"ConcurrentGoroutines", testConcurrentGoroutines},
	{"ConcurrentProcesses", testConcurrentProcesses},
	{"KilledMidWrite", testKilledMidWrite},
	{"Delegate", testDelegate},
}

var compactionTier = tier[Harness]{
	{"CompactInPlace", testCompactInPlace},
	{"ShownCounts", testShownCounts},
	{"CompactFenced", testCompactFenced},
	{"Rotate", testRotate},
	{"ChainActivity", testChainActivity},
	{"CompactionCopies", testCompactionCopies},
	{"RotateEndedParent", testRotateEndedParent},
	{"CompressionLocks", testCompressionLocks},
	{"SearchHitFields", testSearchHitFields},
}

var platformTier = tier[Harness]{
	{"Routes", testRoutes},
	{"ClaimRoute", testClaimRoute},
	{"Inbox", testInbox},
	{"SendLedger", testSendLedger},
	{"ReadCursors", testReadCursors},
	{"Watermarks", testWatermarks},
}

var apiTier = tier[Harness]{
	{"Idempotency", testIdempotency},
	{"Responses", testResponses},
}

var accountingTier = tier[Harness]{
	{"SystemPromptAndUsage", testPromptAndUsage},
	{"UsageByDay", testUsageByDay},
	{"ModelCooldowns", testModelCooldowns},
}

var adminTier = tier[Harness]{
	{"Delete", testDelete},
	{"Prune", testPrune},
	{"PruneByActivity", testPruneByActivity},
	{"StatsAddUp", testStatsAddUp},
	{"StatsAndCheck", testStatsAndCheck},
	{"Import", testImport},
}

// extended are the tiers past the base, in the order Run runs them.
var extended = []struct {
	name  string
	tests tier[Harness]
}{
	{"Leases", leaseTier},
	{"Compaction", compactionTier},
	{"Platform", platformTier},
	{"API", apiTier},
	{"Accounting", accountingTier},
	{"Admin", adminTier},
}
