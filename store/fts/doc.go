// Package fts is spool's search language, shared by every backend so they accept the same
// queries and find the same rows: the query sanitizer (user text to a safe FTS5-style MATCH
// expression, never a syntax error), the unicode61-like tokenizer, CJK detection and the reading
// of CJK queries, what of a message the indexes hold (a bounded prefix of tool rows, the values
// of tool-call arguments), and the snippet builders. It is pure Go: no SQL, no I/O. The SQLite
// backend runs the sanitized expression on FTS5 directly; store/postgres translates it to a
// tsquery.
package fts
