package platform

import (
	"context"
	"net/http"
	"time"
)

// ChatType is the kind of chat an event came from.
type ChatType string

// Chat types (the key's chat-type slot).
const (
	DM      ChatType = "dm"      // a private chat with the bot
	Group   ChatType = "group"   // a group, supergroup or channel
	Channel ChatType = "channel" // a broadcast channel (Slack and Discord channels may use Group)
	Thread  ChatType = "thread"  // a thread or forum topic of a group (ThreadID set)
)

// Valid reports whether t is one of the chat types.
func (t ChatType) Valid() bool {
	switch t {
	case DM, Group, Channel, Thread:
		return true
	}
	return false
}

// Address names a chat lane: where an event came from and where its reply goes.
type Address struct {
	Platform string   // "telegram", "slack", "discord"
	ChatType ChatType //
	// ScopeID is the workspace a chat id is unique in (Slack's team id); "" elsewhere.
	ScopeID string
	ChatID  string
	// ThreadID is the thread or forum topic (Telegram message_thread_id, Slack thread_ts,
	// Discord thread channel id); "" for none.
	ThreadID string
	// UserID is the sender (the key's per-user slot, when isolation applies).
	UserID string
}

// Event is one inbound message, decoded by an adapter.
type Event struct {
	Address
	// EventID deduplicates deliveries: unique per platform (Telegram "<chat>:<message_id>" or
	// the update_id, Slack event_id, Discord message id). Required.
	EventID string
	// MessageID is the platform's id of the user's message (a reply may quote it).
	MessageID string
	UserName  string // display name, for the session's origin metadata
	Text      string
	At        time.Time // when the platform says it was sent (zero: unknown)
}

// Limits are a platform's sending limits.
type Limits struct {
	// MaxChars is one message's limit in characters (runes): Telegram 4096, Discord 2000.
	MaxChars int
	// EditEvery is the least time between two edits of a streamed reply in one chat; 0 sends
	// the reply only when it is complete.
	EditEvery time.Duration
}

// Outbound sends to a platform. Implementations honour the platform's rate limits themselves
// (retry_after however long, through an injectable sleeper) and return an error only when a
// send has failed for good or ctx ended.
type Outbound interface {
	// Send posts text to the address's chat (and thread) and returns the new message's id.
	Send(ctx context.Context, to Address, text string) (messageID string, err error)
	// Edit replaces the text of a message the bot sent. An unchanged text is success.
	Edit(ctx context.Context, to Address, messageID, text string) error
	Limits() Limits
}

// Marker is an Outbound that can mark a person's own message. The Router tells the user of a
// message that found its chat busy by a mark where the platform has one (Discord: a ⏳
// reaction, which spends none of the channel's few message creates), else, or when marking
// fails, by a notice message; it takes the mark off once the message's reply is delivered.
// Both are idempotent on the platform (a retry or a second process marks once).
type Marker interface {
	// MarkQueued marks the message messageID in the address's chat as queued.
	MarkQueued(ctx context.Context, to Address, messageID string) error
	// UnmarkQueued takes that mark off.
	UnmarkQueued(ctx context.Context, to Address, messageID string) error
}

// Handler receives an adapter's events (the Router).
type Handler interface {
	// Handle records ev durably and schedules its turn; when it returns nil the adapter may
	// confirm the event to the platform. A duplicate delivery also returns nil.
	Handle(ctx context.Context, ev Event) error
}

// Adapter is one platform's connection.
type Adapter interface {
	Outbound
	// Platform is the adapter's platform name (Address.Platform of its events).
	Platform() string
	// Run takes in events until ctx ends, calling h.Handle for each and confirming an event to
	// the platform only after Handle returned nil. It returns nil when ctx ended, an error when
	// intake cannot go on. Webhook-only adapters block until ctx ends.
	Run(ctx context.Context, h Handler) error
}

// WebhookAdapter is an adapter that also takes events over HTTP; spool serve mounts its
// handler at its pattern (e.g. "/platforms/telegram/webhook") on the serve listener.
type WebhookAdapter interface {
	Adapter
	Webhook(h Handler) (pattern string, handler http.Handler)
}
