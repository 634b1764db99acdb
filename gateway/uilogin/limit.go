package uilogin

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Defaults of the sign-in rate limit (Options.Attempts, Options.Window, Options.MaxTracked).
const (
	DefaultAttempts   = 10
	DefaultWindow     = 5 * time.Minute
	DefaultMaxTracked = 10000
)

// limiter counts failed sign-ins per client address in fixed windows: once an address has
// failed Attempts times in a window, every sign-in from it (a right key included, so trying
// tells nothing) is refused until the window ends.
type limiter struct {
	attempts int
	window   time.Duration
	max      int
	now      func() time.Time

	mu    sync.Mutex
	addrs map[string]*window
}

type window struct {
	start    time.Time
	failures int
}

func newLimiter(o Options) *limiter {
	return &limiter{attempts: o.Attempts, window: o.Window, max: o.MaxTracked, now: o.Now, addrs: map[string]*window{}}
}

// clientAddr is the address a request came from: the connection's peer, never a header a
// client could set (X-Forwarded-For would let an attacker pick a fresh address per attempt).
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// blocked returns how long addr must wait before it may try again (0: it may now).
func (l *limiter) blocked(addr string) time.Duration {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.addrs[addr]
	if w == nil {
		return 0
	}
	end := w.start.Add(l.window)
	if !now.Before(end) {
		delete(l.addrs, addr)
		return 0
	}
	if w.failures < l.attempts {
		return 0
	}
	return end.Sub(now)
}

// fail counts a failed sign-in from addr.
func (l *limiter) fail(addr string) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.addrs[addr]
	if w != nil && !now.Before(w.start.Add(l.window)) {
		w = nil
	}
	if w == nil {
		if len(l.addrs) >= l.max {
			l.sweep(now)
		}
		w = &window{start: now}
		l.addrs[addr] = w
	}
	w.failures++
}

// sweep drops finished windows; when every tracked address is still inside its window, the
// oldest window goes (the table stays bounded; that address starts counting afresh).
func (l *limiter) sweep(now time.Time) {
	var oldest string
	for a, w := range l.addrs {
		if !now.Before(w.start.Add(l.window)) {
			delete(l.addrs, a)
			continue
		}
		if oldest == "" || w.start.Before(l.addrs[oldest].start) {
			oldest = a
		}
	}
	if len(l.addrs) >= l.max && oldest != "" {
		delete(l.addrs, oldest)
	}
}

// refuse answers a limited request: 429 with Retry-After in whole seconds, rounded up.
func (l *limiter) refuse(w http.ResponseWriter, prefix string, wait time.Duration) {
	secs := int((wait + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	page(w, http.StatusTooManyRequests, pageData{Prefix: prefix, Title: "Too many attempts", Login: false,
		Error: "Too many failed sign-ins from this address: try again in " + strconv.Itoa(max(secs, 1)) + " s."})
}
