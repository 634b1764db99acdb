// Package signin owns the session browser's sign-ins, whichever way a browser signs in: the
// one-time link `spool ui` prints (package web) and the API-key login of `spool serve`
// (package gateway/uilogin) both issue into a Table, and every page, action and sign-out
// checks against it.
//
// The contract:
//   - One cookie: CookieName, holding a random 256-bit token (hex). The table keeps only the
//     token's sha256 with whom it signs in and its expiry (Options.TTL), in memory: a restart
//     signs everyone out. The cookie is HttpOnly, SameSite=Strict, Path=<prefix>/, Secure when
//     the request came over TLS, and expires with the entry. At most Options.MaxSessions
//     sign-ins are kept; the one closest to expiry goes first.
//   - One CSRF rule: a form's token is an HMAC, under the table's per-process secret, of the
//     request's live sign-in token, so it is bound to that sign-in and a page that cannot read
//     the HttpOnly cookie cannot forge it. A request without a live sign-in (a Bearer key, or no
//     sign-in needed) gets a token bound to whom it acts for instead. Every state-changing form,
//     sign-out included, carries this one token and is checked by CheckCSRF.
//   - SignOut forgets the sign-in server-side and clears the cookie: the old cookie value is
//     dead even where a browser kept it.
package signin
