package obs

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"drover/admin"
	"drover/config"
)

// recorder is an httptest handler that answers with the statuses of its
// script in turn (then 200) and records every body it gets.
type recorder struct {
	mu       sync.Mutex
	statuses []int
	bodies   []string
	got      chan struct{} // receives once per request
}

func newRecorder(statuses ...int) *recorder {
	return &recorder{statuses: statuses, got: make(chan struct{}, 1000)}
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	status := 200
	if n := len(r.bodies); n < len(r.statuses) {
		status = r.statuses[n]
	}
	if req.Header.Get("Content-Type") != "application/json" || req.Method != http.MethodPost {
		status = 415
	}
	r.bodies = append(r.bodies, string(b))
	r.mu.Unlock()
	w.WriteHeader(status)
	r.got <- struct{}{}
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bodies...)
}

// hangingServer never answers: each request waits until the client gives
// up or the test ends.
func hangingServer(t *testing.T) *httptest.Server {
	t.Helper()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the whole body lets the server notice a client that
		// closes the connection, which cancels r.Context().
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	return srv
}

func newNotifier(t *testing.T, opts NotifierOptions) *Notifier {
	t.Helper()
	if opts.BaseDelay == 0 {
		opts.BaseDelay = time.Millisecond
	}
	n, err := NewNotifier(opts)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// closeNotifier drains n, failing the test when that takes absurdly long.
func closeNotifier(t *testing.T, n *Notifier) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := n.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func event(seq uint64) admin.Event {
	return admin.Event{Seq: seq, At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Kind: "job.done",
		JobID: seq, URL: "https://example.com/" + string(rune('a'+seq%26)), Worker: "w1"}
}

func TestNotifierDelivers(t *testing.T) {
	rec := newRecorder()
	srv := httptest.NewServer(rec)
	defer srv.Close()
	n := newNotifier(t, NotifierOptions{URL: srv.URL})
	for i := uint64(1); i <= 3; i++ {
		if !n.Notify(event(i)) {
			t.Fatalf("event %d dropped", i)
		}
	}
	closeNotifier(t, n)

	got := rec.requests()
	if len(got) != 3 {
		t.Fatalf("server got %d requests, want 3", len(got))
	}
	for i, body := range got {
		var ev admin.Event
		if err := json.Unmarshal([]byte(body), &ev); err != nil {
			t.Fatalf("body %q: %v", body, err)
		}
		if want := event(uint64(i + 1)); ev != want {
			t.Errorf("request %d = %+v, want %+v (in order)", i, ev, want)
		}
	}
	if s := n.Stats(); s != (NotifierStats{Sent: 3}) {
		t.Errorf("stats %+v, want 3 sent", s)
	}
}

func TestNotifierRetries(t *testing.T) {
	tests := []struct {
		name     string
		statuses []int
		attempts int
		requests int
		want     NotifierStats
	}{
		{"recovers after two failures", []int{503, 500}, 4, 3, NotifierStats{Sent: 1, Retries: 2}},
		{"429 is retried", []int{429}, 4, 2, NotifierStats{Sent: 1, Retries: 1}},
		{"gives up after the attempts", []int{500, 500, 500, 500, 500}, 4, 4, NotifierStats{Failed: 1, Retries: 3}},
		{"one attempt only", []int{502}, 1, 1, NotifierStats{Failed: 1}},
		{"client error is not retried", []int{400}, 4, 1, NotifierStats{Failed: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := newRecorder(tt.statuses...)
			srv := httptest.NewServer(rec)
			defer srv.Close()
			n := newNotifier(t, NotifierOptions{URL: srv.URL, Attempts: tt.attempts})
			n.Notify(event(7))
			closeNotifier(t, n)
			got := rec.requests()
			if len(got) != tt.requests {
				t.Fatalf("server got %d requests, want %d", len(got), tt.requests)
			}
			for _, b := range got {
				if b != got[0] {
					t.Fatalf("a retry changed the body: %q vs %q", b, got[0])
				}
			}
			if s := n.Stats(); s != tt.want {
				t.Errorf("stats %+v, want %+v", s, tt.want)
			}
		})
	}
}

func TestNotifierServerDown(t *testing.T) {
	srv := httptest.NewServer(newRecorder())
	url := srv.URL
	srv.Close() // connections to url are now refused
	n := newNotifier(t, NotifierOptions{URL: url})
	n.Notify(event(1))
	n.Notify(event(2))
	closeNotifier(t, n)
	if s := n.Stats(); s != (NotifierStats{Failed: 2, Retries: 6}) {
		t.Fatalf("stats %+v, want 2 failed after 4 attempts each (6 retries)", s)
	}
}

func TestRetryDelayDoubles(t *testing.T) {
	tests := []struct {
		base    time.Duration
		attempt int
		want    time.Duration
	}{
		{time.Second, 1, time.Second},
		{time.Second, 2, 2 * time.Second},
		{time.Second, 3, 4 * time.Second},
		{time.Second, 4, 8 * time.Second},
		{time.Minute, 7, time.Hour}, // 64m capped
		{time.Hour, 30, time.Hour},  // no overflow
		{2 * time.Hour, 1, time.Hour},
	}
	for _, tt := range tests {
		if got := retryDelay(tt.base, tt.attempt); got != tt.want {
			t.Errorf("retryDelay(%v, %d) = %v, want %v", tt.base, tt.attempt, got, tt.want)
		}
	}
}

func TestNotifierQueueFullDropsWithoutBlocking(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	}))
	defer srv.Close()
	defer close(release)
	const size = 3
	n := newNotifier(t, NotifierOptions{URL: srv.URL, QueueSize: size})
	n.Notify(event(0))
	select { // the sender holds event 0 in a POST that will not end
	case <-arrived:
	case <-time.After(waitLimit):
		t.Fatal("the first POST never arrived")
	}

	results := make(chan []bool, 1)
	go func() {
		var r []bool
		for i := uint64(1); i <= size+5; i++ {
			r = append(r, n.Notify(event(i)))
		}
		results <- r
	}()
	var got []bool
	select {
	case got = <-results:
	case <-time.After(waitLimit):
		t.Fatal("Notify blocked on a full queue")
	}
	for i, ok := range got {
		if want := i < size; ok != want {
			t.Errorf("Notify #%d = %v, want %v", i+1, ok, want)
		}
	}
	if s := n.Stats(); s.Dropped != 5 || s.Queued != size {
		t.Errorf("stats %+v, want 5 dropped and %d queued", s, size)
	}
	release <- struct{}{}
	for i := 0; i < size; i++ {
		release <- struct{}{} // let the queued ones through
	}
	closeNotifier(t, n)
	if s := n.Stats(); s.Sent != size+1 || s.Dropped != 5 || s.Queued != 0 {
		t.Errorf("after draining: stats %+v, want %d sent", s, size+1)
	}
}

func TestNotifierCloseGivesUpAtDeadline(t *testing.T) {
	srv := hangingServer(t)
	n := newNotifier(t, NotifierOptions{URL: srv.URL, Timeout: time.Hour})
	for i := uint64(1); i <= 3; i++ {
		n.Notify(event(i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := n.Close(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Close = %v, want context.Canceled", err)
	}
	if s := n.Stats(); s.Dropped != 3 || s.Sent != 0 || s.Queued != 0 {
		t.Fatalf("stats %+v, want the 3 reports dropped", s)
	}
	if n.Notify(event(9)) {
		t.Fatal("Notify after Close queued a report")
	}
	if s := n.Stats(); s.Dropped != 4 {
		t.Fatalf("a report after Close was not counted as dropped: %+v", s)
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestNotifierPostTimeout(t *testing.T) {
	srv := hangingServer(t)
	n := newNotifier(t, NotifierOptions{URL: srv.URL, Timeout: 20 * time.Millisecond, Attempts: 2})
	n.Notify(event(1))
	closeNotifier(t, n)
	if s := n.Stats(); s != (NotifierStats{Failed: 1, Retries: 1}) {
		t.Fatalf("stats %+v, want 1 failed after 2 timed-out attempts", s)
	}
}

func TestNotifierOptions(t *testing.T) {
	for _, u := range []string{"", "example.com/x", "ftp://example.com", "http://", "://"} {
		if _, err := NewNotifier(NotifierOptions{URL: u}); err == nil || !strings.Contains(err.Error(), "http") {
			t.Errorf("NewNotifier(%q) = %v, want an error", u, err)
		}
	}
	c := config.Default().Notifier
	c.URL = "https://hooks.example.com/drover"
	o := NotifierOptionsFrom(c)
	if o.URL != c.URL || o.Attempts != 4 || o.BaseDelay != time.Second || o.Timeout != 10*time.Second || o.QueueSize != 1000 {
		t.Fatalf("NotifierOptionsFrom(defaults) = %+v", o)
	}
	n, err := NewNotifier(NotifierOptions{URL: c.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(context.Background())
	if n.opts.Attempts != 4 || n.opts.BaseDelay != time.Second || n.opts.QueueSize != 1000 || n.opts.Timeout != 10*time.Second {
		t.Fatalf("defaults not applied: %+v", n.opts)
	}
}

func TestNotifierMetrics(t *testing.T) {
	rec := newRecorder(500)
	srv := httptest.NewServer(rec)
	defer srv.Close()
	n := newNotifier(t, NotifierOptions{URL: srv.URL, QueueSize: 1})
	m := NewMetrics()
	if err := m.RegisterNotifier(n); err != nil {
		t.Fatal(err)
	}
	n.Notify(event(1))
	closeNotifier(t, n)
	n.Notify(event(2)) // dropped: closed
	f := scrape(t, startServer(t, Handler(m, nil)))
	for name, want := range map[string]float64{
		"drover_notifier_sent_total": 1, "drover_notifier_retries_total": 1, "drover_notifier_dropped_total": 1,
		"drover_notifier_failed_total": 0, "drover_notifier_queue_length": 0,
	} {
		if got := f.value(t, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// holdingServer answers no request: each waits until the client gives up
// or the benchmark ends. arrived receives once per request.
func holdingServer(b *testing.B) (url string, arrived <-chan struct{}) {
	stop := make(chan struct{})
	got := make(chan struct{}, 1<<16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	b.Cleanup(func() { close(stop); srv.Close() })
	return srv.URL, got
}

// BenchmarkNotify measures what the broker loop pays per report: a queued
// one, and one dropped because the queue is full. The sender is held in a
// POST that never ends, so the queue only fills.
func BenchmarkNotify(b *testing.B) {
	newN := func(b *testing.B, url string, queue int) *Notifier {
		n, err := NewNotifier(NotifierOptions{URL: url, QueueSize: queue, Timeout: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
	abandon := func(n *Notifier) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = n.Close(ctx)
	}
	ev := event(1)
	b.Run("queued", func(b *testing.B) {
		url, _ := holdingServer(b)
		const chunk = 4096 // a fresh notifier per chunk keeps the queue's memory small
		b.ReportAllocs()
		for done := 0; done < b.N; {
			b.StopTimer()
			n := newN(b, url, chunk+1)
			b.StartTimer()
			for i := 0; i < chunk && done < b.N; i, done = i+1, done+1 {
				if !n.Notify(ev) {
					b.Fatal("dropped with room in the queue")
				}
			}
			b.StopTimer()
			abandon(n)
			b.StartTimer()
		}
	})
	b.Run("dropped", func(b *testing.B) {
		url, arrived := holdingServer(b)
		n := newN(b, url, 1)
		defer abandon(n)
		n.Notify(ev)
		select { // the sender holds this one in a POST that never ends
		case <-arrived:
		case <-time.After(waitLimit):
			b.Fatal("the first POST never arrived")
		}
		n.Notify(ev) // the queue holds this one: full
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if n.Notify(ev) {
				b.Fatal("queued into a full queue")
			}
		}
	})
}
