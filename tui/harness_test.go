package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"drover/admin"
)

// t0 is the fixed "now" of the test clock.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func fixedClock() time.Time { return t0 }

// seedBackend fills a test backend with a small, varied crawl: workers in
// every state, jobs in every state (throttled, failed, requested keys with
// waiters, a very long URL), host back-offs and events.
func seedBackend() *memBackend { return seedBackendAt(t0, fixedClock) }

// seedBackendAt is seedBackend with its timestamps around base and its
// own clock.
func seedBackendAt(base time.Time, clock func() time.Time) *memBackend {
	b := newMemBackend(clock)
	ago := func(d time.Duration) time.Time { return base.Add(-d) }
	b.addWorker(admin.WorkerRow{ID: "w-01", Host: "crawler-a", Headers: map[string]string{"region": "eu", "threads": "4"},
		State: "busy", Slots: 4, Used: 2, Jobs: []uint64{1, 2}, Done: 120, Failures: 2, LastHeartbeat: ago(time.Second), Since: ago(3 * time.Hour)})
	b.addWorker(admin.WorkerRow{ID: "w-02", Host: "crawler-a", Headers: map[string]string{"region": "eu"},
		State: "idle", Slots: 2, Done: 98, LastHeartbeat: ago(2 * time.Second), Since: ago(3 * time.Hour)})
	b.addWorker(admin.WorkerRow{ID: "w-03", Host: "crawler-b", Headers: map[string]string{"region": "us", "hwgroup": "gpu"},
		State: "draining", Slots: 2, Used: 1, Jobs: []uint64{3}, Done: 40, Failures: 5, LastHeartbeat: ago(time.Second), Since: ago(90 * time.Minute)})
	b.addWorker(admin.WorkerRow{ID: "w-04", Host: "crawler-b", Headers: map[string]string{"region": "us"},
		State: "busy", Slots: 1, Used: 1, Jobs: []uint64{4}, Done: 12_345, Failures: 17, LastHeartbeat: ago(3 * time.Second), Since: ago(26 * time.Hour)})
	b.addWorker(admin.WorkerRow{ID: "w-05", Host: "crawler-c", State: "lost", Slots: 1, Done: 7, Failures: 1,
		LastHeartbeat: ago(45 * time.Second), Since: ago(10 * time.Minute)})
	b.addWorker(admin.WorkerRow{ID: "w-06", Host: "crawler-c", State: "idle", Slots: 8, Done: 0, LastHeartbeat: ago(time.Second), Since: ago(30 * time.Second)})

	job := func(jid uint64, url, state string, f func(j *admin.JobRow)) {
		j := admin.JobRow{JobID: jid, Crawler: "news", Processor: "html", URL: url, State: state,
			Created: ago(time.Duration(40-jid) * time.Minute), Updated: ago(time.Duration(jid) * time.Second)}
		if f != nil {
			f(&j)
		}
		b.addJob(j)
	}
	job(1, "https://example.com/", "dispatched", func(j *admin.JobRow) {
		j.Worker, j.Attempts = "w-01", 1
		j.History = []admin.Attempt{{Worker: "w-01", At: ago(5 * time.Second)}}
	})
	job(2, "https://example.com/docs/getting-started", "dispatched", func(j *admin.JobRow) { j.Worker, j.Attempts = "w-01", 1 })
	job(3, "https://shop.example.org/catalogue?page=2", "dispatched", func(j *admin.JobRow) { j.Worker, j.Attempts = "w-03", 2; j.Failures = 1 })
	job(4, "https://news.example.net/2025/03/01/a-very-long-headline-that-goes-on-and-on-and-does-not-fit-in-any-column", "dispatched",
		func(j *admin.JobRow) { j.Worker, j.Attempts = "w-04", 1 })
	job(5, "https://throttled.example.com/a", "backoff", func(j *admin.JobRow) {
		j.Attempts, j.Throttles, j.RetryAt = 2, 2, base.Add(30*time.Second)
		j.Reason, j.Wait, j.LastError = "host back-off", admin.WaitHostBackoff, "429 Too Many Requests (Retry-After: 30)"
		j.History = []admin.Attempt{
			{Worker: "w-01", At: ago(2 * time.Minute), Outcome: "throttled", Error: "429 Too Many Requests"},
			{Worker: "w-04", At: ago(40 * time.Second), Outcome: "throttled", Error: "429 Too Many Requests (Retry-After: 30)"},
		}
	})
	job(6, "https://throttled.example.com/b", "backoff", func(j *admin.JobRow) {
		j.Attempts, j.Throttles, j.RetryAt, j.Reason, j.Wait = 1, 1, base.Add(30*time.Second), "host back-off", admin.WaitHostBackoff
	})
	job(7, "https://flaky.example.com/report.pdf", "failed", func(j *admin.JobRow) {
		j.Attempts, j.Failures, j.LastError = 3, 3, "internal: timeout after 30s"
		j.History = []admin.Attempt{
			{Worker: "w-01", At: ago(9 * time.Minute), Outcome: "internal", Error: "timeout after 30s"},
			{Worker: "w-02", At: ago(6 * time.Minute), Outcome: "internal", Error: "timeout after 30s"},
			{Worker: "w-05", At: ago(3 * time.Minute), Outcome: "lost"},
		}
	})
	job(8, "https://bad.example.com/%zz", "failed", func(j *admin.JobRow) {
		j.Attempts, j.Failures, j.LastError = 1, 1, "external: malformed URL"
	})
	job(9, "https://example.com/about", "done", func(j *admin.JobRow) { j.Attempts = 1 })
	job(10, "https://example.com/contact", "done", func(j *admin.JobRow) { j.Attempts = 1 })
	job(11, "https://gpu.example.com/render", "queued", func(j *admin.JobRow) {
		j.Reason = "unroutable: no live worker has hwgroup=tpu"
	})
	for i := uint64(12); i <= 24; i++ {
		job(i, fmt.Sprintf("https://example.com/blog/post-%02d", i), "queued", nil)
	}
	// Requested keys: leased by a producer session, no job yet.
	job(0, "https://example.com/pricing", "requested", func(j *admin.JobRow) { j.Owner, j.Waiters = "s-17", 3 })
	job(0, "https://example.com/careers", "requested", func(j *admin.JobRow) { j.Owner = "s-18" })

	pricing := b.jobs[len(b.jobs)-2].Key
	b.waiters[pricing] = []admin.WaiterRow{
		{Position: 1, Session: "s-21", Since: ago(12 * time.Second)},
		{Position: 2, Session: "s-22", Since: ago(8 * time.Second)},
		{Position: 3, Session: "s-30", Since: ago(time.Second)},
	}
	b.hosts = []admin.HostRow{
		{Host: "throttled.example.com", Until: base.Add(30 * time.Second), Throttles: 3, Jobs: 2},
		{Host: "slow.example.org", Until: base.Add(5 * time.Second), Throttles: 1, Jobs: 0},
	}
	kinds := []admin.EventKind{"job.dispatched", "job.done", "job.throttled", "key.handover", "job.failed", "worker.lost"}
	for i := 0; i < 25; i++ {
		e := admin.Event{At: ago(time.Duration(25-i) * 10 * time.Second), Kind: kinds[i%len(kinds)],
			JobID: uint64(i%10 + 1), Worker: fmt.Sprintf("w-0%d", i%6+1), URL: fmt.Sprintf("https://example.com/blog/post-%02d", i+12)}
		if e.Kind == "job.failed" {
			e.Detail = "internal: timeout after 30s"
		}
		if e.Kind == "key.handover" {
			e.JobID, e.Worker, e.Detail = 0, "", "owner s-9 died; s-21 now owns it"
		}
		b.addEvent(e)
	}
	b.dispatches = 1234
	return b
}

// harness drives the model's Update directly, as Bubble Tea would but
// deterministically: commands run in-line, one message at a time; timers
// are held (cooldowns fire at once unless holdCool is set; polls and flash
// expiries fire only when a test asks); only the wait on the backend's
// Changed channel runs in a goroutine, and await feeds what it delivers.
type harness struct {
	t        testing.TB
	m        *model
	b        *memBackend
	async    chan tea.Msg
	done     chan struct{}
	timers   []timerMsg
	holdCool bool
}

// timerMsg is a timer the model started, held by the harness.
type timerMsg struct {
	d   time.Duration
	msg tea.Msg
}

// blockingMsg is a command that waits on the outside world.
type blockingMsg struct{ cmd tea.Cmd }

// newHarness starts a model on a test backend at the given size; when it
// returns, the first window has been fetched and drawn.
func newHarness(t testing.TB, b *memBackend, opts Options, w, h int) *harness {
	t.Helper()
	if opts.Clock == nil {
		opts.Clock = fixedClock
	}
	if opts.Theme == "" && !opts.NoColor {
		opts.Theme = "dark"
	}
	hs := &harness{t: t, b: b, async: make(chan tea.Msg, 16), done: make(chan struct{})}
	hs.m = newModel(context.Background(), b, opts)
	hs.m.after = func(d time.Duration, msg tea.Msg) tea.Cmd {
		return func() tea.Msg { return timerMsg{d: d, msg: msg} }
	}
	hs.m.blocking = func(c tea.Cmd) tea.Cmd { return func() tea.Msg { return blockingMsg{cmd: c} } }
	t.Cleanup(func() {
		close(hs.done)
		hs.m.cancel()
	})
	hs.send(tea.WindowSizeMsg{Width: w, Height: h})
	hs.run(hs.m.Init())
	return hs
}

// send gives a message to Update and runs everything that follows from it.
func (h *harness) send(msg tea.Msg) {
	h.t.Helper()
	queue := []tea.Msg{msg}
	for n := 0; len(queue) > 0; n++ {
		if n > 10_000 {
			h.t.Fatalf("the model keeps sending itself messages; last %T", queue[0])
		}
		msg, queue = queue[0], queue[1:]
		switch mm := msg.(type) {
		case nil:
		case tea.BatchMsg:
			for _, c := range mm {
				if c != nil {
					queue = append(queue, c())
				}
			}
		case timerMsg:
			if _, cool := mm.msg.(coolDoneMsg); cool && !h.holdCool {
				queue = append(queue, mm.msg)
			} else {
				h.timers = append(h.timers, mm)
			}
		case blockingMsg:
			go func() {
				r := mm.cmd()
				select {
				case h.async <- r:
				case <-h.done:
				}
			}()
		default:
			_, cmd := h.m.Update(msg)
			if cmd != nil {
				queue = append(queue, cmd())
			}
		}
	}
}

// run runs a command as if Update had returned it.
func (h *harness) run(cmd tea.Cmd) {
	h.t.Helper()
	if cmd != nil {
		h.send(cmd())
	}
}

// fire delivers the held timers whose message satisfies match.
func (h *harness) fire(match func(tea.Msg) bool) int {
	h.t.Helper()
	var keep, due []timerMsg
	for _, tm := range h.timers {
		if match(tm.msg) {
			due = append(due, tm)
		} else {
			keep = append(keep, tm)
		}
	}
	h.timers = keep
	for _, tm := range due {
		h.send(tm.msg)
	}
	return len(due)
}

// await feeds what the Changed goroutine delivers to Update until cond
// holds, or fails the test after a generous deadline.
func (h *harness) await(what string, cond func(m *model) bool) {
	h.t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for !cond(h.m) {
		select {
		case msg := <-h.async:
			h.send(msg)
		case <-deadline.C:
			h.t.Fatalf("timed out waiting for %s; screen:\n%s", what, h.screen())
		}
	}
}

// refresh forces a round of backend calls (as ctrl+r does); it has been
// applied when refresh returns.
func (h *harness) refresh() {
	h.t.Helper()
	seq := h.m.refresh.seq
	h.send(refreshMsg{})
	if h.m.refresh.applied <= seq {
		h.t.Fatalf("refresh: no round applied (seq %d, applied %d)", seq, h.m.refresh.applied)
	}
}

// keys presses keys by name ("j", "enter", "ctrl+c", "S").
func (h *harness) keys(names ...string) {
	h.t.Helper()
	for _, n := range names {
		h.send(keyPress(n))
	}
}

// keyPress builds the key press Bubble Tea would deliver for a key name.
func keyPress(name string) tea.KeyPressMsg {
	special := map[string]tea.KeyPressMsg{
		"enter": {Code: tea.KeyEnter}, "esc": {Code: tea.KeyEscape}, "tab": {Code: tea.KeyTab},
		"shift+tab": {Code: tea.KeyTab, Mod: tea.ModShift}, "up": {Code: tea.KeyUp}, "down": {Code: tea.KeyDown},
		"left": {Code: tea.KeyLeft}, "right": {Code: tea.KeyRight}, "pgup": {Code: tea.KeyPgUp},
		"pgdown": {Code: tea.KeyPgDown}, "home": {Code: tea.KeyHome}, "end": {Code: tea.KeyEnd},
		"space": {Code: tea.KeySpace, Text: " "}, "backspace": {Code: tea.KeyBackspace},
		"ctrl+c": {Code: 'c', Mod: tea.ModCtrl}, "ctrl+r": {Code: 'r', Mod: tea.ModCtrl},
		"ctrl+b": {Code: 'b', Mod: tea.ModCtrl}, "ctrl+f": {Code: 'f', Mod: tea.ModCtrl},
	}
	if k, ok := special[name]; ok {
		return k
	}
	r := []rune(name)[0]
	return tea.KeyPressMsg{Code: r, Text: name}
}

// typeText types text into whatever has the keyboard.
func (h *harness) typeText(s string) {
	h.t.Helper()
	for _, r := range s {
		h.send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

// screen is the rendered screen without styling.
func (h *harness) screen() string { return ansi.Strip(h.m.render()) }

// selected is the identity of the selected row.
func (h *harness) selected() string { return h.m.pane().selID }

// flash is the current flash text.
func (h *harness) flash() string { return h.m.flash.text }

// mustContain fails unless the screen holds every string.
func (h *harness) mustContain(want ...string) {
	h.t.Helper()
	s := h.screen()
	for _, w := range want {
		if !strings.Contains(s, w) {
			h.t.Errorf("screen lacks %q:\n%s", w, s)
		}
	}
}
