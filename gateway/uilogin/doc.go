// Package uilogin is the browser sign-in of the session browser that `spool serve` mounts at
// /ui/ when API keys are configured: a login page where a person pastes their API key, a
// session cookie, and logout.
//
// The contract:
//   - A request is authenticated by its Bearer key (as the API is) or by its sign-in cookie.
//     Sign-ins live in a web/signin table (Options.SignIns; spool serve shares the session
//     browser's, so pages, actions and sign-out check one cookie and one CSRF rule): a random
//     256-bit token in an HttpOnly, SameSite=Strict cookie (Path=<prefix>/, Secure over TLS),
//     the server keeping only its sha256 with the principal and the expiry (Options.TTL), in
//     memory, so a restart signs everyone out.
//   - Login and logout are POSTs accepted only from the same origin (Origin, else
//     Sec-Fetch-Site); logout also needs the sign-in's CSRF token (the one every page's forms
//     carry: an HMAC of the cookie's token under the table's per-process secret), else 403 and
//     the sign-in stays. A wrong key is 401 and sets nothing. The page that follows login is a
//     path under the prefix, never another site.
//   - A page request without a valid key or cookie is redirected to the login page; other
//     requests (assets, posts, event streams) are 401.
//   - Failed sign-ins (a wrong key on the form, a wrong Bearer key) are counted per client
//     address (the connection's peer, never a forwarding header) in fixed windows: after
//     Options.Attempts failures in Options.Window (10 in 5 minutes) every sign-in from that
//     address, a right key included, is 429 with Retry-After until the window ends. The table of
//     addresses is bounded (Options.MaxTracked).
//   - Without keys there is nothing to sign in to: every request is gateway.Local, and the login
//     page redirects to the browser.
package uilogin
