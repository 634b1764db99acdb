package store

import "time"

// IdempotencyEntry is the stored outcome of a POST made with an Idempotency-Key: the first
// request claims the key (Status 0 while it runs); its outcome is recorded when it finishes,
// and a retry with the same key and body replays it instead of running again.
type IdempotencyEntry struct {
	// Scope is whose key it is (a gateway principal); two scopes never share a key.
	Scope string
	Key   string
	// RequestHash identifies the request body the key was first used with.
	RequestHash string
	// Status is the recorded HTTP status; 0 while the claiming request is still running.
	Status int
	// Response is the recorded response body (opaque to the store).
	Response  []byte
	CreatedAt time.Time
}

// IdempotencyClaim asks to claim Entry's (Scope, Key). An existing entry created before
// ExpireBefore (a finished one) or before StaleBefore (one still pending: its process died)
// is replaced as if absent.
type IdempotencyClaim struct {
	Entry        IdempotencyEntry
	ExpireBefore time.Time
	StaleBefore  time.Time
}
