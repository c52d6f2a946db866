package tui

import (
	"reflect"
	"strings"
	"testing"

	"drover/admin"
	"drover/tui/dialog"
)

// jobByURL returns a copy of a job of the test backend.
func (b *memBackend) jobByURL(t testing.TB, url string) admin.JobRow {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, j := range b.jobs {
		if j.URL == url {
			return j
		}
	}
	t.Fatalf("no job %s", url)
	return admin.JobRow{}
}

func (b *memBackend) worker(id string) *admin.WorkerRow {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, w := range b.workers {
		if w.ID == id {
			c := *w
			return &c
		}
	}
	return nil
}

// selectURL moves the cursor down to the row with that label.
func (h *harness) selectURL(url string) {
	h.t.Helper()
	for i := 0; h.m.pane().selLabel != url; i++ {
		if i > 100 {
			h.t.Fatalf("no row %s", url)
		}
		h.keys("j")
	}
}

func TestActionFlows(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(h *harness)
		key     string
		items   []string // the dialog must list these
		want    admin.Action
		flash   string
		check   func(t *testing.T, b *memBackend)
		confirm []string // keys that confirm; the default is tab, enter
	}{
		{
			name:  "evict the selected worker",
			setup: func(h *harness) { h.keys("1") },
			key:   "E", items: []string{"Evict 1 worker?", "w-01 (crawler-a, busy, 2 jobs)", "not charged a failure"},
			want:  admin.Action{Kind: admin.ActEvict, Targets: []string{"w-01"}},
			flash: "evicted 1 worker",
			check: func(t *testing.T, b *memBackend) {
				if b.worker("w-01") != nil {
					t.Error("w-01 still registered")
				}
				for _, u := range []string{"https://example.com/", "https://example.com/docs/getting-started"} {
					j := b.jobByURL(t, u)
					if j.State != "queued" || j.Worker != "" || j.Failures != 0 {
						t.Errorf("%s after evict: %s on %q with %d failures, want queued, no worker, uncharged", u, j.State, j.Worker, j.Failures)
					}
				}
			},
		},
		{
			name:  "evict two marked workers",
			setup: func(h *harness) { h.keys("1", "space", "j", "j", "j", "space") },
			key:   "E", items: []string{"Evict 2 workers?", "w-01 (crawler-a", "w-04 (crawler-b"},
			want:  admin.Action{Kind: admin.ActEvict, Targets: []string{"w-01", "w-04"}},
			flash: "evicted 2 workers",
			check: func(t *testing.T, b *memBackend) {
				if b.worker("w-01") != nil || b.worker("w-04") != nil || b.worker("w-02") == nil {
					t.Error("wrong workers evicted")
				}
			},
		},
		{
			name:  "drain a worker",
			setup: func(h *harness) { h.keys("1", "j") },
			key:   "D", items: []string{"Drain 1 worker?", "w-02", "leave when their jobs finish"},
			want:  admin.Action{Kind: admin.ActDrain, Targets: []string{"w-02"}},
			flash: "draining 1 worker",
			check: func(t *testing.T, b *memBackend) {
				if w := b.worker("w-02"); w.State != "draining" {
					t.Errorf("w-02 is %s, want draining", w.State)
				}
			},
		},
		{
			name:  "undrain a draining worker",
			setup: func(h *harness) { h.keys("1", "j", "j") },
			key:   "D", items: []string{"Undrain 1 worker?", "w-03 (crawler-b, draining"},
			want:  admin.Action{Kind: admin.ActUndrain, Targets: []string{"w-03"}},
			flash: "undrained 1 worker",
			check: func(t *testing.T, b *memBackend) {
				if w := b.worker("w-03"); w.State != "busy" {
					t.Errorf("w-03 is %s, want busy (it holds a job)", w.State)
				}
			},
		},
		{
			name:  "requeue one failed job",
			setup: func(h *harness) { h.keys("2"); h.selectURL("https://flaky.example.com/report.pdf") },
			key:   "R", items: []string{"Requeue 1 job?", "https://flaky.example.com/report.pdf (failed)", "counts are kept"},
			want:  admin.Action{Kind: admin.ActRequeue, Targets: []string{"7"}},
			flash: "requeued 1 job",
			check: func(t *testing.T, b *memBackend) {
				if j := b.jobByURL(t, "https://flaky.example.com/report.pdf"); j.State != "queued" || j.Failures != 3 {
					t.Errorf("job 7 is %s with %d failures, want queued with its 3 failures kept", j.State, j.Failures)
				}
			},
		},
		{
			name: "requeue marked jobs in retries",
			setup: func(h *harness) {
				h.keys("4", "space", "j", "j", "space")
			},
			key: "R", items: []string{"Requeue 2 jobs?", "https://throttled.example.com/a (backoff)", "https://flaky.example.com/report.pdf (failed)"},
			want:  admin.Action{Kind: admin.ActRequeue, Targets: []string{"7", "5"}}, // in URL order
			flash: "requeued 2 jobs",
			check: func(t *testing.T, b *memBackend) {
				if j := b.jobByURL(t, "https://bad.example.com/%zz"); j.State != "failed" {
					t.Errorf("unmarked job 8 is %s, want still failed", j.State)
				}
			},
		},
		{
			name:  "requeue all failed in retries with nothing marked",
			setup: func(h *harness) { h.keys("4") },
			key:   "R", items: []string{"Requeue all 2 failed jobs?", "https://flaky.example.com/report.pdf", "https://bad.example.com/%zz"},
			want:  admin.Action{Kind: admin.ActRequeueFailed},
			flash: "requeued 2 jobs",
			check: func(t *testing.T, b *memBackend) {
				for _, u := range []string{"https://flaky.example.com/report.pdf", "https://bad.example.com/%zz"} {
					if j := b.jobByURL(t, u); j.State != "queued" {
						t.Errorf("%s is %s, want queued", u, j.State)
					}
				}
				if j := b.jobByURL(t, "https://throttled.example.com/a"); j.State != "backoff" {
					t.Errorf("a backoff job was requeued by requeue-failed")
				}
			},
		},
		{
			name:  "pause dispatch",
			setup: func(h *harness) { h.keys("2") },
			key:   "P", items: []string{"Pause dispatch?", "14 queued jobs wait", "4 dispatched jobs run to the end"},
			want:  admin.Action{Kind: admin.ActPause},
			flash: "paused dispatch",
			check: func(t *testing.T, b *memBackend) {
				if !b.paused {
					t.Error("backend not paused")
				}
			},
		},
		{
			name: "resume dispatch",
			setup: func(h *harness) {
				h.b.mutate(func(b *memBackend) { b.paused = true })
				h.refresh()
				h.mustContain("PAUSED")
			},
			key: "P", items: []string{"Resume dispatch?"},
			want:  admin.Action{Kind: admin.ActResume},
			flash: "resumed dispatch",
			check: func(t *testing.T, b *memBackend) {
				if b.paused {
					t.Error("backend still paused")
				}
			},
		},
		{
			name:  "confirm with the arrow key and space",
			setup: func(h *harness) { h.keys("1", "j") },
			key:   "D", items: []string{"Drain 1 worker?"},
			want:    admin.Action{Kind: admin.ActDrain, Targets: []string{"w-02"}},
			flash:   "draining 1 worker",
			confirm: []string{"right", "space"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Cancel first: the dialog must do nothing.
			b := seedBackend()
			h := newHarness(t, b, Options{}, 120, 40)
			tc.setup(h)
			h.keys(tc.key)
			if h.m.mode != modeDialog {
				t.Fatalf("%s did not open a dialog; flash %q", tc.key, h.flash())
			}
			if h.m.dialog.Focused() != dialog.Cancel {
				t.Fatal("the dialog must open with Cancel focused")
			}
			h.mustContain(tc.items...)
			h.mustContain("[ Cancel ]")
			h.keys("enter")
			if h.m.mode != modeNormal {
				t.Fatal("enter on Cancel should close the dialog")
			}
			if acts := b.actions(); len(acts) != 0 {
				t.Fatalf("enter on Cancel sent %v", acts)
			}
			if !strings.Contains(h.flash(), "cancelled: nothing was done") {
				t.Errorf("flash after cancel %q", h.flash())
			}

			// Then confirm: exactly the expected action reaches the backend.
			h.keys(tc.key)
			confirm := tc.confirm
			if confirm == nil {
				confirm = []string{"tab", "enter"}
			}
			h.keys(confirm...)
			acts := b.actions()
			if len(acts) != 1 || !reflect.DeepEqual(acts[0], tc.want) {
				t.Fatalf("backend got %+v, want [%+v]", acts, tc.want)
			}
			if !strings.Contains(h.flash(), tc.flash) {
				t.Errorf("flash %q, want %q", h.flash(), tc.flash)
			}
			if len(h.m.pane().marks) != 0 {
				t.Errorf("marks left after the action: %v", h.m.pane().marks)
			}
			if tc.check != nil {
				tc.check(t, b)
			}
		})
	}
}

func TestEvictRefreshesTheScreen(t *testing.T) {
	b := seedBackend()
	h := newHarness(t, b, Options{}, 120, 40)
	h.keys("1", "E", "tab", "enter")
	// The action's answer triggers a refresh: w-01 is gone from the table,
	// its jobs are queued in Jobs, and the selection moved on with a flash.
	if strings.Contains(h.screen(), "w-01 ") {
		t.Errorf("w-01 still listed:\n%s", h.screen())
	}
	h.keys("2")
	h.mustContain("https://example.com/ ")
	if j := b.jobByURL(t, "https://example.com/"); j.State != "queued" {
		t.Fatalf("job 1 is %s", j.State)
	}
	h.keys("enter")
	h.mustContain("w-01  evicted")
}

func TestActionErrorsAreReported(t *testing.T) {
	b := seedBackend()
	h := newHarness(t, b, Options{}, 120, 40)
	// Requeue a dispatched job: the backend refuses it, naming why.
	h.keys("2", "R", "tab", "enter")
	if !strings.Contains(h.flash(), "refused: job 1 is dispatched, want failed or backoff") {
		t.Errorf("flash %q", h.flash())
	}
	// The backend down: the action fails and says so.
	b.setErr(errUnavailable)
	h.keys("P", "tab", "enter")
	if !strings.Contains(h.flash(), "pause failed: coordinator unavailable") {
		t.Errorf("flash %q", h.flash())
	}
}

func TestReadOnlyRefusesActions(t *testing.T) {
	tests := []struct {
		view, key, what string
	}{
		{"1", "E", "evict (E)"},
		{"1", "D", "drain (D)"},
		{"2", "R", "requeue (R)"},
		{"4", "R", "requeue (R)"},
		{"5", "P", "pause (P)"},
	}
	for _, tc := range tests {
		t.Run(tc.view+tc.key, func(t *testing.T) {
			b := seedBackend()
			h := newHarness(t, b, Options{ReadOnly: true}, 80, 24)
			h.keys(tc.view, tc.key)
			if h.m.mode == modeDialog {
				t.Fatal("read-only console opened an action dialog")
			}
			want := "read-only console: " + tc.what + " is disabled"
			if h.flash() != want {
				t.Errorf("flash %q, want %q", h.flash(), want)
			}
			if acts := b.actions(); len(acts) != 0 {
				t.Errorf("read-only console sent %v", acts)
			}
			h.mustContain("RO read-only")
		})
	}
}

func TestActionsInTheWrongView(t *testing.T) {
	tests := []struct {
		view, key, flash string
	}{
		{"2", "E", "evict (E) works on workers: press 1"},
		{"5", "D", "drain (D) works on workers: press 1"},
		{"1", "R", "requeue (R) works on jobs: press 2 for Jobs or 4 for Retries"},
	}
	for _, tc := range tests {
		b := seedBackend()
		h := newHarness(t, b, Options{}, 80, 24)
		h.keys(tc.view, tc.key)
		if h.m.mode == modeDialog || !strings.Contains(h.flash(), tc.flash) {
			t.Errorf("%s in view %s: dialog %v, flash %q; want no dialog and %q", tc.key, tc.view, h.m.mode == modeDialog, h.flash(), tc.flash)
		}
	}
}

func TestRequeueSkipsKeysWithoutJob(t *testing.T) {
	b := seedBackend()
	h := newHarness(t, b, Options{}, 120, 40)
	h.keys("2")
	h.selectURL("https://example.com/pricing")
	h.keys("R")
	if h.m.mode == modeDialog || !strings.Contains(h.flash(), "a requested key has no job yet") {
		t.Fatalf("requeue of a requested key: dialog %v flash %q", h.m.mode == modeDialog, h.flash())
	}
	// Marked along with a real job: the key is skipped and the dialog
	// says so; only the job is requeued.
	h.keys("space", "g")
	h.selectURL("https://flaky.example.com/report.pdf")
	h.keys("space", "R")
	h.mustContain("Requeue 1 job?", "1 requested key without a job skipped")
	h.keys("tab", "enter")
	acts := b.actions()
	if len(acts) != 1 || !reflect.DeepEqual(acts[0].Targets, []string{"7"}) {
		t.Errorf("backend got %+v, want a requeue of job 7 only", acts)
	}
}

func TestMarkAllAsksTheBackend(t *testing.T) {
	b := seedBackend()
	h := newHarness(t, b, Options{}, 120, 40)
	h.keys("2", "/")
	h.typeText("state=queued")
	h.keys("enter", "*")
	p := h.m.pane()
	if len(p.marks) != 14 {
		t.Fatalf("%d marks, want the 14 queued jobs", len(p.marks))
	}
	qs := b.queryLog()
	last := qs[len(qs)-1]
	if last.Filter != "state=queued" || last.Limit != markAllCap || last.Offset != 0 {
		t.Errorf("mark-all query %+v, want the filter with a large limit", last)
	}
	if !strings.Contains(h.flash(), "marked 14 rows matching state=queued") {
		t.Errorf("flash %q", h.flash())
	}
	h.mustContain("14 marks", " *https://example.com/blog/post-12")
	// The dialog lists what is marked; the backend refuses queued jobs.
	h.keys("R")
	h.mustContain("Requeue 14 jobs?", "https://example.com/blog/post-12 (queued)")
	h.keys("esc")
	// esc clears the filter first, then the marks.
	h.keys("esc")
	if len(h.m.pane().marks) != 14 {
		t.Error("first esc should clear the filter, not the marks")
	}
	h.keys("esc")
	if len(h.m.pane().marks) != 0 {
		t.Error("second esc should clear the marks")
	}
	// Space toggles one mark.
	h.keys("space")
	if len(h.m.pane().marks) != 1 {
		t.Error("space should mark the row")
	}
	h.keys("space")
	if len(h.m.pane().marks) != 0 {
		t.Error("space again should unmark it")
	}
	// Nothing to mark in Events.
	h.keys("5", "space")
	if !strings.Contains(h.flash(), "nothing to mark in Events") {
		t.Errorf("flash %q", h.flash())
	}
}

func TestDialogListsAreBounded(t *testing.T) {
	b := seedBackend()
	h := newHarness(t, b, Options{}, 80, 20)
	h.keys("1", "*", "E")
	s := h.screen()
	if !strings.Contains(s, "Evict 6 workers?") || !strings.Contains(s, "… and 2 more") {
		t.Errorf("dialog at 80x20 should list what fits and say how many more:\n%s", s)
	}
	if got := strings.Count(s, "\n") + 1; got != 20 {
		t.Errorf("screen is %d lines with the dialog open", got)
	}
	if acts := b.actions(); len(acts) != 0 {
		t.Errorf("opening a dialog acted: %v", acts)
	}
}
