// Package web is the session browser: server-rendered pages (Go code writing through the
// escaping writer of package web/markup, with htmx and one small script vendored as embedded
// assets, no JavaScript build) over a store.
//
// New returns an http.Handler for the pages under Options.Prefix ("/ui"): the sessions list
// (/ui/), one session (/ui/sessions/{id}, #m{message id} for one message), search
// (/ui/search?q=) and usage (/ui/usage). `spool ui` serves it on loopback behind a one-time
// login token; `spool serve` mounts it with a Principal function so each API key sees only its
// principal's sessions. Sub-agent sessions (delegations) are left out of the list, shown in
// their parent's lineage tree, linked from the delegate call that made them, and ranked below the
// other hits of a search page.
//
// The contract:
//   - Reads go through the small Store interface below; writes only through the store calls
//     the CLI makes for the same action (SetTitle, DeleteSession, Branch, CreateSession +
//     AppendBatch, Export). Nothing else is written.
//   - Message content is untrusted: every byte reaches the page escaped (every value a page
//     writes goes through markup.Writer, which escapes all but markup it built), markdown is rendered by
//     a renderer that builds its own tags (no raw HTML, links only to http, https and mailto),
//     control characters are made visible, and a strict Content-Security-Policy forbids inline
//     script and style.
//   - Every state-changing request is a POST from the same origin carrying the CSRF token of
//     package web/signin: bound to the request's sign-in (spool ui's one-time link and spool
//     serve's key login issue into one web/signin table and one cookie), else to its principal.
//   - The sessions list pages over branch trees (store.ListOptions.Trees): a root comes with all
//     its branches, and a filter that matches only a branch shows it under its root.
//   - A session outside the request's principal answers 404, exactly like a missing one.
//   - Live views (server-sent events) poll the store; each stream ends with its request or when
//     the Server is closed.
package web
