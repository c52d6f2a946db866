package obs

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"drover/admin"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

type families map[string]*dto.MetricFamily

// scrape GETs /metrics and parses the text exposition format.
func scrape(t *testing.T, base string) families {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics = %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// value returns the value of the series with the given name and label
// pairs ("state", "queued"); it fails the test when there is none.
func (f families) value(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	fam, ok := f[name]
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	for _, m := range fam.GetMetric() {
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range m.GetLabel() {
				found = found || (lp.GetName() == labels[i] && lp.GetValue() == labels[i+1])
			}
			match = match && found
		}
		if !match {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

func TestMetricsEndpoint(t *testing.T) {
	m := NewMetrics()
	base := startServer(t, Handler(m, nil))

	// Before any snapshot every state is there, at zero.
	f := scrape(t, base)
	for _, s := range []string{"queued", "dispatched", "backoff", "done", "failed"} {
		if v := f.value(t, "drover_jobs", "state", s); v != 0 {
			t.Errorf("drover_jobs{state=%s} = %v before any snapshot", s, v)
		}
	}

	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m.Update(admin.Totals{At: at, Queued: 5, Dispatched: 2, Backoff: 1, Done: 10, Failed: 3, Unroutable: 4,
		KeysRequested: 6, KeysQueued: 7, KeysDone: 8, Waiters: 9,
		WorkersIdle: 1, WorkersBusy: 2, WorkersDraining: 3, WorkersLost: 4,
		Dispatches: 20, Completions: 10, Failures: 4, Throttles: 2, DedupHits: 100, StaleResults: 1, Malformed: 3})
	m.Update(admin.Totals{At: at.Add(time.Second), Paused: true, Queued: 1, Done: 12,
		Dispatches: 25, Completions: 12, Failures: 4, Throttles: 3, DedupHits: 150, StaleResults: 1, Malformed: 5})
	m.ObserveStore("write", 100*time.Microsecond)
	m.ObserveStore("write", 2*time.Millisecond)
	m.ObserveStore("sync", 5*time.Millisecond)
	m.AddHeartbeatMisses(2)
	m.AddHeartbeatMisses(0)
	m.AddHeartbeatMisses(-1)
	m.AddHeartbeatMisses(1)

	f = scrape(t, base)
	tests := []struct {
		name   string
		labels []string
		want   float64
	}{
		// Gauges follow the latest snapshot.
		{"drover_jobs", []string{"state", "queued"}, 1},
		{"drover_jobs", []string{"state", "dispatched"}, 0},
		{"drover_jobs", []string{"state", "done"}, 12},
		{"drover_jobs_unroutable", nil, 0},
		{"drover_ledger_keys", []string{"state", "requested"}, 0},
		{"drover_waiters", nil, 0},
		{"drover_workers", []string{"state", "lost"}, 0},
		{"drover_dispatch_paused", nil, 1},
		{"drover_totals_timestamp_seconds", nil, float64(at.Unix() + 1)},
		// Counters equal the monotonic totals.
		{"drover_dispatches_total", nil, 25},
		{"drover_completions_total", nil, 12},
		{"drover_failures_total", nil, 4},
		{"drover_throttles_total", nil, 3},
		{"drover_dedup_hits_total", nil, 150},
		{"drover_stale_results_total", nil, 1},
		{"drover_malformed_messages_total", nil, 5},
		{"drover_heartbeat_misses_total", nil, 3},
		// Histograms count observations per operation.
		{"drover_store_op_duration_seconds", []string{"op", "write"}, 2},
		{"drover_store_op_duration_seconds", []string{"op", "sync"}, 1},
	}
	for _, tt := range tests {
		if got := f.value(t, tt.name, tt.labels...); got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
	if _, ok := f["go_goroutines"]; !ok {
		t.Error("no Go runtime metrics")
	}
	if _, ok := f["process_start_time_seconds"]; !ok {
		t.Error("no process metrics")
	}
}

func TestMetricsSnapshotGauges(t *testing.T) {
	m := NewMetrics()
	m.Update(admin.Totals{Queued: 5, Dispatched: 2, Backoff: 1, Done: 10, Failed: 3, Unroutable: 4,
		KeysRequested: 6, KeysQueued: 7, KeysDone: 8, Waiters: 9,
		WorkersIdle: 1, WorkersBusy: 2, WorkersDraining: 3, WorkersLost: 4})
	f := scrape(t, startServer(t, Handler(m, nil)))
	tests := []struct {
		name, label, value string
		want               float64
	}{
		{"drover_jobs", "state", "queued", 5}, {"drover_jobs", "state", "dispatched", 2},
		{"drover_jobs", "state", "backoff", 1}, {"drover_jobs", "state", "done", 10},
		{"drover_jobs", "state", "failed", 3}, {"drover_jobs_unroutable", "", "", 4},
		{"drover_ledger_keys", "state", "requested", 6}, {"drover_ledger_keys", "state", "queued", 7},
		{"drover_ledger_keys", "state", "done", 8}, {"drover_waiters", "", "", 9},
		{"drover_workers", "state", "idle", 1}, {"drover_workers", "state", "busy", 2},
		{"drover_workers", "state", "draining", 3}, {"drover_workers", "state", "lost", 4},
		{"drover_dispatch_paused", "", "", 0},
	}
	for _, tt := range tests {
		var labels []string
		if tt.label != "" {
			labels = []string{tt.label, tt.value}
		}
		if got := f.value(t, tt.name, labels...); got != tt.want {
			t.Errorf("%s{%s=%s} = %v, want %v", tt.name, tt.label, tt.value, got, tt.want)
		}
	}
}

func TestMetricsCounterReset(t *testing.T) {
	m := NewMetrics()
	m.Update(admin.Totals{Dispatches: 10})
	m.Update(admin.Totals{Dispatches: 4}) // the coordinator restarted its count
	m.Update(admin.Totals{Dispatches: 6})
	f := scrape(t, startServer(t, Handler(m, nil)))
	if got := f.value(t, "drover_dispatches_total"); got != 16 {
		t.Fatalf("drover_dispatches_total = %v, want 10 + 4 + 2 = 16", got)
	}
}

func TestMetricsLint(t *testing.T) {
	m := NewMetrics()
	m.ObserveStore("write", time.Millisecond)
	n, err := NewNotifier(NotifierOptions{URL: "http://127.0.0.1:1/"})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(t.Context())
	if err := m.RegisterNotifier(n); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(startServer(t, Handler(m, nil)) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	problems, err := promlint.New(resp.Body).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, Namespace+"_") {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}
	if err := m.RegisterNotifier(n); err == nil {
		t.Error("registering a second notifier succeeded")
	}
}

// BenchmarkMetricsUpdate measures applying one coordinator snapshot.
func BenchmarkMetricsUpdate(b *testing.B) {
	m := NewMetrics()
	t := admin.Totals{Queued: 5, Dispatched: 2, Done: 10, WorkersIdle: 3}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		t.Dispatches++
		t.Completions++
		m.Update(t)
	}
}

// BenchmarkObserveStore measures recording one store latency.
func BenchmarkObserveStore(b *testing.B) {
	m := NewMetrics()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m.ObserveStore("write", time.Duration(i%1000)*time.Microsecond)
	}
}

// TestReactorMetrics: the reactor's counters are read at each scrape.
func TestReactorMetrics(t *testing.T) {
	m := NewMetrics()
	var mu sync.Mutex
	now := ReactorStats{Steps: 10, Messages: 40, Gathered: 3}
	if err := m.RegisterReactor(func() ReactorStats { mu.Lock(); defer mu.Unlock(); return now }); err != nil {
		t.Fatal(err)
	}
	if err := m.RegisterReactor(func() ReactorStats { return ReactorStats{} }); err == nil {
		t.Fatal("a second reactor registered on the same metrics")
	}
	srv := startServer(t, Handler(m, nil))
	check := func(want ReactorStats) {
		t.Helper()
		f := scrape(t, srv)
		for name, v := range map[string]uint64{
			"drover_reactor_steps_total": want.Steps, "drover_reactor_messages_total": want.Messages, "drover_reactor_gathered_total": want.Gathered,
		} {
			if got := f.value(t, name); got != float64(v) {
				t.Errorf("%s = %v, want %v", name, got, v)
			}
		}
	}
	check(now)
	mu.Lock()
	now = ReactorStats{Steps: 12, Messages: 50, Gathered: 4}
	mu.Unlock()
	check(ReactorStats{Steps: 12, Messages: 50, Gathered: 4})
}
