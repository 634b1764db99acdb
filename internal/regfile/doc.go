// Package regfile opens files that must be regular files: a transcript, a file a tool reads, a
// rule file. A named pipe (FIFO) without a writer would block open(2) forever, and a device
// such as /dev/tty or /dev/zero never ends; both are refused with a NotRegularError instead,
// without blocking (the open is non-blocking and the check is made on the opened descriptor, so
// a file swapped for a pipe between a check and the open cannot slip through).
package regfile
