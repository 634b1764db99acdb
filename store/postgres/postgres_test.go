package postgres

import (
	"context"
	"log/slog"
	"testing"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/postgres/pgtest"
	"github.com/spoolhq/spool/store/storetest"
)

func TestMain(m *testing.M) {
	storetest.Main(m, openStore)
}

func openStore(ctx context.Context, dsn string) (store.Store, error) {
	return Open(ctx, dsn, Options{Logger: slog.New(slog.DiscardHandler), MaxConns: 8})
}

// TestConformance runs the whole store/storetest suite, process tests included, on a fresh
// database per test.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		NewDSN: func(t *testing.T) string { return pgtest.NewDatabase(t) },
		Open:   openStore,
		// Issue 11 (search correctness) and issue 10 item 4 landed in store/sqlite and the
		// suite first; this backend still has to follow (see store/sqlite/copies.go,
		// search.go and migrations/0006_search_copies.sql for what SQLite does).
		Pending: pending,
	})
}

// pending lists the suite's tests this backend does not pass yet, with the reason.
var pending = map[string]string{
	"SearchLongToolOutput":          "tool searches must read whole tool bodies, not the indexed prefix",
	"SearchCJKOperators":            "OR and NOT in CJK queries (sqlite.CJKGroups)",
	"SearchSortsByTimestamp":        "newest/oldest by message timestamp, not id",
	"SearchHitFields":               "SearchHit.ToolName and Summary",
	"SearchToolCallEnvelope":        "index tool names and argument values only (sqlite.CallsText)",
	"CompactionCopies":              "link compaction copies (copy_of), one hit per original with Copies, display shows the newest copy",
	"DisplayKeepsIdenticalMessages": "display view must not fold distinct identical rows (sqlite.DedupeGenerations is deprecated)",
	"StatsAddUp":                    "Stats.SupersededMessages",
	"Prune":                         "prune by last activity, ended or not",
	"PruneByActivity":               "prune by last activity (own and chain root), keep held leases",
	"RotateEndedParent":             "rotation clears automatic end stamps (store.AutomaticEnd), refuses deliberate ones with ErrSessionEnded",
}

// TestConformancePoolerMode runs the suite again as it runs behind PgBouncer in transaction
// mode: default_query_exec_mode=exec (no prepared statements kept on a server connection).
func TestConformancePoolerMode(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		NewDSN:  func(t *testing.T) string { return pgtest.NewDatabase(t) + "&default_query_exec_mode=exec" },
		Open:    openStore,
		Pending: pending,
	})
}
