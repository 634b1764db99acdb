// Package replay serves recorded provider responses (testdata fixtures: a body file plus an
// optional NAME.headers.txt holding the status line and headers as recorded) from a real
// httptest server, and records the requests the client under test sent. Test support only.
package replay
