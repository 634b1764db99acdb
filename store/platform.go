package store

import (
	"encoding/json"
	"time"
)

// InboundState is where a platform event is in its life.
type InboundState string

// Inbound states, in order.
const (
	// InboundPending: recorded, its turn has not run (or ran and was not recorded: a crash).
	InboundPending InboundState = "pending"
	// InboundRunning: its turn is running (or was, in a process that died) on SessionID.
	InboundRunning InboundState = "running"
	// InboundReplied: the turn stored its reply (Reply); not all of it is delivered yet.
	InboundReplied InboundState = "replied"
	// InboundDone: answered and delivered; kept only to deduplicate redeliveries.
	InboundDone InboundState = "done"
)

// Valid reports whether s is one of the states.
func (s InboundState) Valid() bool {
	switch s {
	case InboundPending, InboundRunning, InboundReplied, InboundDone:
		return true
	}
	return false
}

// InboundEvent is one chat-platform event in the gateway's inbox, deduplicated by (Platform,
// EventID): a redelivery finds the row and starts nothing.
type InboundEvent struct {
	Platform   string
	EventID    string
	SessionKey string
	// Payload is the adapter's decoded event (a JSON object), what a recovery replays.
	Payload json.RawMessage
	State   InboundState
	// SessionID is the session the turn ran on (set from running on).
	SessionID string
	// Reply is the turn's final text (set from replied on).
	Reply string
	// Holder owns the event until ClaimedUntil; another process takes it over only after.
	Holder       string
	ClaimedUntil time.Time
	ReceivedAt   time.Time
	UpdatedAt    time.Time
}

// InboundUpdate moves a claimed event on; only its current holder may (ErrLeaseLost
// otherwise). Empty SessionID and Reply leave the stored ones. Release (with State empty:
// the state is kept) gives the claim up, so another process may take the event at once (a
// gateway stopping with events it did not finish).
type InboundUpdate struct {
	Platform, EventID, Holder string
	State                     InboundState
	SessionID                 string
	Reply                     string
	Release                   bool
}

// SendEntry is one send-ledger row: chunk Chunk of turn TurnID's reply went out as platform
// message MessageID (empty while the send is in flight) with text of hash TextHash. A chunk
// with a message id is edited from then on, never sent again.
type SendEntry struct {
	TurnID    string
	Chunk     int
	MessageID string
	TextHash  string
	UpdatedAt time.Time
}

// MaxInboundPayload bounds an inbox payload.
const MaxInboundPayload = 256 << 10

// Validate checks an inbound event before a backend stores it.
func (e InboundEvent) Validate() error {
	switch {
	case e.Platform == "":
		return Invalid("platform", "empty")
	case e.EventID == "":
		return Invalid("event_id", "empty")
	case len(e.EventID) > MaxRouteKey:
		return Invalid("event_id", "%d bytes, the limit is %d", len(e.EventID), MaxRouteKey)
	case len(e.SessionKey) > MaxRouteKey:
		return Invalid("session_key", "%d bytes, the limit is %d", len(e.SessionKey), MaxRouteKey)
	case len(e.Payload) > MaxInboundPayload:
		return Invalid("payload", "%d bytes, the limit is %d", len(e.Payload), MaxInboundPayload)
	}
	if len(e.Payload) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(e.Payload, &obj); err != nil {
			return Invalid("payload", "must be a JSON object: %v", err)
		}
	}
	return nil
}

// Validate checks a send-ledger entry.
func (s SendEntry) Validate() error {
	switch {
	case s.TurnID == "":
		return Invalid("turn_id", "empty")
	case len(s.TurnID) > MaxRouteKey:
		return Invalid("turn_id", "%d bytes, the limit is %d", len(s.TurnID), MaxRouteKey)
	}
	return nil
}

// InboundRetention is how long a finished inbox row (and its ledger) is kept to deduplicate
// redeliveries (Telegram keeps updates 24 h; Slack retries within minutes).
const InboundRetention = 7 * 24 * time.Hour

// ReadCursor is how far a bot has read one of its channels: the newest message id it handed
// on there (Discord: a snowflake). A new connection reads the channel's history after it, so
// messages sent while no process was connected are not lost (a platform that does not replay
// to a new session, as Discord's gateway does not). A channel without a cursor is one the bot
// has never handed a message on from: nothing of its history is replayed.
type ReadCursor struct {
	Platform string
	// Bot is the bot's own id on the platform: two bots on one database keep their own cursors.
	Bot     string
	Channel string
	// LastID is a decimal id (digits only). A cursor never moves back: ids compare as numbers
	// (a longer id is later; of equal length, the bytes decide).
	LastID    string
	UpdatedAt time.Time
}

// MaxCursorID bounds a cursor's LastID (a snowflake has at most 20 digits).
const MaxCursorID = 32

// Validate checks a read cursor before a backend stores it.
func (c ReadCursor) Validate() error {
	for _, f := range []struct{ name, v string }{{"platform", c.Platform}, {"bot", c.Bot}, {"channel", c.Channel}} {
		switch {
		case f.v == "":
			return Invalid(f.name, "empty")
		case len(f.v) > MaxRouteKey:
			return Invalid(f.name, "%d bytes, the limit is %d", len(f.v), MaxRouteKey)
		}
	}
	if c.LastID == "" || len(c.LastID) > MaxCursorID {
		return Invalid("last_id", "must be 1 to %d digits", MaxCursorID)
	}
	for _, r := range c.LastID {
		if r < '0' || r > '9' {
			return Invalid("last_id", "must be decimal digits only")
		}
	}
	return nil
}
