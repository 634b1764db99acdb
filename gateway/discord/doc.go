// Package discord is spool's Discord adapter, on github.com/bwmarrin/discordgo: messages in
// guild channels, threads and DMs arrive over the gateway websocket (HELLO, IDENTIFY with the
// GUILD_MESSAGES, DIRECT_MESSAGES and privileged MESSAGE_CONTENT intents, READY, heartbeats,
// RESUME after a dropped connection, all discordgo's) and become platform.Events; replies go
// out through the REST API (POST and PATCH /channels/{id}/messages), at most 2,000 characters
// per message (the Router splits on paragraph and code boundaries with Limits.MaxChars).
//
// Base URL. discordgo's endpoints are package variables computed once at init from
// "https://discord.com/" (EndpointChannels and the others are not recomputed when
// EndpointDiscord changes), so pointing them at a fake means rewriting every one, process-wide.
// The adapter instead gives its session an HTTP client whose transport rewrites
// https://discord.com/ to the configured base URL: per adapter, parallel-safe, and the gateway
// URL comes from GET /gateway on that base (a fake answers with its own ws:// URL).
//
// Addresses. A message without a guild is a DM (ChatID = the DM channel); one in a thread
// channel (types 10, 11, 12) is a Thread chat with ChatID = the parent channel and ThreadID =
// the thread; any other is a Group chat. The thread's parent is learned from discordgo's state
// or GET /channels/{id} (retried; a message whose channel stays unknown is dropped and
// counted, never guessed into its parent's session), and cached. EventID is the message id (a snowflake). The bot's own
// and other bots' messages are ignored. Events are handed to the Handler in the gateway's
// order (SyncEvents); a Handler that cannot record one is retried a few times, since the
// gateway does not redeliver.
//
// Catch-up (catchup.go). Discord does not replay to a new gateway session what it sent while
// no bot was connected (a crash, the moment of a restart, a reconnect Discord did not let
// resume), and discordgo keeps the session id and sequence a RESUME from the next process
// would need unexported. With Config.Cursors (the store's read cursors: the newest message id
// handed on per channel) every new session (READY) reads each known channel's history after
// its cursor — GET /channels/{id}/messages?after=ID&limit=100, paged; a page comes newest
// first and is sorted — and hands on the people's messages through the same Handler, whose
// inbox drops what it already has. A live message in a channel being read waits and follows
// its history. A channel without a cursor (a first start) replays nothing; a new thread or DM
// gets its cursor with its first message. The cursor moves only past what the Handler took and
// is written in the background.
//
// Sending. Replies to a thread go to the thread. A create carries a nonce with enforce_nonce
// (under the Router derived from the send ledger's platform.SendKey, so the same in every
// process), so a retry after an unsure failure (a 5xx, a timeout, a crash between send and
// ack) returns the message Discord already made instead of a second one. A message queued
// behind a running turn is marked with a ⏳ reaction (platform.Marker), taken off after its
// reply, instead of a notice message that would spend one of the channel's creates.
//
// Rate limits. discordgo paces each route's bucket (per channel) from Discord's
// X-RateLimit-Remaining and Reset-After headers, holding a request until its bucket resets;
// it does not pace Discord's global limit (50 requests a second per bot), so every REST call
// also takes a place in the adapter's own window (Config.GlobalRate, 45 in any second). A 429
// that still comes is waited out for its retry_after however long, through an injectable
// Sleeper (discordgo's own blind retry is off); 5xx are retried a bounded number of times.
//
// The token comes from the environment only and never appears in an error or log.
package discord
