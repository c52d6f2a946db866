package tui

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"drover/admin"
)

var (
	bigOnce    sync.Once
	bigBackend *memBackend
)

// bigTable is a test backend with 1M jobs and 10k workers, built once.
// Windows in the default order are sliced in O(limit).
func bigTable() *memBackend {
	bigOnce.Do(func() {
		b := newMemBackend(fixedClock)
		states := []string{"queued", "queued", "queued", "dispatched", "done", "done", "backoff", "failed", "queued", "requested"}
		const nJobs, nWorkers = 1_000_000, 10_000
		b.jobs = make([]admin.JobRow, nJobs)
		for i := range b.jobs {
			st := states[i%len(states)]
			j := admin.JobRow{
				JobID: uint64(i + 1), Key: fmt.Sprintf("%032x", i), Crawler: "news", Processor: "html",
				URL:   fmt.Sprintf("https://site-%04d.example.com/articles/%07d", i%5000, i),
				State: st, Attempts: i % 4, Failures: i % 3, Created: t0.Add(-time.Duration(i) * time.Second),
			}
			switch st {
			case "dispatched":
				j.Worker = fmt.Sprintf("w-%05d", i%nWorkers)
			case "backoff":
				j.RetryAt, j.Reason = t0.Add(20*time.Second), "host back-off"
			case "failed":
				j.LastError = "internal: timeout after 30s"
			case "requested":
				j.JobID, j.Owner = 0, "s-1"
			}
			b.jobs[i] = j
		}
		for i := 0; i < nWorkers; i++ {
			b.addWorker(admin.WorkerRow{
				ID: fmt.Sprintf("w-%05d", i), Host: fmt.Sprintf("crawler-%03d", i%300),
				Headers: map[string]string{"region": "eu", "threads": "8"}, State: "busy", Slots: 4, Used: 3,
				Jobs: []uint64{uint64(i + 1), uint64(i + 2), uint64(i + 3)}, Done: uint64(i * 7),
				LastHeartbeat: t0.Add(-time.Second), Since: t0.Add(-time.Hour),
			})
		}
		bigBackend = b
	})
	return bigBackend
}

// frameModel is a model on the big table at 120x40, its first window
// loaded. Its timers and the Changed wait are switched off: the benchmark
// drives every round itself.
func frameModel(b *testing.B, view string) *model {
	b.Helper()
	m := newModel(b.Context(), bigTable(), Options{Clock: fixedClock, Theme: "dark"})
	m.after = func(time.Duration, tea.Msg) tea.Cmd { return nil }
	m.blocking = func(tea.Cmd) tea.Cmd { return nil }
	drain(m, m.Init())
	_, cmd := m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	drain(m, cmd)
	if view != "" {
		_, cmd := m.Update(keyPress(view))
		drain(m, cmd)
	}
	if !m.pane().loaded {
		b.Fatal("first window not loaded")
	}
	return m
}

// drain runs a command and everything that follows from it, in-line.
func drain(m *model, cmd tea.Cmd) {
	for q := []tea.Cmd{cmd}; len(q) > 0; {
		c := q[0]
		q = q[1:]
		if c == nil {
			continue
		}
		switch msg := c().(type) {
		case nil:
		case tea.BatchMsg:
			q = append(q, msg...)
		default:
			_, next := m.Update(msg)
			q = append(q, next)
		}
	}
}

// refreshFrame is one refresh as the program runs it after a change: the
// backend round (totals and the window), Update with the answer, and View.
func refreshFrame(m *model) string {
	drain(m, m.requestRefresh(true))
	return m.View().Content
}

// keyFrame is one key press: Update, any round it needs, and View.
func keyFrame(key string) func(m *model) string {
	return func(m *model) string {
		_, cmd := m.Update(keyPress(key))
		drain(m, cmd)
		return m.View().Content
	}
}

// BenchmarkFrame measures one frame at 1M jobs and 10k workers: the
// backend round, Update and View (issue 5 asks for at most 5 ms).
func BenchmarkFrame(b *testing.B) {
	cases := []struct {
		name  string
		view  string
		setup []string
		frame func(m *model) string
	}{
		{name: "jobs/refresh", view: "2", frame: refreshFrame},
		{name: "jobs/refresh-at-last-row", view: "2", setup: []string{"G"}, frame: refreshFrame},
		{name: "jobs/detail-open", view: "2", setup: []string{"enter"}, frame: refreshFrame},
		{name: "jobs/key-j", view: "2", frame: keyFrame("j")},
		{name: "jobs/key-pgdown", view: "2", frame: keyFrame("pgdown")},
		{name: "workers/refresh", view: "1", frame: refreshFrame},
		{name: "workers/key-j", view: "1", frame: keyFrame("j")},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			m := frameModel(b, tc.view)
			for _, k := range tc.setup {
				keyFrame(k)(m)
			}
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n += len(tc.frame(m))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/frame")
			if n == 0 {
				b.Fatal("no output")
			}
		})
	}
}

// countingWriter counts the bytes the renderer writes to the terminal.
type countingWriter struct{ n atomic.Int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	return len(p), nil
}

// BenchmarkIdleBytes runs the real program with the real renderer on a
// counting writer, the console live but the coordinator unchanged (ages and
// countdowns still tick, from the wall clock), and reports the bytes written
// to the terminal per second. Each iteration is one second of wall time.
// "poll" has no change signals; "changed-100Hz" has the backend signal a
// change every 10 ms with nothing changed (the console refreshes at most
// 10 times a second: rounds/s shows it). Issue 5 asks for at most 2 KB/s.
func BenchmarkIdleBytes(b *testing.B) {
	for _, storm := range []bool{false, true} {
		name := "poll"
		if storm {
			name = "changed-100Hz"
		}
		for _, view := range []string{"1", "2", "4"} {
			b.Run(name+"/view-"+view, func(b *testing.B) {
				benchIdleBytes(b, view, storm)
			})
		}
	}
}

func benchIdleBytes(b *testing.B, view string, storm bool) {
	now := time.Now()
	backend := seedBackendAt(now, time.Now)
	defer backend.close()
	snap := &atomic.Pointer[snapshot]{}
	m := newModel(b.Context(), backend, Options{Theme: "dark", Embedded: true})
	w := &countingWriter{}
	p := tea.NewProgram(observed{m: m, snap: snap},
		tea.WithInput(nil), tea.WithOutput(w), tea.WithWindowSize(120, 40),
		tea.WithColorProfile(colorprofile.TrueColor), tea.WithEnvironment([]string{"TERM=xterm-256color"}),
		tea.WithoutSignals(), tea.WithContext(b.Context()))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := p.Run(); err != nil {
			b.Error(err)
		}
	}()
	defer func() { p.Quit(); <-done }()
	p.Send(keyPress(view))
	waitLoaded(b, snap, view)
	waitQuiet(b, w)

	stop := make(chan struct{})
	var stormDone sync.WaitGroup
	if storm {
		stormDone.Add(1)
		go func() {
			defer stormDone.Done()
			t := time.NewTicker(10 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					backend.notify()
				}
			}
		}()
	}
	start, rounds := w.n.Load(), snap.Load().rounds
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		<-time.After(time.Second) // the measurement window, not a wait for a condition
	}
	b.StopTimer()
	close(stop)
	stormDone.Wait()
	bytes := w.n.Load() - start
	b.ReportMetric(float64(bytes)/b.Elapsed().Seconds(), "B/s")
	b.ReportMetric(float64(snap.Load().rounds-rounds)/b.Elapsed().Seconds(), "rounds/s")
	b.ReportMetric(0, "ns/op")
}

// waitLoaded polls until the view's first window is on screen.
func waitLoaded(b *testing.B, snap *atomic.Pointer[snapshot], view string) {
	b.Helper()
	want := map[string]string{"1": "[1 Workers]", "2": "[2 Jobs]", "4": "[4 Retries]"}[view]
	deadline := time.Now().Add(10 * time.Second)
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		if s := snap.Load(); s != nil && s.idle && strings.Contains(s.screen, want) && strings.Contains(s.screen, "rows 1") {
			return
		}
		if time.Now().After(deadline) {
			b.Fatal("the console never showed its first window")
		}
		<-t.C
	}
}

// waitQuiet polls until the renderer has written nothing for 200ms, so the
// first full paint is not counted.
func waitQuiet(b *testing.B, w *countingWriter) {
	b.Helper()
	deadline := time.Now().Add(10 * time.Second)
	last, since := w.n.Load(), time.Now()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for time.Since(since) < 200*time.Millisecond {
		if time.Now().After(deadline) {
			b.Fatal("the renderer never went quiet")
		}
		<-t.C
		if n := w.n.Load(); n != last {
			last, since = n, time.Now()
		}
	}
}
