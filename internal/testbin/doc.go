// Package testbin builds this module's commands for tests that run them as real OS processes.
//
// A test package calls Main from its TestMain with the binaries it always needs; Path builds one
// that only some tests need on its first use. Each command is built at most once per test
// process, into one temporary directory that Main removes when the tests end. A failed build in
// Main exits 1 with the compiler's output; in Path it fails the test that asked. Nothing here is
// imported by non-test code.
package testbin
