package tui

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"drover/admin"
)

// keyOf returns the key of the job with that URL in the test backend.
func (b *memBackend) keyOf(t testing.TB, url string) string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, j := range b.jobs {
		if j.URL == url {
			return j.Key
		}
	}
	t.Fatalf("no job %s", url)
	return ""
}

// lastQuery is the last window query the console made for a view.
func lastQuery(b *memBackend, v admin.View) admin.Query {
	qs := b.queryLog()
	for i := len(qs) - 1; i >= 0; i-- {
		detail := qs[i].View == admin.ViewJobs && qs[i].Key != ""
		probe := strings.HasPrefix(qs[i].Filter, "worker=") && qs[i].Limit <= detailJobsLimit
		if qs[i].View == v && !detail && !probe && qs[i].Limit < markAllCap {
			return qs[i]
		}
	}
	return admin.Query{}
}

func TestFirstScreenAsksOnlyForTheWindow(t *testing.T) {
	b := newMemBackend(fixedClock)
	for i := 0; i < 5000; i++ {
		b.addJob(admin.JobRow{JobID: uint64(i + 1), Crawler: "c", Processor: "p", URL: fmt.Sprintf("https://e.com/%05d", i), State: "queued"})
	}
	h := newHarness(t, b, Options{}, 80, 24)
	h.keys("2", "G", "g", "pgdown", "pgdown", "j", "k")
	vis := h.m.visRows()
	if vis != 16 {
		t.Fatalf("visible rows at 80x24 = %d, want 16", vis)
	}
	b.mu.Lock()
	maxLim := b.maxLim
	b.mu.Unlock()
	// The window plus a margin of one page on each side.
	if maxLim > 3*vis {
		t.Errorf("largest limit asked = %d, want at most %d (3 pages)", maxLim, 3*vis)
	}
	if got := h.m.pane().cursor; got != 2*vis {
		t.Errorf("after G g pgdn pgdn j k the cursor is on row %d, want %d", got, 2*vis)
	}
	if top := h.m.pane().top; top != 18 {
		t.Errorf("top row %d, want 18", top)
	}
	h.mustContain("rows 19–34 of 5,000", "https://e.com/00032")
}

func TestNavigation(t *testing.T) {
	h := newHarness(t, seedBackend(), Options{}, 80, 24)
	h.keys("2")
	tests := []struct {
		key  string
		want int // cursor after the key
	}{
		{"j", 1}, {"down", 2}, {"k", 1}, {"up", 0}, {"up", 0},
		{"G", 25}, {"j", 25}, {"g", 0}, {"pgdown", 16}, {"pgdown", 25}, {"pgup", 9}, {"home", 0}, {"end", 25},
	}
	for _, tc := range tests {
		h.keys(tc.key)
		p := h.m.pane()
		if p.cursor != tc.want {
			t.Fatalf("after %s: cursor %d, want %d", tc.key, p.cursor, tc.want)
		}
		if p.cursor < p.top || p.cursor >= p.top+h.m.visRows() {
			t.Fatalf("after %s: cursor %d off screen (top %d)", tc.key, p.cursor, p.top)
		}
		if p.selID == "" {
			t.Fatalf("after %s: no selection identity", tc.key)
		}
	}
}

func TestFilter(t *testing.T) {
	b := seedBackend()
	h := newHarness(t, b, Options{}, 120, 30)
	h.keys("2", "/")
	if h.m.mode != modeFilter {
		t.Fatal("/ should open the filter")
	}
	h.typeText("state=failed")
	h.keys("enter")
	if q := lastQuery(b, admin.ViewJobs); q.Filter != "state=failed" {
		t.Fatalf("filter sent = %q, want state=failed", q.Filter)
	}
	h.mustContain("filter state=failed", "flaky.example.com/report.pdf", "bad.example.com", "rows 1–2 of 2")
	if strings.Contains(h.screen(), "throttled.example.com") {
		t.Error("a backoff job shows under state=failed")
	}

	// Free text and a host term, edited from the current filter.
	h.keys("/")
	for range len("state=failed") {
		h.keys("backspace")
	}
	h.typeText("host=example.com blog")
	h.keys("enter")
	if q := lastQuery(b, admin.ViewJobs); q.Filter != "host=example.com blog" {
		t.Fatalf("filter sent = %q", q.Filter)
	}
	h.mustContain("rows 1–13 of 13", "https://example.com/blog/p")
	if h.m.pane().selLabel != "https://example.com/blog/post-12" {
		t.Errorf("first row %s, want post-12", h.m.pane().selLabel)
	}

	// A bad term is refused in place, naming the field; nothing is sent.
	before := len(b.queryLog())
	h.keys("/")
	h.typeText(" colour=red")
	h.keys("enter")
	if h.m.mode != modeFilter {
		t.Error("a bad filter should keep the editor open")
	}
	h.mustContain(`unknown field "colour"`)
	if len(b.queryLog()) != before {
		t.Error("a bad filter was sent to the backend")
	}
	// esc leaves the editor without touching the applied filter.
	h.keys("esc")
	if h.m.pane().filter != "host=example.com blog" {
		t.Errorf("esc in the editor changed the filter to %q", h.m.pane().filter)
	}
	// esc in the table clears it.
	h.keys("esc")
	if q := lastQuery(b, admin.ViewJobs); q.Filter != "" {
		t.Errorf("after esc the filter sent is %q, want none", q.Filter)
	}
	h.mustContain("rows 1–22 of 26")

	// A filter nothing matches says so.
	h.keys("/")
	h.typeText("nothing-matches-this")
	h.keys("enter")
	h.mustContain("no jobs match the filter (esc clears it)")
}

func TestSort(t *testing.T) {
	b := seedBackend()
	h := newHarness(t, b, Options{}, 120, 40)
	h.keys("1")
	steps := []struct {
		key  string
		sort string
		desc bool
		hint string // the status line
	}{
		{"s", "id", false, "sort id ↑"},
		{"s", "host", false, "sort host ↑"},
		{"S", "host", true, "sort host ↓"},
		{"s", "state", true, "sort state ↓"},
		{"s", "used", true, ""},
		{"s", "done", true, ""},
		{"s", "failures", true, ""},
		{"s", "last_heartbeat", true, ""},
		{"s", "since", true, ""},
		{"s", "", true, "default order ↓"}, // back to the default order
		{"S", "", false, "default order"},
	}
	for _, st := range steps {
		h.keys(st.key)
		q := lastQuery(b, admin.ViewWorkers)
		if q.Sort != st.sort || q.Desc != st.desc {
			t.Fatalf("after %s: query sort %q desc %v, want %q %v", st.key, q.Sort, q.Desc, st.sort, st.desc)
		}
		if st.hint != "" {
			h.mustContain(st.hint)
		}
	}
	// Sorted by done, descending: the busiest worker first, and the
	// header shows the indicator on DONE.
	h.keys("s", "s", "s", "s", "s", "S")
	if q := lastQuery(b, admin.ViewWorkers); q.Sort != "done" || !q.Desc {
		t.Fatalf("query %+v, want done desc", q)
	}
	if h.selected() != "w-04" {
		t.Errorf("top row by done desc = %s, want w-04", h.selected())
	}
	h.mustContain("DONE↓")
}

func TestSelectionFollowsRowAcrossRefresh(t *testing.T) {
	b := seedBackend()
	h := newHarness(t, b, Options{}, 80, 24)
	h.keys("2", "j", "j", "j", "j", "j") // row 5
	want := b.keyOf(t, "https://throttled.example.com/b")
	if h.selected() != want {
		t.Fatalf("selected %s, want throttled/b", h.selected())
	}
	screenRow := h.m.pane().cursor - h.m.pane().top

	// Three new jobs are created ahead of it: its row moves down by three.
	b.mutate(func(b *memBackend) {
		var front []admin.JobRow
		for i := 0; i < 3; i++ {
			front = append(front, admin.JobRow{JobID: uint64(100 + i), Key: fmt.Sprintf("new-%d", i),
				URL: fmt.Sprintf("https://new.example.com/%d", i), State: "queued"})
		}
		b.jobs = append(front, b.jobs...)
	})
	h.refresh()
	p := h.m.pane()
	if h.selected() != want {
		t.Fatalf("after the rows moved the selection is %s, want throttled/b still", h.selected())
	}
	if p.cursor != 8 {
		t.Errorf("cursor %d, want 8 (5 + 3 rows inserted above)", p.cursor)
	}
	if p.cursor-p.top != screenRow {
		t.Errorf("selected row moved on screen from line %d to %d", screenRow, p.cursor-p.top)
	}
	if h.flash() != "" {
		t.Errorf("unexpected flash %q", h.flash())
	}

	// And back up when rows ahead of it finish and leave (by a re-sort
	// on the server side here: the three new rows go to the end).
	b.mutate(func(b *memBackend) { b.jobs = append(b.jobs[3:], b.jobs[:3]...) })
	h.refresh()
	if h.selected() != want || h.m.pane().cursor != 5 {
		t.Errorf("selection %s at %d, want throttled/b at 5", h.selected(), h.m.pane().cursor)
	}
}

func TestVanishingRowFlash(t *testing.T) {
	tests := []struct {
		name   string
		view   string
		moves  []string
		mutate func(b *memBackend)
		flash  string
	}{
		{
			name: "worker gone", view: "1", moves: []string{"j", "j"},
			mutate: func(b *memBackend) { b.workers = slices.Delete(b.workers, 2, 3) },
			flash:  "worker w-03 is gone",
		},
		{
			name: "job gone", view: "2", moves: []string{"j"},
			mutate: func(b *memBackend) { b.jobs = slices.Delete(b.jobs, 1, 2) },
			flash:  "job https://example.com/docs/getting-started is gone",
		},
		{
			name: "job moved beyond the window", view: "2", moves: []string{"j"},
			mutate: func(b *memBackend) {
				var front []admin.JobRow
				for i := 0; i < 300; i++ {
					front = append(front, admin.JobRow{Key: fmt.Sprintf("k%03d", i), URL: fmt.Sprintf("https://x.com/%03d", i), State: "queued"})
				}
				b.jobs = append(front, b.jobs...)
			},
			flash: "job https://example.com/docs/getting-started moved out of view",
		},
		{
			name: "retry left retries", view: "4", moves: []string{"j", "j"},
			mutate: func(b *memBackend) {
				for i := range b.jobs {
					if b.jobs[i].URL == "https://flaky.example.com/report.pdf" {
						b.jobs[i].State = "queued"
					}
				}
			},
			flash: "job https://flaky.example.com/report.pdf left retries: now queued",
		},
		{
			name: "waiter answered", view: "3", moves: []string{"j"},
			mutate: func(b *memBackend) {
				for k, ws := range b.waiters {
					b.waiters[k] = ws[:1]
				}
			},
			flash: "session s-22 no longer waits",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := seedBackend()
			h := newHarness(t, b, Options{}, 80, 24)
			if tc.view == "3" {
				// Pick the key with waiters first.
				h.keys("2")
				for h.m.pane().selLabel != "https://example.com/pricing" {
					h.keys("j")
				}
			}
			h.keys(tc.view)
			h.keys(tc.moves...)
			before := h.selected()
			b.mutate(tc.mutate)
			h.refresh()
			if !strings.Contains(h.flash(), tc.flash) {
				t.Fatalf("flash %q, want %q", h.flash(), tc.flash)
			}
			if h.selected() == before {
				t.Errorf("selection still on the vanished row %s", before)
			}
			h.mustContain(tc.flash)
		})
	}
}

func TestStaleOnErrorAndRecovery(t *testing.T) {
	b := seedBackend()
	h := newHarness(t, b, Options{}, 80, 24)
	h.mustContain("● live")

	b.setErr(errUnavailable)
	h.refresh()
	if !h.m.coord.stale {
		t.Fatal("backend error: want STALE")
	}
	h.mustContain("STALE", "coordinator not answering: totals: coordinator unavailable")
	// The last good rows stay on screen while stale.
	h.mustContain("w-01", "w-06")

	b.setErr(nil)
	h.refresh()
	if h.m.coord.stale {
		t.Fatal("answers came back: want live")
	}
	h.mustContain("● live")
	if strings.Contains(h.screen(), "STALE") {
		t.Error("STALE still shown after recovery")
	}
}

func TestStaleOnTimeoutAndPollRecovery(t *testing.T) {
	b := seedBackend()
	h := newHarness(t, b, Options{Timeout: 20 * time.Millisecond, Poll: time.Second}, 80, 24)
	b.setBlock(true)
	// The poll timer is what notices a coordinator that went quiet.
	if n := h.fire(func(m tea.Msg) bool { _, ok := m.(pollMsg); return ok }); n != 1 {
		t.Fatalf("%d poll timers held, want 1", n)
	}
	if !h.m.coord.stale || !strings.Contains(h.m.coord.staleErr, "deadline exceeded") {
		t.Fatalf("stale %v (%q), want STALE on the deadline", h.m.coord.stale, h.m.coord.staleErr)
	}
	h.mustContain("STALE")
	b.setBlock(false)
	h.fire(func(m tea.Msg) bool { _, ok := m.(pollMsg); return ok })
	if h.m.coord.stale {
		t.Fatal("want live once the coordinator answers the next poll")
	}
}

func TestStaleBeforeFirstAnswer(t *testing.T) {
	b := seedBackend()
	b.setErr(errUnavailable)
	h := newHarness(t, b, Options{}, 80, 24)
	h.mustContain("STALE", "no answer from the coordinator")
	b.setErr(nil)
	h.refresh()
	h.mustContain("w-01", "● live")
}

func TestChangedClosedShowsStale(t *testing.T) {
	b := seedBackend()
	h := newHarness(t, b, Options{}, 80, 24)
	b.close()
	h.await("the closed backend", func(m *model) bool { return m.coord.closed })
	h.mustContain("STALE", "the backend closed")
}

func TestChangedTriggersRefresh(t *testing.T) {
	b := seedBackend()
	h := newHarness(t, b, Options{}, 80, 24)
	applied := h.m.refresh.applied
	b.mutate(func(b *memBackend) { b.workers[0].State = "draining" })
	h.await("a refresh after Changed", func(m *model) bool { return m.refresh.applied > applied })
	h.mustContain("◐ draining")
}

func TestRefreshCoalescing(t *testing.T) {
	b := seedBackend()
	h := newHarness(t, b, Options{Refresh: 100 * time.Millisecond}, 80, 24)
	h.holdCool = true
	h.fire(func(m tea.Msg) bool { _, ok := m.(coolDoneMsg); return ok })
	start := h.m.refresh.seq

	// A burst of change signals: the first starts a round; the rest only
	// mark the view dirty while it cools down.
	for i := 0; i < 50; i++ {
		h.send(changedMsg{})
	}
	if got := h.m.refresh.seq - start; got != 1 {
		t.Fatalf("%d rounds for a burst of 50 changes, want 1 until the cooldown ends", got)
	}
	if !h.m.refresh.dirty || !h.m.refresh.cooling {
		t.Fatalf("dirty %v cooling %v, want both", h.m.refresh.dirty, h.m.refresh.cooling)
	}
	// The cooldown ends: exactly one more round for the whole burst.
	h.fire(func(m tea.Msg) bool { _, ok := m.(coolDoneMsg); return ok })
	if got := h.m.refresh.seq - start; got != 2 {
		t.Fatalf("%d rounds after the cooldown, want 2", got)
	}
	// And nothing further without another change.
	h.fire(func(m tea.Msg) bool { _, ok := m.(coolDoneMsg); return ok })
	if got := h.m.refresh.seq - start; got != 2 {
		t.Fatalf("%d rounds with no change, want 2", got)
	}
	// Once cooled down, a change refreshes at once.
	h.send(changedMsg{})
	if got := h.m.refresh.seq - start; got != 3 || h.m.refresh.dirty {
		t.Fatalf("a change after the cooldown: %d rounds (dirty %v), want 3 at once", got, h.m.refresh.dirty)
	}
	// Operator moves are urgent: they do not wait for the cooldown.
	h.keys("2")
	if got := h.m.refresh.seq - start; got != 4 {
		t.Fatalf("switching view during a cooldown gave %d rounds, want 4", got)
	}
}

func TestWaitersOfSelectedKey(t *testing.T) {
	b := seedBackend()
	h := newHarness(t, b, Options{}, 80, 24)
	h.keys("3")
	h.mustContain("no key selected: pick a URL in Jobs (2)")
	h.keys("2")
	for h.m.pane().selLabel != "https://example.com/pricing" {
		h.keys("j")
	}
	h.keys("3")
	q := lastQuery(b, admin.ViewWaiters)
	if q.Key != b.keyOf(t, "https://example.com/pricing") {
		t.Fatalf("waiters query key %q, want the pricing key", q.Key)
	}
	h.mustContain("waiting on https://example.com/pricing", "s-21", "s-22", "s-30", "12s", "rows 1–3 of 3")
	// Another key: its (empty) queue.
	h.keys("2", "k", "3")
	h.mustContain("nobody waits on this key")
}

func TestDetailPane(t *testing.T) {
	b := seedBackend()
	h := newHarness(t, b, Options{}, 120, 40)
	h.keys("2", "j", "j", "j", "j", "enter")
	h.mustContain("job detail", "job 5 · https://throttled.example.com/a", "attempts:",
		"#1  11:58:00  w-01  throttled  429 Too Many Requests", "#2  11:59:20  w-04")
	// The pane follows the selection.
	h.keys("j", "j")
	h.mustContain("job 7 · https://flaky.example.com/report.pdf", "internal: timeout after 30s", "#3  11:57:00  w-05  lost")
	h.keys("esc")
	if h.m.detail != nil || strings.Contains(h.screen(), "job detail") {
		t.Fatal("esc should close the detail pane")
	}
	// A worker: its headers and the jobs it holds.
	h.keys("1", "enter")
	h.mustContain("worker w-01 · crawler-a", "headers: region=eu threads=4", "jobs held (2):",
		"https://example.com/docs/getting-started")
	h.keys("enter")
	if h.m.detail != nil {
		t.Fatal("enter should close the detail pane")
	}
	// An event: its full detail text.
	h.keys("5", "j", "j", "enter")
	h.mustContain("event 23", "job.failed", "internal: timeout after 30s")
}

func TestDetailKeepsNewestAttempts(t *testing.T) {
	b := seedBackend()
	b.mutate(func(b *memBackend) {
		j := &b.jobs[6] // flaky/report.pdf
		j.History = nil
		for i := 0; i < 20; i++ {
			j.History = append(j.History, admin.Attempt{Worker: fmt.Sprintf("w-%02d", i), At: t0, Outcome: "internal", Error: fmt.Sprintf("try %d", i+1)})
		}
	})
	h := newHarness(t, b, Options{}, 80, 24)
	h.keys("2")
	h.selectURL("https://flaky.example.com/report.pdf")
	h.keys("enter")
	h.mustContain("earlier attempts", "#20", "try 20")
	if strings.Contains(h.screen(), "try 1 ") || strings.Contains(h.screen(), "#1 ") {
		t.Error("the oldest attempt shows while newer ones are cut")
	}
	if got := strings.Count(h.screen(), "\n") + 1; got != 24 {
		t.Errorf("%d lines", got)
	}
}

func TestQuit(t *testing.T) {
	tests := []struct {
		name     string
		embedded bool
		idle     bool // no work in flight
		keys     []string
		quit     bool
		dialog   bool
	}{
		{"remote console quits at once", false, false, []string{"q"}, true, false},
		{"embedded and idle quits at once", true, true, []string{"q"}, true, false},
		{"embedded with work asks", true, false, []string{"q"}, false, true},
		{"enter on Cancel stays", true, false, []string{"q", "enter"}, false, false},
		{"esc stays", true, false, []string{"ctrl+c", "esc"}, false, false},
		{"confirm quits", true, false, []string{"q", "tab", "enter"}, true, false},
		{"ctrl+c twice quits", true, false, []string{"ctrl+c", "ctrl+c"}, true, false},
		{"ctrl+c while filtering asks", true, false, []string{"/", "x", "ctrl+c"}, false, true},
		{"ctrl+c in help quits a remote console", false, false, []string{"?", "ctrl+c"}, true, false},
		{"q in help only closes help", false, false, []string{"?", "q"}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := seedBackend()
			if tc.idle {
				b.mutate(func(b *memBackend) {
					for i := range b.jobs {
						b.jobs[i].State = "done"
					}
				})
			}
			h := newHarness(t, b, Options{Embedded: tc.embedded}, 80, 24)
			h.keys(tc.keys...)
			if h.m.quitting != tc.quit {
				t.Errorf("quitting = %v, want %v", h.m.quitting, tc.quit)
			}
			if (h.m.mode == modeDialog) != tc.dialog {
				t.Errorf("dialog open = %v, want %v", h.m.mode == modeDialog, tc.dialog)
			}
			if tc.dialog {
				h.mustContain("Quit and stop the coordinator?", "14 queued", "4 dispatched", "2 in back-off", "[ Cancel ]")
			}
			if tc.quit && h.m.ctx.Err() == nil {
				t.Error("quitting should cancel the model's context")
			}
		})
	}
}

func TestResize(t *testing.T) {
	b := seedBackend()
	h := newHarness(t, b, Options{}, 120, 40)
	h.keys("2", "G") // last of 26 rows
	for _, sz := range [][2]int{{80, 24}, {60, 15}, {200, 60}, {30, 10}, {20, 5}, {80, 24}} {
		h.send(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		p := h.m.pane()
		if vis := h.m.visRows(); vis > 0 && (p.cursor < p.top || p.cursor >= p.top+vis) {
			t.Errorf("%dx%d: cursor %d not visible (top %d, %d rows)", sz[0], sz[1], p.cursor, p.top, vis)
		}
		lines := strings.Split(h.m.render(), "\n")
		if len(lines) != sz[1] {
			t.Errorf("%dx%d: %d lines", sz[0], sz[1], len(lines))
		}
		for i, l := range lines {
			if w := ansi.StringWidth(l); w > sz[0] {
				t.Errorf("%dx%d: line %d is %d cells", sz[0], sz[1], i, w)
			}
		}
	}
	h.send(tea.WindowSizeMsg{Width: 20, Height: 5})
	h.mustContain("terminal too small")
	if h.selected() != b.keyOf(t, "https://example.com/careers") {
		t.Errorf("resizing lost the selection: %s", h.selected())
	}
}
