package storetest

import (
	"context"
	"testing"

	"github.com/spoolhq/spool/store"
)

// Harness tells the suite how to reach a backend.
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
}

// open returns a store on a fresh database, closed when the test ends.
func (h Harness) open(t *testing.T) (store.Backend, string) {
	t.Helper()
	dsn := h.NewDSN(t)
	st := h.reopen(t, dsn)
	return st, dsn
}

func (h Harness) reopen(t *testing.T, dsn string) store.Backend {
	t.Helper()
	st, err := h.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("open %s: %v", dsn, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Run runs the whole suite.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"Sessions", testSessions},
		{"ModelCooldowns", testModelCooldowns},
		{"SessionWithFirstMessages", testSessionWithFirstMessages},
		{"Titles", testTitles},
		{"TitlesPerPrincipal", testTitlesPerPrincipal},
		{"Resolve", testResolve},
		{"SystemPromptAndUsage", testPromptAndUsage},
		{"MessageRoundTrip", testMessageRoundTrip},
		{"TextCleaning", testTextCleaning},
		{"BatchAtomic", testBatchAtomic},
		{"Undo", testUndo},
		{"HideMessage", testHideMessage},
		{"CompactInPlace", testCompactInPlace},
		{"ShownCounts", testShownCounts},
		{"CompactFenced", testCompactFenced},
		{"Rotate", testRotate},
		{"ChainActivity", testChainActivity},
		{"Branch", testBranch},
		{"List", testList},
		{"Search", testSearch},
		{"SearchRelevance", testSearchRelevance},
		{"SearchSelectiveFilter", testSearchSelectiveFilter},
		{"SearchNeverErrors", testSearchNeverErrors},
		{"SearchCJK", testSearchCJK},
		{"SearchLongToolOutput", testSearchLongToolOutput},
		{"SearchCJKOperators", testSearchCJKOperators},
		{"SearchSortsByTimestamp", testSearchSortsByTimestamp},
		{"SearchHitFields", testSearchHitFields},
		{"SearchToolCallEnvelope", testSearchToolCallEnvelope},
		{"CompactionCopies", testCompactionCopies},
		{"DisplayKeepsIdenticalMessages", testDisplayKeepsIdenticalMessages},
		{"StatsAddUp", testStatsAddUp},
		{"PruneByActivity", testPruneByActivity},
		{"RotateEndedParent", testRotateEndedParent},
		{"Delete", testDelete},
		{"Delegate", testDelegate},
		{"Prune", testPrune},
		{"Import", testImport},
		{"Routes", testRoutes},
		{"Idempotency", testIdempotency},
		{"ClaimRoute", testClaimRoute},
		{"Inbox", testInbox},
		{"SendLedger", testSendLedger},
		{"ReadCursors", testReadCursors},
		{"StatsAndCheck", testStatsAndCheck},
		{"CompressionLocks", testCompressionLocks},
		{"Leases", testLeases},
		{"CommitTurn", testCommitTurn},
		{"CommitTurnEqualsParts", testCommitTurnEqualsParts},
		{"BeginTurn", testBeginTurn},
		{"BeginTurnEqualsAppend", testBeginTurnEqualsAppend},
		{"HistoryStaysCurrent", testHistoryStaysCurrent},
		{"HeldLeases", testHeldLeases},
		{"ListFilters", testListFilters},
		{"ListTrees", testListTrees},
		{"SearchByUser", testSearchByUser},
		{"ConversationPage", testConversationPage},
		{"UsageByDay", testUsageByDay},
		{"ConcurrentGoroutines", testConcurrentGoroutines},
		{"ConcurrentProcesses", testConcurrentProcesses},
		{"KilledMidWrite", testKilledMidWrite},
	}
	// Not parallel: it replaces the random source of generated ids while nothing else runs.
	t.Run("GeneratedIDs", func(t *testing.T) {
		if why, ok := h.Pending["GeneratedIDs"]; ok {
			t.Skip("pending on this backend: " + why)
		}
		testGeneratedIDs(t, h)
	})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if why, ok := h.Pending[tc.name]; ok {
				t.Skip("pending on this backend: " + why)
			}
			t.Parallel()
			tc.fn(t, h)
		})
	}
}
