package obs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"drover/admin"
	"drover/clock"
	"drover/config"
)

// recorder is an httptest handler that answers with the statuses of its
// script in turn (then 200) and records every body it gets.
type recorder struct {
	mu       sync.Mutex
	statuses []int
	bodies   []string
	keys     []string      // Idempotency-Key of each request
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
	r.keys = append(r.keys, req.Header.Get("Idempotency-Key"))
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
	n := newNotifier(t, NotifierOptions{URL: srv.URL, Origin: "c0ffee"})
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
	rec.mu.Lock()
	keys := rec.keys
	rec.mu.Unlock()
	if want := []string{"c0ffee-1", "c0ffee-2", "c0ffee-3"}; !slices.Equal(keys, want) {
		t.Errorf("Idempotency-Key headers %q, want %q", keys, want)
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

// The waits between attempts are the back-off's, on the notifier's clock:
// the next attempt is made only once the fake clock has passed the wait,
// which doubles.
func TestNotifierWaitsOnItsClock(t *testing.T) {
	rec := newRecorder(503, 503)
	srv := httptest.NewServer(rec)
	defer srv.Close()
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	n := newNotifier(t, NotifierOptions{URL: srv.URL, BaseDelay: time.Minute, Clock: fake})
	n.Notify(event(3))
	for i, want := range []time.Duration{time.Minute, 2 * time.Minute} {
		select {
		case d := <-fake.Created():
			if d != want {
				t.Fatalf("wait %d: %v, want %v", i+1, d, want)
			}
		case <-time.After(waitLimit):
			t.Fatalf("wait %d: no timer within %v", i+1, waitLimit)
		}
		if got := len(rec.requests()); got != i+1 {
			t.Fatalf("waiting %d: %d requests made, want %d", i+1, got, i+1)
		}
		fake.Advance(want - time.Second) // not yet
		if fake.Pending() != 1 {
			t.Fatalf("wait %d fired %v early", i+1, time.Second)
		}
		fake.Advance(time.Second)
	}
	closeNotifier(t, n)
	if got, s := len(rec.requests()), n.Stats(); got != 3 || s != (NotifierStats{Sent: 1, Retries: 2}) {
		t.Errorf("%d requests, stats %+v: want 3 and one sent after two retries", got, s)
	}
}

// stuckServer holds each request until release receives; arrived
// receives once per request, with its event's seq.
func stuckServer(t *testing.T) (url string, arrived chan uint64, release chan struct{}) {
	t.Helper()
	release = make(chan struct{})
	arrived = make(chan uint64, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev admin.Event
		_ = json.NewDecoder(r.Body).Decode(&ev)
		arrived <- ev.Seq
		<-release
	}))
	t.Cleanup(srv.Close)
	return srv.URL, arrived, release
}

// A notifier that falls behind spills what its queue cannot hold, without
// blocking the caller and without losing a report, and delivers everything
// in order once the endpoint catches up: to memory, or to a spill file.
func TestNotifierSpillsWhenBehind(t *testing.T) {
	for _, file := range []bool{false, true} {
		t.Run(fmt.Sprintf("file=%v", file), func(t *testing.T) {
			url, arrived, release := stuckServer(t)
			const size = 3
			opts := NotifierOptions{URL: url, QueueSize: size}
			if file {
				opts.SpillPath = filepath.Join(t.TempDir(), "spill.jsonl")
			}
			n := newNotifier(t, opts)
			n.Notify(event(1))
			select { // the sender holds event 1 in a POST that does not end yet
			case <-arrived:
			case <-time.After(waitLimit):
				t.Fatal("the first POST never arrived")
			}
			results := make(chan []bool, 1)
			go func() {
				var r []bool
				for i := uint64(2); i <= size+7; i++ {
					r = append(r, n.Notify(event(i)))
				}
				results <- r
			}()
			select {
			case got := <-results:
				if slices.Contains(got, false) {
					t.Fatalf("Notify results %v: want every report taken", got)
				}
			case <-time.After(waitLimit):
				t.Fatal("Notify blocked on a full queue")
			}
			if s := n.Stats(); s.Dropped != 0 || s.Spilled != 6 || s.Queued != size+6 {
				t.Errorf("stats %+v, want 6 spilled and %d waiting", s, size+6)
			}
			order := []uint64{1}
			for len(order) < size+7 {
				release <- struct{}{}
				select {
				case seq := <-arrived:
					order = append(order, seq)
				case <-time.After(waitLimit):
					t.Fatalf("delivered %v, then nothing", order)
				}
			}
			close(release)
			closeNotifier(t, n)
			if want := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}; !slices.Equal(order, want) {
				t.Errorf("delivered %v, want %v", order, want)
			}
			if s := n.Stats(); s.Sent != size+7 || s.Dropped != 0 || s.Queued != 0 {
				t.Errorf("after draining: stats %+v, want %d sent", s, size+7)
			}
			if file {
				if fi, err := os.Stat(opts.SpillPath); err != nil || fi.Size() != 0 || fi.Mode().Perm() != 0o600 {
					t.Errorf("spill file after draining: %v %v, want empty, mode 0600", fi, err)
				}
			}
		})
	}
}

// Reports left in the spill file when a notifier stops undelivered are
// delivered, first and in order, by the next notifier on that file; a line
// cut short by a crash is dropped.
func TestNotifierSpillSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spill.jsonl")
	url, arrived, release := stuckServer(t)
	n := newNotifier(t, NotifierOptions{URL: url, QueueSize: 1, SpillPath: path, Timeout: time.Hour})
	for i := uint64(1); i <= 5; i++ {
		n.Notify(event(i))
	}
	<-arrived // 1 is in a POST, 2 in the queue, 3-5 in the file: all kept
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := n.Close(ctx); err == nil {
		t.Fatal("Close with a cancelled context and reports left: want an error")
	}
	close(release)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":99,"kind":"job.do`) // a crash in the middle of a line
	f.Close()

	rec := newRecorder()
	srv := httptest.NewServer(rec)
	defer srv.Close()
	n2 := newNotifier(t, NotifierOptions{URL: srv.URL, SpillPath: path})
	n2.Notify(event(6))
	closeNotifier(t, n2)
	var seqs []uint64
	for _, body := range rec.requests() {
		var ev admin.Event
		if err := json.Unmarshal([]byte(body), &ev); err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ev.Seq)
	}
	if want := []uint64{1, 2, 3, 4, 5, 6}; !slices.Equal(seqs, want) {
		t.Fatalf("second notifier delivered %v, want %v", seqs, want)
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
// one, and one spilled (to memory) because the queue is full. The sender is held in a
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
	b.Run("spilled", func(b *testing.B) {
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
			if !n.Notify(ev) {
				b.Fatal("not spilled")
			}
		}
	})
}
