package cli

import (
	"github.com/spoolhq/spool/gateway"
	"github.com/spoolhq/spool/gateway/platform"
	"github.com/spoolhq/spool/store"
)

// The command line opens and owns one store.Backend (app.openStore); each command and helper
// takes only the domains it uses, declared here when more than one is needed.

// chatStore is what an interactive chat uses: the agent's domains (a /compact and a turn run
// through package turn), search for /search, and what /handoff needs (handoffStore). Of a
// backend it leaves out maintenance (store.Admin).
type chatStore interface {
	handoffStore
	store.Sessions
	store.Transcript
	store.Compactor
	store.Searcher
	store.Leaser
	store.Accounting
}

// handoffStore is what a handoff uses: it serves the session through a gateway and a platform
// router over one adapter, as spool serve does.
type handoffStore interface {
	gateway.Store
	platformStore
}

// platformStore is what the platforms of spool serve use: the router's state and each
// adapter's named leases, read cursors and watermarks.
type platformStore interface {
	platform.Store
	platform.Leases
	platform.Cursors
}

// runStore is what a one-shot run's output reads: the session and who holds its lease.
type runStore interface {
	store.Sessions
	store.Leaser
}

var (
	_ runStore     = store.Backend(nil)
	_ chatStore    = store.Backend(nil)
	_ handoffStore = store.Backend(nil)
)
