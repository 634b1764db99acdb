// Package storetest is the conformance suite every store.Backend backend must pass. A backend's
// tests call Run with a Harness that opens fresh databases, and route TestMain through Main so
// the suite can start real OS processes (concurrent writers, a writer killed mid-write) against
// the same database.
package storetest
