// Package platform is the core every chat-platform adapter of `spool serve` plugs into
// (gateway/telegram, gateway/slack, gateway/discord): the inbound Event, the Adapter and
// Outbound contracts, session keys, reply splitting, and the Router that turns an event into a
// turn of the chat's long session and streams the reply back. Adapters own their platform's
// API client, update intake, limits and markup; they never route. The Router never speaks a
// platform's wire format.
//
// Intake. An adapter decodes an update into an Event and calls Handler.Handle. Handle returns
// once the event is durably recorded in the store's inbox (deduplicated by (Platform,
// EventID)); only then may the adapter confirm the update to the platform (Telegram's next
// getUpdates offset, Slack's ack). A redelivered event returns nil again and starts nothing.
// The turn runs in the background; events recorded but not yet answered when a process died
// are picked up by the next Router.Serve on the same database.
//
// Keys. Key(policy, address) is Hermes Agent's session key: namespace, platform,
// chat type, [scope], [chat id], then for DMs [user] [thread] and for groups and threads
// [thread] [user]. DMs are per chat; plain groups are per user by default; threads are
// shared by default (Policy.GroupPerUser, Policy.ThreadPerUser switch it). Every part is
// validated (printable ASCII without ':', '/', '\', or whitespace, not "." or ".."), the whole
// key is at most store.MaxRouteKey bytes and never starts with '/'. A key maps to a session
// through a store route; the route always resolves to the live compression tip, a route whose
// session was ended elsewhere is healed, /new and /reset start a fresh session linked to the
// old one (relation reset, end reason recorded), /stop suspends the lane.
//
// Replies. Outbound.Send posts one message and returns its platform id; Outbound.Edit
// replaces the text of one the bot sent (an unchanged text is success). The Router streams a
// reply by editing at most every Limits.EditEvery per chat and splits it at Limits.MaxChars
// (Split: paragraph, then line, then word boundaries; code fences closed and reopened). Every
// chunk has a send-ledger entry keyed by (turn, chunk): a chunk already sent is edited, never
// sent again, across retries, crashes and redeliveries. Rate limits (Telegram retry_after,
// Discord/Slack 429) are the adapter's to honour inside Send and Edit.
//
// Busy chats. One turn per key at a time. A message arriving during a running turn is
// queued (default; the user is told: by a mark on their message where the Outbound is a
// Marker, else by a notice message) or interrupts the running turn (Policy per platform); it
// is never dropped and never interleaved.
package platform
