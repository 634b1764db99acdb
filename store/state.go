package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// NamedLeaser holds named leases: one holder at a time for a job that is not a conversation's
// turn (a platform's poller, a scheduler). A named lease has a fencing generation like a turn
// lease: it grows every time the lease changes hands.
type NamedLeaser interface {
	// AcquireNamedLease takes the lease name for holder until now+ttl. A free, expired or
	// provably dead holder's lease is taken with the next generation; a live foreign one
	// returns *LeaseHeldError (its Name set). The same holder acquiring again extends its
	// lease and keeps its generation.
	AcquireNamedLease(ctx context.Context, name, holder string, ttl time.Duration) (NamedLease, error)
	// RenewNamedLease extends l by ttl if it is still current (same holder and generation),
	// even after it expired when nobody took it; otherwise it returns ErrLeaseLost.
	RenewNamedLease(ctx context.Context, l NamedLease, ttl time.Duration) (NamedLease, error)
	// ReleaseNamedLease gives l up if it is still current; releasing a lost lease is not an
	// error. The row keeps its generation, so a fencing token is never handed out twice.
	ReleaseNamedLease(ctx context.Context, l NamedLease) error
}

// NamedLease is a held named lease.
type NamedLease struct {
	Name       string
	Holder     string
	Generation int64
	ExpiresAt  time.Time
}

// ValidateNamedLease checks a named lease's name and holder before a backend stores them.
func ValidateNamedLease(name, holder string) error {
	switch {
	case name == "":
		return Invalid("name", "empty")
	case len(name) > MaxRouteKey:
		return Invalid("name", "%d bytes, the limit is %d", len(name), MaxRouteKey)
	case holder == "":
		return Invalid("holder", "empty")
	}
	return nil
}

// Watermarks keep a bot's watermark on a platform: a message id before which every message the
// platform delivered while a process was connected has been handed on. A channel without a
// read cursor is read from it after a reconnect (Discord lists channels, not what was missed).
type Watermarks interface {
	// AdvanceWatermark moves the watermark of (w.Platform, w.Bot) forward to w.LastID, creating
	// it when there is none; an id not after the stored one changes nothing. Ids compare as
	// ReadCursor ids do.
	AdvanceWatermark(ctx context.Context, w Watermark) error
	// Watermark returns a bot's watermark, ErrNotFound when it has none.
	Watermark(ctx context.Context, platform, bot string) (Watermark, error)
}

// Watermark is a bot's watermark on a platform.
type Watermark struct {
	Platform  string
	Bot       string
	LastID    string // decimal digits, as ReadCursor.LastID
	UpdatedAt time.Time
}

// Validate checks a watermark before a backend stores it.
func (w Watermark) Validate() error {
	return ReadCursor{Platform: w.Platform, Bot: w.Bot, Channel: "-", LastID: w.LastID}.Validate()
}

// APIResponses keeps the records of an HTTP API's responses (what a response id names) and its
// conversations' client metadata.
type APIResponses interface {
	// PutResponse stores r, replacing the record of r.ID. With r.Latest it also becomes its
	// session's latest response, in the same transaction. The session must exist (ErrNotFound
	// otherwise); deleting the session deletes its responses.
	PutResponse(ctx context.Context, r Response) error
	// GetResponse returns principal's response id, ErrNotFound when principal has none by that
	// id. A response recorded before spool kept a responses table is found too (by the id's
	// LegacyResponseKey) and keeps its id from then on.
	GetResponse(ctx context.Context, principal, id string) (Response, error)
	// LatestResponse returns the id of the response last stored with Latest for sessionID, ""
	// when there is none.
	LatestResponse(ctx context.Context, sessionID string) (string, error)
	// PutConversationMeta stores the client metadata (a JSON object) of principal's session,
	// replacing it. The session must exist (ErrNotFound otherwise).
	PutConversationMeta(ctx context.Context, principal, sessionID string, meta json.RawMessage) error
	// ConversationMeta returns a session's client metadata, nil when none was stored.
	ConversationMeta(ctx context.Context, sessionID string) (json.RawMessage, error)
}

// Response is what an API response id names.
type Response struct {
	ID        string
	Principal string
	SessionID string
	// Status is the API's status of the response (in_progress, completed, …).
	Status string
	// MessageID is the row of the response's answer (0 before it has one).
	MessageID int64
	CreatedAt time.Time
	// Record is the API's own record of the response (a JSON object), stored as given.
	Record json.RawMessage
	// Latest makes PutResponse record r as its session's latest response.
	Latest bool
}

// Validate checks a response before a backend stores it.
func (r Response) Validate() error {
	switch {
	case r.ID == "":
		return Invalid("id", "empty")
	case len(r.ID) > MaxRouteKey:
		return Invalid("id", "%d bytes, the limit is %d", len(r.ID), MaxRouteKey)
	case r.SessionID == "":
		return Invalid("session_id", "empty")
	case len(r.Record) > 0 && !json.Valid(r.Record):
		return Invalid("record", "not JSON")
	}
	return nil
}

// LegacyResponseKey is the key under which a response recorded before the responses table is
// stored until it is next read: spool then kept only a digest of the response's id, so a
// database upgraded in place cannot name such a response by its id until a client does.
func LegacyResponseKey(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "sha256:" + hex.EncodeToString(sum[:16])
}
