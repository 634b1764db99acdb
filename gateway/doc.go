// Package gateway is what every entry point of `spool serve` shares, below the wire format:
// principals and their API keys, session resolution, history matching, the busy policy,
// idempotency, limits, draining and metrics. It runs turns through agent (Runner) and never
// encodes HTTP; gateway/openai does.
//
// Principals. Keys (config serve.keys) map a principal name to the sha256 of its API key;
// Authenticate hashes a presented key and compares in constant time. Every session a principal
// creates carries its name as user_id; a session of another principal is reported as not found
// (ErrNotFound), never as forbidden. Without keys there is one principal, Local (""), which
// owns the sessions the CLI makes too.
//
// Sessions. A request names its session by id (the live compression tip of that id is used),
// by a client-chosen session key (mapped through a store route "api:<principal>:key:<hash>"),
// or by neither: then the key is derived from the principal, the system text and the first user
// message. The messages a client sends are matched against the stored active history (user
// messages and final assistant replies; tool rows and summaries are spool's own): a history
// that only adds a new user message continues the session; one that differs from what is
// stored becomes a branch (relation "branch") holding the stored rows up to the divergence and
// the client's messages after it, and the route moves to the branch. A single user message
// with a session id or key continues that session (a stateful client).
//
// Client tools. Request.ClientTools are offered after the runner's own tools the principal may
// use (Config.Tools); a call of one ends the turn with Result.PendingCalls, and a request whose
// messages end with "tool" messages answers them instead of adding a user message (the agent
// checks that every pending call gets exactly one result). Matching a resent history compares
// user messages and final replies only, so calls and results the client resends are not
// compared; they are stored when the client's history is new to spool (a new session or branch).
//
// Busy. One turn per conversation: in process through a slot per session, across processes
// through the turn lease (the Runner's lease wait). Policies: wait (default: Config.BusyWait,
// then *BusyError, which the HTTP layer answers 409 with Retry-After), reject (at once), queue
// (until the request ends), interrupt (cancel the running turn, then queue).
//
// Turns outlive their requests: a client that disconnects stops hearing events (the Sink is
// detached before Turn returns, so the caller may return), but the turn runs on and stores its
// reply. Drain stops new turns and waits for running ones up to a deadline, then cancels them.
package gateway
