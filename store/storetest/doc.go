// Package storetest is the conformance suite of spool's store backends, split in tiers that
// follow the store's domains. A backend's tests call the tiers it provides and route TestMain
// through Main, so the suite can start real OS processes (concurrent writers, a writer killed
// mid-write) against the same database.
//
// Tiers:
//
//   - Base (BaseHarness, BaseBackend): store.Sessions, store.Transcript and store.Searcher, with
//     store.LeaseTaker (undo and hide take a store.Fence, which only a lease gives) — sessions,
//     titles, resolve, messages, fenced undo and hide, lineage and branch, listing, paging and
//     search. A third-party backend that keeps only chat history implements these and passes
//     Base alone; where a base test meets an extended domain (archived rows) it checks that part
//     only when the backend provides that domain too.
//   - Leases (store.Leaser): fencing, BeginTurn and CommitTurn, held leases, concurrent writers
//     in goroutines and processes, delegate children.
//   - Compaction (store.Compactor): archive-and-compact, rotation, compaction copies, locks.
//   - Platform (store.PlatformState): routes, inbox, send ledger, read cursors.
//   - API (store.APIState): idempotency keys.
//   - Accounting (store.Accounting): model-call records, usage by day, model cooldowns.
//   - Admin (store.Admin): delete, prune, stats, check, import.
//
// Run runs every tier on a full store.Backend. Controls is the suite's negative control: for
// each tier it reruns the test binary with the backend wrapped so that one promise of the
// tier's domain is broken, and fails unless the tier catches it.
package storetest
