// Package telegram is spool serve's Telegram adapter: a real client of the Bot API
// (https://core.telegram.org/bots/api, base URL configurable), update intake by long polling
// or webhook, replies streamed by editMessageText and split at 4,096 characters, and
// Markdown rendered as the HTML subset Telegram accepts. It routes nothing: every update
// becomes a platform.Event for the gateway/platform Router.
//
// Intake. Polling calls getUpdates with the offset after the last update whose Handle
// returned nil, so an update is confirmed to Telegram only once it is durably in the inbox; a
// crash before that gets it redelivered, and the inbox drops the duplicate. One poller per bot
// across replicas: polling runs only while this process holds the store's named lease
// "platform-poller:telegram:<sha256 of the token>" (renewed while polling); other replicas wait
// on standby. Webhook mode registers setWebhook with a secret token and accepts only requests
// carrying it (X-Telegram-Bot-Api-Secret-Token, compared in constant time); any replica may.
//
// Keys. A private chat is a DM keyed by chat id; a group or supergroup message is keyed per
// group (and per user by default); a forum topic message (is_topic_message) is a Thread keyed by
// chat id and message_thread_id, so each topic has its own session, and replies go back to
// the topic. The event id is "<chat id>:<message id>", the same in both intake modes.
//
// Sending. Errors with parameters.retry_after are retried after exactly that wait, however
// long (through an injectable sleeper); 5xx answers, timeouts and network errors are retried
// with backoff a bounded number of times; "message is not modified" is success; a text
// Telegram cannot parse as HTML is sent again as plain text. The bot token is part of every
// request URL and is redacted from every error and log line.
package telegram
