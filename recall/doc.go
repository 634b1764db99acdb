// Package recall is the session_search pipeline: it lets a model find and read earlier
// conversations, including history that compaction removed from its context, without writing
// anything and, except for detail=summary, without any model call.
//
// The shape of a request follows from its arguments, in this order: scroll (session_id and
// around_message_id: a window of messages around one message), read (session_id: a whole
// session, or its first 20 and last 10 messages when it is long), browse (no query: recent
// sessions) and discover (query: a title match, then full-text hits grouped by lineage root, the
// caller's own live lineage left out unless the hit was archived by compaction, the top result
// expanded with the messages around its hit). detail=summary turns discover's results into
// focused summaries written for the query by a Summarizer the caller supplies (bounded input and
// output; session id, title and message ids kept); without one, or when it fails, the raw
// results come back with a note. Sessions of the HiddenSources (sub-agent delegations among
// them) never show in discover or browse, except sub-agent sessions when the request sets
// subagents (then ranked below interactive ones, like cron); read and scroll open any session
// by id.
//
// Run always returns one JSON object the model can read, with stable key order; bad input and
// store failures come back as {"success":false,"error":...} with a one-line reason.
package recall
