package store

import (
	"context"
	"time"
)

// Backend is one value that provides every domain: what opens and owns a database (the CLI's
// root, spool.Open, dbcopy, the benchmarks) holds a Backend and closes it. Everything else takes
// only the domains it uses, declared where it is used. Every method is safe for concurrent use,
// and every write is one transaction: it lands whole or not at all.
type Backend interface {
	Sessions
	Transcript
	Searcher
	Leaser
	Compactor
	PlatformState
	APIState
	Accounting
	Admin
	Close() error
}

// Sessions is the session domain: creating, finding, naming, listing and deleting sessions and
// keeping their system prompts. It is the first half of the base tier (storetest.Base): every
// backend provides it.
type Sessions interface {
	// CreateSession creates a session, or returns the existing one unchanged when ns.ID already
	// exists (ensure semantics: an earlier writer's values are never overwritten).
	CreateSession(ctx context.Context, ns NewSession) (Session, error)
	GetSession(ctx context.Context, id string) (Session, error)
	// ResolveSession finds a session by exact id, exact title (the newest "title #N" wins), or
	// unique id prefix. An ambiguous prefix returns *AmbiguousError. Titles are unique per
	// principal: when several principals hold the title, the local principal's ("") wins, then
	// the newest.
	ResolveSession(ctx context.Context, ref string) (Session, error)
	// ResolveSessionOf resolves ref as ResolveSession does, among userID's sessions only: another
	// principal's id, title or prefix is not found (and never named in an *AmbiguousError).
	ResolveSessionOf(ctx context.Context, userID, ref string) (Session, error)
	UpdateSession(ctx context.Context, id string, p SessionPatch) error
	// EndSession stamps ended_at and reason; a session already ended keeps its first stamp.
	EndSession(ctx context.Context, id, reason string) error
	ReopenSession(ctx context.Context, id string) error
	// SetTitle sets a title unique among the sessions of the session's principal (user_id; ""
	// clears it). A title held by a compression ancestor moves to this session; one held by
	// another of the principal's sessions returns *TitleInUseError. Other principals' titles
	// never clash. With WithFence the write is fenced like a history edit (ErrLeaseLost, and
	// the title stays, when the lease is no longer the conversation's).
	SetTitle(ctx context.Context, id, title string, opts ...WriteOption) error
	// NextTitle returns base, or "base #N" numbered after the titles userID's sessions already
	// hold (other principals' titles are not counted).
	NextTitle(ctx context.Context, userID, base string) (string, error)
	// DeleteSession removes a session and its messages; its children lose their parent link,
	// delegate children are deleted with it.
	DeleteSession(ctx context.Context, id string) error
	// SetSystemPrompt stores the prompt once by sha256 and points the session at it.
	SetSystemPrompt(ctx context.Context, id, prompt string) (hash string, err error)
	// SystemPrompt returns the session's stored prompt ("" when none was set).
	SystemPrompt(ctx context.Context, id string) (string, error)
	// ListSessions lists sessions newest activity first.
	ListSessions(ctx context.Context, o ListOptions) ([]SessionListing, error)
}

// Transcript is a session's history and lineage: appending messages, loading what the model sees
// or the whole transcript (paged or not), hiding and undoing rows, and walking parents, children
// and compression chains. It is the second half of the base tier. Appends take WithLease to be
// fenced by a turn lease (see Leaser), or are made unfenced; the edits (undo, hide) require a
// Fence.
type Transcript interface {
	// Append stores one message as an active row and returns its id.
	Append(ctx context.Context, sessionID string, m Message, opts ...WriteOption) (int64, error)
	// AppendBatch stores messages in order in one transaction and returns their ids.
	AppendBatch(ctx context.Context, sessionID string, ms []Message, opts ...WriteOption) ([]int64, error)
	// UndoLastExchange hides the last real user message and everything after it (superseded
	// rows: not shown, not searched, not sent to the model) and returns how many rows it hid.
	// It fails with ErrNotFound when the active history has no user message to undo.
	// The write is fenced by f (see Fence).
	UndoLastExchange(ctx context.Context, sessionID string, f Fence) (int, error)
	// HideMessage removes one shown message (active or archived) from the conversation without
	// destroying it: the row, its compaction copies and, for an assistant message with tool
	// calls, the tool results answering them become superseded rows (kept for audit in ViewAll;
	// not shown, not searched, not sent to the model), counters follow. It returns how many rows
	// it hid. ErrNotFound when the session shows no message id; a summary or a lone tool result
	// is an *InvalidError. The write is fenced by f; AllowClosed lets it reach a session
	// rotated by compression.
	HideMessage(ctx context.Context, sessionID string, id int64, f Fence, opts ...WriteOption) (int, error)
	// Conversation loads a session's messages in id order.
	Conversation(ctx context.Context, sessionID string, v View) ([]Message, error)
	// ConversationPage loads one window of a session's messages in id order (see PageQuery).
	// Unlike Conversation with ViewDisplay it does not fold archived copies of re-inserted head
	// messages: a window shows the rows as stored.
	ConversationPage(ctx context.Context, sessionID string, q PageQuery) ([]Message, error)
	// Children lists direct children of a session, oldest first.
	Children(ctx context.Context, id string) ([]Session, error)
	// Root walks parents while the parent ended with compression; it stops at forks.
	Root(ctx context.Context, id string) (string, error)
	// Chain lists the compression chain that id belongs to, root first, tip last.
	Chain(ctx context.Context, id string) ([]Session, error)
	// ResumeTarget is the session a resume of id should continue: the live compression tip.
	ResumeTarget(ctx context.Context, id string) (string, error)
	// Branch copies the active history of parentID into a new child session in one transaction.
	Branch(ctx context.Context, parentID string, child NewSession) (Session, error)
}

// Searcher is full-text search over every session's messages, with filters and ranking. It is
// the third part of the base tier.
type Searcher interface {
	// Search runs a full-text query over user, assistant and tool text, archived rows included.
	Search(ctx context.Context, q SearchQuery) ([]SearchHit, error)
}

// Leaser is the turn lease of a conversation, with fencing generations: one holder at a time
// writes a conversation's history. BeginTurn and CommitTurn live here rather than in Transcript
// because both take or need a Lease: they are the turn's writes, and a backend without leases
// has no turn to commit.
type Leaser interface {
	// NamedLeaser: named leases for single-holder jobs (a platform's poller).
	NamedLeaser
	// AcquireLease takes the turn lease of the conversation sessionID belongs to, for ttl. A
	// free, expired or provably dead holder's lease is taken with the next generation; a live
	// foreign one returns *LeaseHeldError. The same holder acquiring again extends its lease.
	AcquireLease(ctx context.Context, sessionID, holder string, ttl time.Duration) (Lease, error)
	// BeginTurn takes the lease as AcquireLease does and, in the same transaction, appends
	// s.Messages to sessionID under it, in order, as CommitTurn appends them, when s still
	// describes sessionID's active history (its newest active message is s.LastID and it has
	// s.Active active messages) and the session was not closed by compression. It returns the
	// lease and the messages' ids. Nil ids and a nil error: the lease is taken but nothing was
	// appended, because the history had moved on (the caller reloads it and appends under the
	// lease). Any error (a live foreign holder's *LeaseHeldError among them) leaves nothing
	// written: neither the lease nor a message.
	BeginTurn(ctx context.Context, sessionID, holder string, ttl time.Duration, s TurnStart) (Lease, []int64, error)
	// RenewLease extends l by ttl if it is still current, even after it expired (nobody took
	// it); otherwise it returns ErrLeaseLost.
	RenewLease(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// ReleaseLease gives l up if it is still current; releasing a lost lease is not an error.
	ReleaseLease(ctx context.Context, l Lease) error
	// HeldLeases lists the turn leases held right now (a holder, not expired), oldest first.
	HeldLeases(ctx context.Context) ([]HeldLease, error)
	// CommitTurn stores one step of a turn in one transaction fenced by l: l must still be the
	// conversation's current lease (else ErrLeaseLost and nothing lands; an expired lease nobody
	// took is renewed, as for any fenced write). In it, w.Messages are appended in order as
	// AppendBatch appends them, each of w.Requests is recorded as RecordRequest records it,
	// w.Patch is applied as UpdateSession applies it, and with w.Release the lease is given up
	// last, as ReleaseLease gives it up (its waiters are woken after the commit). It returns the
	// messages' ids. A TurnWrite with nothing in it and no Release writes nothing.
	CommitTurn(ctx context.Context, sessionID string, l Lease, w TurnWrite) ([]int64, error)
}

// Compactor persists compaction: archive-and-compact in place, rotation to a continuation
// session, and the per-session compression lock that keeps two compressors apart.
type Compactor interface {
	// ArchiveAndCompact replaces the active history in place and returns the new active count.
	// The write is fenced by f (see Fence).
	ArchiveAndCompact(ctx context.Context, req CompactRequest, f Fence) (int, error)
	// RotateCompaction ends the parent with "compression" and creates its continuation, fenced
	// by f.
	RotateCompaction(ctx context.Context, req RotateRequest, f Fence) (Session, error)
	// AcquireCompressionLock takes the session's compression lock for ttl when it is free or stale.
	AcquireCompressionLock(ctx context.Context, sessionID, holder string, ttl time.Duration) (bool, error)
	// RefreshCompressionLock extends a lock this holder still owns, even an expired one.
	RefreshCompressionLock(ctx context.Context, sessionID, holder string, ttl time.Duration) (bool, error)
	ReleaseCompressionLock(ctx context.Context, sessionID, holder string) error
}

// PlatformState is what chat platforms keep between processes: routes (session keys to
// sessions), the inbox of inbound events, per-channel read cursors, per-bot watermarks and the
// send ledger.
type PlatformState interface {
	// Watermarks: a bot's per-platform watermark (what a channel without a cursor is read after).
	Watermarks
	// PutRoute stores the routing entry of r.Key, replacing an earlier one. The session must
	// exist (ErrNotFound otherwise); deleting the session deletes its routes.
	PutRoute(ctx context.Context, r Route) error
	// GetRoute returns the routing entry of a session key, ErrNotFound when there is none.
	GetRoute(ctx context.Context, key string) (Route, error)
	// RoutesTo lists the routes pointing at a session (its chat bindings), by key.
	RoutesTo(ctx context.Context, sessionID string) ([]Route, error)
	// ClaimRoute stores r unless r.Key already has a route; then it returns that route and
	// false, unchanged. Two concurrent claims of one key: exactly one gets true (single-flight
	// of a chat's first session across processes).
	ClaimRoute(ctx context.Context, r Route) (Route, bool, error)
	// RecordInbound inserts e as a pending inbox event claimed by e.Holder until
	// e.ClaimedUntil, unless (Platform, EventID) is known; then it returns the stored event and
	// false, unchanged. Finished events older than InboundRetention are swept a few at a time.
	RecordInbound(ctx context.Context, e InboundEvent) (InboundEvent, bool, error)
	// ClaimInbound takes an unfinished event for holder until now+ttl when its claim is ours,
	// expired, or its holder provably dead; otherwise it returns the event and false.
	ClaimInbound(ctx context.Context, platform, eventID, holder string, ttl time.Duration) (InboundEvent, bool, error)
	// UpdateInbound moves a claimed event on (ErrLeaseLost when u.Holder no longer holds it;
	// ErrNotFound when it is unknown). InboundDone releases the claim.
	UpdateInbound(ctx context.Context, u InboundUpdate) error
	// UnfinishedInbound lists a platform's events not yet done, oldest first (limit 0: 100).
	UnfinishedInbound(ctx context.Context, platform string, limit int) ([]InboundEvent, error)
	// AdvanceReadCursor moves a bot's read cursor of a channel forward to c.LastID, creating it
	// when there is none; an id not after the stored one changes nothing.
	AdvanceReadCursor(ctx context.Context, c ReadCursor) error
	// ReadCursors lists a bot's read cursors, the most recently advanced first.
	ReadCursors(ctx context.Context, platform, bot string) ([]ReadCursor, error)
	// PutSend records (or replaces) one send-ledger entry.
	PutSend(ctx context.Context, e SendEntry) error
	// Sends lists a turn's ledger entries by chunk.
	Sends(ctx context.Context, turnID string) ([]SendEntry, error)
}

// APIState is what the HTTP API keeps between requests: idempotency keys and their stored
// outcomes, response records and conversation metadata.
type APIState interface {
	// APIResponses: what a response id names, a session's latest response, conversation metadata.
	APIResponses
	// ClaimIdempotencyKey inserts c.Entry as a pending claim (Status 0) unless a live entry for
	// (Scope, Key) exists; then it returns that entry and false, unchanged. Two concurrent
	// claims of one key: exactly one gets true.
	ClaimIdempotencyKey(ctx context.Context, c IdempotencyClaim) (IdempotencyEntry, bool, error)
	// CompleteIdempotencyKey records the outcome of a claimed key (status > 0).
	CompleteIdempotencyKey(ctx context.Context, scope, key string, status int, response []byte) error
	// ReleaseIdempotencyKey deletes a pending claim (the request did nothing worth replaying,
	// so a retry runs again); a finished entry is left alone.
	ReleaseIdempotencyKey(ctx context.Context, scope, key string) error
}

// Accounting is the usage accounting of model calls: one record per call, a session's records, and the
// sums per day and model.
type Accounting interface {
	// RecordRequest stores one model call's accounting and adds its usage to the session.
	RecordRequest(ctx context.Context, id string, r RequestRecord) error
	// Requests lists a session's recorded model calls, newest first (limit 0: all).
	Requests(ctx context.Context, id string, limit int) ([]RequestRecord, error)
	// UsageByDay sums recorded model calls per UTC day and model, oldest day first, then model.
	UsageByDay(ctx context.Context, q UsageQuery) ([]UsageRow, error)
}

// Admin is maintenance of the whole database: importing exported sessions, pruning idle ones,
// statistics and integrity checks.
type Admin interface {
	// ImportSession inserts a whole session with its messages as exported (ids of messages are
	// reassigned, order kept). An existing id returns ErrExists and changes nothing.
	ImportSession(ctx context.Context, s Session, prompt string, ms []Message) error
	// Prune deletes the sessions idle since before cutoff, ended or not, and returns how many.
	// Idle means the session's last activity (newest message, else its start) and its
	// compression chain's newest activity are both before cutoff; a conversation whose turn
	// lease is held now is kept.
	Prune(ctx context.Context, cutoff time.Time) (int, error)
	Stats(ctx context.Context) (Stats, error)
	// Check verifies the database's integrity and returns a description of each problem.
	Check(ctx context.Context) ([]string, error)
}

// TurnWrite is what one CommitTurn stores: a turn's messages with the accounting of the model
// calls that made them, its session bookkeeping and, at the turn's end, the lease's release,
// so that a turn's last step is one write transaction instead of four.
type TurnWrite struct {
	Messages []Message
	Requests []RequestRecord // each recorded on the session; their Lease fields are ignored (l fences them)
	Patch    *SessionPatch
	Release  bool
}

// Empty reports whether w stores nothing (Release aside).
func (w TurnWrite) Empty() bool {
	return len(w.Messages) == 0 && len(w.Requests) == 0 && w.Patch == nil
}

// TurnStart is what BeginTurn stores with a turn's lease: the turn's first messages (typically
// the user's message), with the view of the active history they were made for. A turn whose
// messages depend on that history (answers to calls left open) must not land them after another
// one; LastID and Active let the store prove it did not change.
type TurnStart struct {
	Messages []Message
	// LastID is the id of the session's newest active message the caller saw (0: none), Active
	// the number of active messages it saw.
	LastID int64
	Active int
}

// StartOf is the TurnStart of msgs made for the active history h (as Conversation(ViewActive)
// returned it).
func StartOf(h []Message, msgs []Message) TurnStart {
	s := TurnStart{Messages: msgs, Active: len(h)}
	if len(h) > 0 {
		s.LastID = h[len(h)-1].ID
	}
	return s
}

// WriteOptions fence a transcript write.
type WriteOptions struct {
	// Fence, when set, must still be the conversation's current lease (ErrLeaseLost otherwise).
	Fence *Fence
	// AllowClosed permits writing to a session that ended with compression (import, repair).
	AllowClosed bool
}

// WriteOption sets a WriteOptions field.
type WriteOption func(*WriteOptions)

// AllowClosed lets a write land on a session that was rotated by compression.
func AllowClosed() WriteOption { return func(o *WriteOptions) { o.AllowClosed = true } }

// ApplyFenced folds opts into the WriteOptions of a write fenced by f; backends call it for the
// history edits, whose fence is required.
func ApplyFenced(f Fence, opts []WriteOption) WriteOptions {
	w := ApplyWriteOptions(opts)
	w.Fence = &f
	return w
}

// FenceOf is the fence of l, nil when l is nil (an unfenced write).
func FenceOf(l *Lease) *Fence {
	if l == nil {
		return nil
	}
	f := l.Fence()
	return &f
}

// ApplyWriteOptions folds opts into a WriteOptions value; backends call it.
func ApplyWriteOptions(opts []WriteOption) WriteOptions {
	var w WriteOptions
	for _, o := range opts {
		o(&w)
	}
	return w
}
