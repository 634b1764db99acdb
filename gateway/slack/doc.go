// Package slack is spool's Slack adapter: a real client of the Slack Web API (base URL
// configurable, so tests point it at a local fake of the API), intake of the Events API over HTTP and of
// Socket Mode over a websocket, and the outbound calls a streamed reply needs.
//
// Intake. Handler serves the Events API endpoint: every request is verified before it is
// read as an event (X-Slack-Signature is v0= hex HMAC-SHA256 of "v0:<timestamp>:<raw body>"
// under the signing secret, compared in constant time; a timestamp more than five minutes from
// the adapter's clock is refused), a url_verification challenge is answered, and an
// event_callback is recorded with the platform Handler (the Router: a durable inbox row; the
// turn runs in the Router's background goroutines) and acknowledged as soon as that returns,
// within 2.5 s (Slack wants the ack within 3 s; not recorded = 503, and Slack redelivers).
// Socket Mode (Config.Socket, inside Run) opens a
// websocket with apps.connections.open and the app-level token, acknowledges an envelope
// by its envelope_id once the Handler recorded it, and reconnects on a disconnect or a "disconnect"
// frame; an envelope the Handler did not record is not acked, so Slack sends it again. Both
// paths produce the same platform.Event, whose EventID is the message's identity
// (team:channel:ts): a redelivered event (Slack retries at once, after 1 and 5 minutes, with
// the same event_id and ts) and a mention delivered as both message and app_mention are
// dropped by the Router's inbox instead of running a second turn. Channels are Group chats,
// messages with a thread_ts Thread chats (ThreadID = thread_ts), im channels DMs; replies go
// to the same channel and thread.
//
// Outbound. Client.PostMessage / Client.Update are chat.postMessage / chat.update (a thread is
// addressed by thread_ts). The adapter's Send and Edit escape &, < and > first, so a reply is
// shown as written and no <!channel>, <!here>, <@user> or <url|label> in it is acted on. A 429
// is retried after its Retry-After however long, through the client's Sleeper (tests inject
// one); a 5xx or a network error is retried a bounded number of times. A chat.postMessage whose
// outcome is unknown (a 5xx, a timeout, a dropped connection: Slack may have posted it) is not
// simply sent again: every post carries a nonce in its message metadata, and before a retry the
// client looks for it in the channel's (or thread's) latest messages, returning the message it
// finds. Under the Router the nonce is the send ledger's (platform.SendKey), so a chunk resent
// by another process after a crash between send and ack (SendKey.Unsure) is looked for first
// too. An ok:false answer is an *APIError naming the method and Slack's error code. Tokens and
// the signing secret come from the environment only and never appear in an error or log.
package slack
