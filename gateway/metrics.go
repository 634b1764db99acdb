package gateway

import (
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/spoolhq/spool/agent"
)

// Metrics are the gateway's Prometheus metrics, on a registry of their own.
type Metrics struct {
	reg *prometheus.Registry

	Requests       *prometheus.CounterVec   // by route and status code
	StreamDuration *prometheus.HistogramVec // by route
	StreamsCut     prometheus.Counter       // streams cut at the buffer bound (a client not reading)
	turns          *prometheus.CounterVec
	turnDuration   prometheus.Histogram
	compactions    prometheus.Counter
	promptTokens   prometheus.Counter
	cachedTokens   prometheus.Counter
	leaseWait      prometheus.Histogram
	storeLatency   *prometheus.HistogramVec
	busy           *prometheus.CounterVec
	limited        prometheus.Counter
	replays        prometheus.Counter
	branches       prometheus.Counter
}

// NewMetrics registers the gateway's metrics (and the Go runtime's) on a new registry.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.Requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spool_http_requests_total", Help: "HTTP requests by route and status code."}, []string{"route", "code"})
	m.StreamDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "spool_stream_duration_seconds", Help: "Duration of streamed responses.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}, []string{"route"})
	m.StreamsCut = prometheus.NewCounter(prometheus.CounterOpts{Name: "spool_streams_cut_total", Help: "Streams cut because their client stopped reading and serve.stream_buffer_bytes was reached (the turns went on)."})
	m.turns = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spool_turns_total", Help: "Turns run, by outcome (ok, interrupted, busy, error)."}, []string{"outcome"})
	m.turnDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "spool_turn_duration_seconds", Help: "Duration of turns, model calls included.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)})
	m.compactions = prometheus.NewCounter(prometheus.CounterOpts{Name: "spool_compactions_total", Help: "Compactions committed during gateway turns."})
	m.promptTokens = prometheus.NewCounter(prometheus.CounterOpts{Name: "spool_prompt_tokens_total", Help: "Prompt tokens sent to the model by gateway turns."})
	m.cachedTokens = prometheus.NewCounter(prometheus.CounterOpts{Name: "spool_prompt_cached_tokens_total", Help: "Prompt tokens read from the provider's cache (cache share = this / spool_prompt_tokens_total)."})
	m.leaseWait = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "spool_turn_slot_wait_seconds", Help: "Time a request waited for its session's turn.", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)})
	m.storeLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "spool_store_operation_seconds", Help: "Latency of the gateway's own store operations.", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"op"})
	m.busy = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spool_busy_rejections_total", Help: "Requests answered busy (409), by policy."}, []string{"policy"})
	m.limited = prometheus.NewCounter(prometheus.CounterOpts{Name: "spool_limited_requests_total", Help: "Requests refused by the per-principal concurrency limit (429)."})
	m.replays = prometheus.NewCounter(prometheus.CounterOpts{Name: "spool_idempotent_replays_total", Help: "Requests answered from a stored Idempotency-Key outcome."})
	m.branches = prometheus.NewCounter(prometheus.CounterOpts{Name: "spool_history_branches_total", Help: "Resent histories that diverged from the stored one and became a branch."})
	for _, c := range []prometheus.Collector{m.Requests, m.StreamDuration, m.StreamsCut, m.turns, m.turnDuration, m.compactions, m.promptTokens,
		m.cachedTokens, m.leaseWait, m.storeLatency, m.busy, m.limited, m.replays, m.branches,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		f(c)
	}
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

func (m *Metrics) observeTurn(res agent.Result, err error, d time.Duration) {
	outcome := "ok"
	var busy *BusyError
	switch {
	case errors.As(err, &busy):
		outcome = "busy"
	case res.Interrupted:
		outcome = "interrupted"
	case err != nil:
		outcome = "error"
	}
	m.turns.WithLabelValues(outcome).Inc()
	m.turnDuration.Observe(d.Seconds())
	m.compactions.Add(float64(res.Compactions))
	m.promptTokens.Add(float64(res.Usage.InputTokens))
	m.cachedTokens.Add(float64(res.Usage.CacheReadTokens))
}

// observe records the latency of one of the gateway's store operations.
func (g *Gateway) observe(op string, start time.Time) {
	g.m.storeLatency.WithLabelValues(op).Observe(time.Since(start).Seconds())
}
