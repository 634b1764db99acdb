// Package store owns spool's durable data model: sessions, their messages, lineage, compaction
// persistence, search, and the errors callers branch on. It states the contract; backends
// (store/sqlite, store/postgres) implement it and prove it with the shared conformance suite in
// store/storetest. Nothing in this package speaks SQL.
//
// Transcripts are always ordered by message id, never by timestamp. Only active rows are what the
// model sees; compaction archives rows (still searchable and displayable) instead of deleting them.
package store
