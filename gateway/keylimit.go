package gateway

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Defaults of KeyLimitOptions.
const (
	DefaultKeyAttempts   = 10
	DefaultKeyWindow     = 5 * time.Minute
	DefaultKeyMaxTracked = 10000
)

// KeyLimitOptions configure a KeyLimiter. Zero fields take defaults.
type KeyLimitOptions struct {
	// Attempts is how many failed keys one client address may present in a Window before
	// every key from it is refused until the window ends (default 10 in 5 minutes).
	Attempts int
	Window   time.Duration
	// MaxTracked bounds the addresses counted at once (default 10,000).
	MaxTracked int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// KeyLimiter counts failed API keys per client address in fixed windows: once an address has
// failed Attempts times in a window, every key from it (a right one included, so trying tells
// nothing) is refused until the window ends. spool serve shares one between the API and the
// browser's sign-in, so guesses on one count against the other. Safe for concurrent use.
type KeyLimiter struct {
	o KeyLimitOptions

	mu    sync.Mutex
	addrs map[string]*keyWindow
}

type keyWindow struct {
	start    time.Time
	failures int
}

// NewKeyLimiter returns an empty limiter.
func NewKeyLimiter(o KeyLimitOptions) *KeyLimiter {
	if o.Attempts <= 0 {
		o.Attempts = DefaultKeyAttempts
	}
	if o.Window <= 0 {
		o.Window = DefaultKeyWindow
	}
	if o.MaxTracked <= 0 {
		o.MaxTracked = DefaultKeyMaxTracked
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &KeyLimiter{o: o, addrs: map[string]*keyWindow{}}
}

// ClientAddr is the address a request came from: the connection's peer, never a header a
// client could set (X-Forwarded-For would let an attacker pick a fresh address per attempt).
func ClientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// Blocked returns how long addr must wait before it may present a key again (0: it may now).
func (l *KeyLimiter) Blocked(addr string) time.Duration {
	now := l.o.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.addrs[addr]
	if w == nil {
		return 0
	}
	end := w.start.Add(l.o.Window)
	if !now.Before(end) {
		delete(l.addrs, addr)
		return 0
	}
	if w.failures < l.o.Attempts {
		return 0
	}
	return end.Sub(now)
}

// Fail counts a failed key from addr.
func (l *KeyLimiter) Fail(addr string) {
	now := l.o.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.addrs[addr]
	if w != nil && !now.Before(w.start.Add(l.o.Window)) {
		w = nil
	}
	if w == nil {
		if len(l.addrs) >= l.o.MaxTracked {
			l.sweep(now)
		}
		w = &keyWindow{start: now}
		l.addrs[addr] = w
	}
	w.failures++
}

// sweep drops finished windows; when every tracked address is still inside its window, the
// oldest window goes (the table stays bounded; that address starts counting afresh).
func (l *KeyLimiter) sweep(now time.Time) {
	var oldest string
	for a, w := range l.addrs {
		if !now.Before(w.start.Add(l.o.Window)) {
			delete(l.addrs, a)
			continue
		}
		if oldest == "" || w.start.Before(l.addrs[oldest].start) {
			oldest = a
		}
	}
	if len(l.addrs) >= l.o.MaxTracked && oldest != "" {
		delete(l.addrs, oldest)
	}
}
