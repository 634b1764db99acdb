package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Holder identifies who holds a lock or lease: process, host, process start time and a random
// nonce, so a recycled pid or a second holder in the same process is never mistaken for us.
type Holder struct {
	PID   int
	Host  string
	Start string // process start time as the OS reports it ("" when unknown)
	Nonce string
}

// HostIDEnv names the environment variable that overrides the host a holder names. Processes
// with different host ids treat each other as remote: a holder on another host is never probed,
// so its leases and locks are reclaimed only after their TTL. Two processes on one machine with
// two ids behave as two hosts sharing one PostgreSQL database (the multi-host proof uses it).
const HostIDEnv = "SPOOL_HOST_ID"

// hostID is this process's host in holder strings: $SPOOL_HOST_ID, else the host name.
func hostID() (string, error) {
	if h := os.Getenv(HostIDEnv); h != "" {
		return strings.Map(func(r rune) rune {
			if r == ':' || r == '=' || r < 0x20 {
				return '_'
			}
			return r
		}, h), nil
	}
	hostName.once.Do(func() { hostName.name, hostName.err = os.Hostname() })
	return hostName.name, hostName.err
}

// hostName caches the host name: NewHolder runs at every turn, and os.Hostname reads
// /proc/sys/kernel/hostname each time.
var hostName struct {
	once sync.Once
	name string
	err  error
}

// NewHolder describes the current process with a fresh nonce.
func NewHolder() Holder {
	host, _ := hostID()
	var b [6]byte
	_, _ = rand.Read(b[:])
	pid := os.Getpid()
	return Holder{PID: pid, Host: host, Start: ownStart(pid), Nonce: hex.EncodeToString(b[:])}
}

// self caches this process's start time: NewHolder runs at every turn, and reading
// /proc/self/stat each time was about 4% of a gateway turn's CPU.
var self struct {
	once  sync.Once
	pid   int
	start string
}

// ownStart is processStart(pid) for this process's pid, read once.
func ownStart(pid int) string {
	self.once.Do(func() { self.pid, self.start = pid, processStart(pid) })
	if pid != self.pid {
		return processStart(pid)
	}
	return self.start
}

// String encodes the holder as pid=N:host=H:start=S:nonce=X.
func (h Holder) String() string {
	return fmt.Sprintf("pid=%d:host=%s:start=%s:nonce=%s", h.PID, h.Host, h.Start, h.Nonce)
}

// ParseHolder decodes String's format. Unstructured holders fail to parse and are never probed.
func ParseHolder(s string) (Holder, error) {
	var h Holder
	for _, part := range strings.Split(s, ":") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		switch k {
		case "pid":
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return Holder{}, fmt.Errorf("holder %q: bad pid", s)
			}
			h.PID = n
		case "host":
			h.Host = v
		case "start":
			h.Start = v
		case "nonce":
			h.Nonce = v
		}
	}
	if h.PID == 0 {
		return Holder{}, fmt.Errorf("holder %q: no pid", s)
	}
	return h, nil
}

// HolderProvablyDead reports whether holder names a process on this host, other than this one,
// that no longer exists (or whose pid was recycled by a process with another start time). Any
// doubt returns false: the lease then waits for its TTL.
func HolderProvablyDead(holder string) bool {
	h, err := ParseHolder(holder)
	if err != nil {
		return false
	}
	host, err := hostID()
	if err != nil || h.Host == "" || h.Host != host || h.PID == os.Getpid() {
		return false
	}
	err = syscall.Kill(h.PID, 0)
	if errors.Is(err, syscall.ESRCH) {
		return true
	}
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if h.Start != "" {
		if now := processStart(h.PID); now != "" && now != h.Start {
			return true // the pid now belongs to a younger process
		}
	}
	return false
}

// processStart reads the start time (clock ticks since boot) of pid from /proc; "" elsewhere.
func processStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name (field 2) may contain spaces and parentheses: split after its last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state); starttime is field 22.
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}

// LeaseLive reports whether a lease row (its holder, "" when released, and its expiry) still
// binds others at now: held, not expired, and its holder not provably dead.
func LeaseLive(holder string, expires, now time.Time) bool {
	return holder != "" && expires.After(now) && !HolderProvablyDead(holder)
}
