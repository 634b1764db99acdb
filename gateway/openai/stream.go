package openai

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultStreamBuffer is the default bound on what one stream holds for a client that has not
// taken it yet (serve.stream_buffer_bytes).
const DefaultStreamBuffer = 1 << 20

// stream is one open SSE answer. The turn never waits for the client: each event is queued and
// a writer goroutine, started only while there is something to send (an idle stream holds
// none), hands the queue to the connection, each write bounded by a deadline. The bytes the
// stream holds for its client (queued, or in a write the client has not taken) are bounded while
// the answer streams: an event that would take them past bound, while some are still held, cuts
// the stream instead — the connection is closed, the cut logged once (ids and sizes, never
// content), and the turn goes on to its end and is stored. The answer's tail (its closing
// events, once the turn is over, or a whole replayed answer) is queued whole: it cannot grow, its
// size is the reply's (which the model's output limit bounds), and the write deadline still
// drops a client that does not take it. After a cut or a failed write the stream stays silent
// (the client is gone, the turn is not).
type stream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	bound   int
	log     *slog.Logger
	cuts    prometheus.Counter
	id      string
	created int64
	model   string
	began   time.Time

	mu     sync.Mutex
	sid    string
	alive  bool // keep-alives armed
	broken bool // cut, failed or stopped: nothing more is sent
	closed bool // the handler is returning: nothing more is queued
	tail   bool // the turn is over: what is queued now is the answer's closing events
	last   time.Time
	// ka fires the keep-alive check (a timer, not a goroutine: an idle stream holds no goroutine
	// of its own for it).
	ka    *time.Timer
	every time.Duration
	// queue holds the events not yet handed to the connection; held counts them and the bytes
	// of the write in flight. writing says the writer goroutine runs; wg is its exit.
	queue   []byte
	held    int
	writing bool
	wg      sync.WaitGroup
}

func (s *Server) newStream(w http.ResponseWriter, id string, created int64, model string) *stream {
	return &stream{w: w, rc: http.NewResponseController(w), timeout: s.o.WriteTimeout, bound: s.o.StreamBuffer,
		log: s.o.Log, cuts: s.g.Metrics().StreamsCut, id: id, created: created, model: model, began: time.Now()}
}

// stop silences the stream for good (its client went away) and ends the keep-alives.
func (st *stream) stop() {
	st.mu.Lock()
	st.silenceLocked()
	st.mu.Unlock()
	st.stopKeepAlive()
}

// close is the handler's last word on the stream: no more keep-alives, and once the writer has
// handed over what is queued (or failed), it returns; the handler may then return.
func (st *stream) close() {
	st.stopKeepAlive()
	st.mu.Lock()
	st.closed = true
	st.mu.Unlock()
	st.wg.Wait()
}

// closing marks the start of the answer's tail (the turn is over): no more keep-alives, and
// what is queued from now on is not held to the bound.
func (st *stream) closing() {
	st.stopKeepAlive()
	st.mu.Lock()
	st.tail = true
	st.mu.Unlock()
}

// stopKeepAlive ends the keep-alives: once it returns, none is written (a check already running
// waits for mu and then finds them off).
func (st *stream) stopKeepAlive() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.alive {
		st.alive = false
		st.ka.Stop()
	}
}

func (st *stream) open(sid string) {
	st.openSSE(sid)
	st.chunk(choice{Delta: &choiceMessage{Role: "assistant", Content: ptr("")}}, nil)
}

// openSSE sends the stream's headers (before the writer can run: nothing is queued yet).
func (st *stream) openSSE(sid string) {
	h := st.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if sid != "" {
		h.Set("X-Spool-Session-Id", sid)
	}
	st.w.WriteHeader(http.StatusOK)
	st.mu.Lock()
	st.sid = sid
	st.mu.Unlock()
}

// startKeepAlive writes a comment whenever the stream was silent for every, until
// stopKeepAlive (finish, stop).
func (st *stream) startKeepAlive(every time.Duration) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.broken || st.alive {
		return
	}
	st.alive, st.every = true, every
	st.ka = time.AfterFunc(every/2, st.keepAlive)
}

// keepAlive is the timer's check: a comment after a silence of every, then the next check.
func (st *stream) keepAlive() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.alive || st.broken {
		return
	}
	if time.Since(st.last) >= st.every {
		st.write([]byte(": keepalive\n\n"))
	}
	if !st.broken {
		st.ka.Reset(st.every / 2)
	}
}

// write queues b for the client and starts the writer if it is not running; it never waits for
// the client. The caller holds mu.
func (st *stream) write(b []byte) {
	if st.broken || st.closed {
		return
	}
	if !st.tail && st.held > 0 && st.held+len(b) > st.bound {
		st.log.Warn("spool serve: stream cut: the client stopped reading; its turn goes on and is stored",
			"stream", st.id, "session", st.sid, "held_bytes", st.held, "next_event_bytes", len(b), "stream_buffer_bytes", st.bound)
		if st.cuts != nil {
			st.cuts.Inc()
		}
		st.silenceLocked()
		return
	}
	st.queue = append(st.queue, b...)
	st.held += len(b)
	st.last = time.Now()
	if !st.writing {
		st.writing = true
		st.wg.Add(1)
		go st.send()
	}
}

// silenceLocked ends the stream: nothing more is queued or sent, and a write in flight fails
// at once (its deadline is now). The writer, seeing it, closes the connection. The caller holds
// mu.
func (st *stream) silenceLocked() {
	if st.broken {
		return
	}
	st.broken = true
	st.queue = nil
	_ = st.rc.SetWriteDeadline(time.Now())
}

// send is the writer: it hands the queue to the connection until it is empty, then exits. After
// a cut or a failed write it closes the connection (so the client sees the stream end now, not
// at the turn's end) and exits.
func (st *stream) send() {
	defer st.wg.Done()
	for {
		// The deadline is set before broken is checked under mu: a cut after the check sets its
		// own deadline (now) after this one, so a write in flight always sees it.
		_ = st.rc.SetWriteDeadline(time.Now().Add(st.timeout))
		st.mu.Lock()
		b := st.queue
		if st.broken || len(b) == 0 {
			st.writing = false
			broken := st.broken
			st.mu.Unlock()
			if broken {
				st.abort()
			}
			return
		}
		st.queue = nil
		st.mu.Unlock()
		_, err := st.w.Write(b)
		if err == nil {
			err = st.rc.Flush()
		}
		st.mu.Lock()
		st.held -= len(b)
		if err != nil {
			st.silenceLocked()
		} else if st.queue == nil && cap(b) <= 16<<10 {
			st.queue = b[:0] // reuse a small buffer
		}
		st.mu.Unlock()
	}
}

// abort closes the connection of a stream that was cut or whose write failed. The handler is
// still running (close waits for the writer) and no longer touches the response.
func (st *stream) abort() {
	if conn, _, err := st.rc.Hijack(); err == nil {
		_ = conn.Close()
	}
}

func (st *stream) frame(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	buf := make([]byte, 0, len(b)+8)
	buf = append(buf, "data: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	st.write(buf)
}
