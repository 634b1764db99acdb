// Package simclock is a virtual clock for tests of code that paces itself with a sleep
// function and a clock reading (the platform adapters' pacers): time moves only when the test
// advances it, one wake-up at a time, so no verdict depends on the machine's scheduling.
package simclock
