// Package dbcopy copies a whole spool store from one backend to another (SQLite to PostgreSQL
// and back): every table the backends share, row by row with its ids, timestamps and flags as
// stored, in one consistent read snapshot of the source and one write transaction on the
// target. The copy is all-or-nothing: a failure or a killed process leaves the target as it
// was (empty, or its earlier contents with Replace), and running the copy again starts over.
// Memory is bounded by one batch of rows, whatever the store's size.
//
// The contract with a backend is small: a Source gives a Reader over a snapshot, a Target runs
// a function inside one transaction with a Writer. A backend lists only the tables and columns
// that carry data; what it derives from them (search indexes and their columns, id sequences)
// it rebuilds in Writer.Finish. Turn and named leases are copied released (their generations
// kept, so a fencing token is never handed out twice); compression locks are not copied.
//
// Before committing, the copy reads every table back from the target inside the transaction
// and compares row counts and an order-independent checksum of the values with what it read
// from the source; any difference aborts the transaction.
package dbcopy
