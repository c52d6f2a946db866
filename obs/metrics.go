// Package obs is drover's observability: Prometheus metrics on a registry
// of their own, the HTTP server for /metrics, /healthz and /readyz, and the
// notifier posting job results and errors to an HTTP endpoint.
package obs

import (
	"fmt"
	"sync"
	"time"

	"drover/admin"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Namespace prefixes every metric drover exports.
const Namespace = "drover"

// Metrics holds drover's metrics. Gauges and counters follow admin.Totals
// snapshots passed to Update; store latency and heartbeat misses, which
// Totals does not carry, are reported directly. All methods are safe for
// concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	mu   sync.Mutex
	prev admin.Totals

	jobs       *prometheus.GaugeVec
	unroutable prometheus.Gauge
	keys       *prometheus.GaugeVec
	waiters    prometheus.Gauge
	workers    *prometheus.GaugeVec
	paused     prometheus.Gauge
	updated    prometheus.Gauge

	dispatches  prometheus.Counter
	completions prometheus.Counter
	failures    prometheus.Counter
	throttles   prometheus.Counter
	dedupHits   prometheus.Counter
	orphans     prometheus.Counter
	malformed   prometheus.Counter
	hbMisses    prometheus.Counter

	storeLatency *prometheus.HistogramVec

	forbidden *prometheus.CounterVec
	refused   *prometheus.CounterVec
}

// StoreBuckets are the store latency histogram's upper bounds in seconds:
// 25µs doubling to about 0.8s.
var StoreBuckets = prometheus.ExponentialBuckets(25e-6, 2, 16)

// NewMetrics creates the metrics on a new registry, with the Go runtime
// and process collectors.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	f := factory{reg}
	m := &Metrics{
		reg:        reg,
		jobs:       f.gaugeVec("jobs", "Broker jobs by state.", "state"),
		unroutable: f.gauge("jobs_unroutable", "Queued jobs no live worker can take."),
		keys:       f.gaugeVec("ledger_keys", "Work keys in the ledger by state.", "state"),
		waiters:    f.gauge("waiters", "Sessions waiting on a requested key."),
		workers:    f.gaugeVec("workers", "Registered workers by state.", "state"),
		paused:     f.gauge("dispatch_paused", "1 while an operator has paused dispatch."),
		updated:    f.gauge("totals_timestamp_seconds", "Time of the coordinator snapshot the metrics show."),

		dispatches:  f.counter("dispatches_total", "Jobs handed to a worker."),
		completions: f.counter("completions_total", "Jobs a worker completed."),
		failures:    f.counter("failures_total", "Job attempts that failed."),
		throttles:   f.counter("throttles_total", "Job attempts throttled by the host (HTTP 429/503)."),
		dedupHits:   f.counter("dedup_hits_total", "Requests refused or queued because the work was already requested, queued or done."),
		orphans:     f.counter("stale_results_total", "Results for a run that is not the job's current attempt on that worker (or for no job): answered stale or unknown, ignored."),
		malformed:   f.counter("malformed_messages_total", "Incoming messages rejected as malformed."),
		hbMisses:    f.counter("heartbeat_misses_total", "Heartbeats expected from a peer and not received in time."),

		forbidden: f.counterVec("forbidden_total", "Commands refused (ERROR 403) because the sender's key's role does not allow them, by key.", "key", "role"),
		refused:   f.counterVec("handshakes_refused_total", "CURVE handshakes refused: a key not in authorized_keys, or a role that may not use the listener.", "listener"),

		storeLatency: f.histogramVec("store_op_duration_seconds", "Latency of embedded store operations.", StoreBuckets, "op"),
	}
	// Show every state from the first scrape, not only those seen so far.
	m.setStates(admin.Totals{})
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Update sets the gauges to a snapshot of the coordinator's totals and
// advances each counter by the growth of its monotonic total since the
// previous snapshot. A total lower than before means the coordinator
// restarted its count: the counter advances by the new total.
func (m *Metrics) Update(t admin.Totals) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setStates(t)
	if !t.At.IsZero() {
		m.updated.Set(float64(t.At.UnixNano()) / 1e9)
	}
	advance := func(c prometheus.Counter, now, before uint64) {
		if now >= before {
			c.Add(float64(now - before))
		} else {
			c.Add(float64(now))
		}
	}
	p := m.prev
	advance(m.dispatches, t.Dispatches, p.Dispatches)
	advance(m.completions, t.Completions, p.Completions)
	advance(m.failures, t.Failures, p.Failures)
	advance(m.throttles, t.Throttles, p.Throttles)
	advance(m.dedupHits, t.DedupHits, p.DedupHits)
	advance(m.orphans, t.StaleResults, p.StaleResults)
	advance(m.malformed, t.Malformed, p.Malformed)
	m.prev = t
}

// Forbidden counts a command refused for the role of the key that sent it
// (key: its public key; the number of keys is bounded by authorized_keys).
func (m *Metrics) Forbidden(key, role string) { m.forbidden.WithLabelValues(key, role).Inc() }

// HandshakeRefused counts a CURVE handshake refused on a listener (peers,
// admin, events). Refused keys are not labels: anyone can make new ones.
func (m *Metrics) HandshakeRefused(listener string) { m.refused.WithLabelValues(listener).Inc() }

func (m *Metrics) setStates(t admin.Totals) {
	for state, n := range map[string]int{
		"queued": t.Queued, "dispatched": t.Dispatched, "backoff": t.Backoff, "done": t.Done, "failed": t.Failed,
	} {
		m.jobs.WithLabelValues(state).Set(float64(n))
	}
	for state, n := range map[string]int{"requested": t.KeysRequested, "queued": t.KeysQueued, "done": t.KeysDone} {
		m.keys.WithLabelValues(state).Set(float64(n))
	}
	for state, n := range map[string]int{
		"idle": t.WorkersIdle, "busy": t.WorkersBusy, "draining": t.WorkersDraining, "lost": t.WorkersLost,
	} {
		m.workers.WithLabelValues(state).Set(float64(n))
	}
	m.unroutable.Set(float64(t.Unroutable))
	m.waiters.Set(float64(t.Waiters))
	if t.Paused {
		m.paused.Set(1)
	} else {
		m.paused.Set(0)
	}
}

// ObserveStore records the latency of one store operation; op names it
// (e.g. "write", "sync", "read") and should come from a small fixed set.
func (m *Metrics) ObserveStore(op string, d time.Duration) {
	m.storeLatency.WithLabelValues(op).Observe(d.Seconds())
}

// AddHeartbeatMisses counts heartbeats that peers failed to send in time.
func (m *Metrics) AddHeartbeatMisses(n int) {
	if n > 0 {
		m.hbMisses.Add(float64(n))
	}
}

// ReactorStats are the coordinator reactor's counters (server.ReactorStats).
type ReactorStats struct {
	Steps, Messages, Gathered uint64
}

// RegisterReactor exports the reactor's counters, read through stats at
// each scrape: messages per step is what peers.gather is tuned by.
func (m *Metrics) RegisterReactor(stats func() ReactorStats) error {
	counter := func(name, help string, pick func(ReactorStats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help},
			func() float64 { return float64(pick(stats())) })
	}
	for _, c := range []prometheus.Collector{
		counter("reactor_steps_total", "Steps the coordinator's reactor made (each acts on the messages read since the last).",
			func(s ReactorStats) uint64 { return s.Steps }),
		counter("reactor_messages_total", "Messages the reactor read from peers, consoles and the store.",
			func(s ReactorStats) uint64 { return s.Messages }),
		counter("reactor_gathered_total", "Steps for which the reactor let messages gather first (peers.gather).",
			func(s ReactorStats) uint64 { return s.Gathered }),
	} {
		if err := m.reg.Register(c); err != nil {
			return fmt.Errorf("obs: registering reactor metrics (expected one reactor per Metrics): %w", err)
		}
	}
	return nil
}

// RegisterCrawl exports the counters of a crawl run by drover crawl, read
// through refused at each scrape.
func (m *Metrics) RegisterCrawl(refused func() uint64) error {
	c := prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Name: "crawl_pages_refused_total",
		Help: "Pages a crawl from a public seed did not fetch because their host resolves to a loopback, private, link-local or CGNAT address (crawl.allow_private)."},
		func() float64 { return float64(refused()) })
	if err := m.reg.Register(c); err != nil {
		return fmt.Errorf("obs: registering crawl metrics (expected one crawl per Metrics): %w", err)
	}
	return nil
}

// RegisterNotifier exports the notifier's counters and queue length.
func (m *Metrics) RegisterNotifier(n *Notifier) error {
	stat := func(pick func(NotifierStats) float64) func() float64 {
		return func() float64 { return pick(n.Stats()) }
	}
	cs := []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Name: "notifier_sent_total",
			Help: "Reports the notifier delivered."}, stat(func(s NotifierStats) float64 { return float64(s.Sent) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Name: "notifier_failed_total",
			Help: "Reports the notifier gave up on after its attempts."}, stat(func(s NotifierStats) float64 { return float64(s.Failed) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Name: "notifier_dropped_total",
			Help: "Reports not delivered because the notifier closed first (those in a spill file are delivered by the next start)."}, stat(func(s NotifierStats) float64 { return float64(s.Dropped) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Name: "notifier_spilled_total",
			Help: "Reports that found the queue full and spilled (to a file, or to memory), to be delivered in order later."}, stat(func(s NotifierStats) float64 { return float64(s.Spilled) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Name: "notifier_retries_total",
			Help: "POST attempts after the first."}, stat(func(s NotifierStats) float64 { return float64(s.Retries) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "notifier_queue_length",
			Help: "Reports waiting to be sent."}, stat(func(s NotifierStats) float64 { return float64(s.Queued) })),
	}
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			return fmt.Errorf("obs: registering notifier metrics (expected one notifier per Metrics): %w", err)
		}
	}
	return nil
}

type factory struct{ reg *prometheus.Registry }

func (f factory) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help})
	f.reg.MustRegister(g)
	return g
}

func (f factory) gaugeVec(name, help, label string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}, []string{label})
	f.reg.MustRegister(g)
	return g
}

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) histogramVec(name, help string, buckets []float64, label string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets},
		[]string{label})
	f.reg.MustRegister(h)
	return h
}

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}
