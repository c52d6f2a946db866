package tui

import (
	"image/color"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"drover/admin"
	"drover/themes"
)

func TestThemeSelection(t *testing.T) {
	ocean, err := themes.Custom("ocean", "dark", map[string]string{"accent": "#00aaff"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		opts  Options
		bg    color.Color // a BackgroundColorMsg to send, or nil
		want  string
		flash string
	}{
		{"default before the terminal answers", Options{}, nil, "dark", ""},
		{"light terminal detected", Options{}, color.RGBA{0xfa, 0xfa, 0xfa, 0xff}, "light", ""},
		{"dark terminal detected", Options{}, color.RGBA{0x10, 0x10, 0x10, 0xff}, "dark", ""},
		{"named theme wins over detection", Options{Theme: "high-contrast"}, color.RGBA{0xff, 0xff, 0xff, 0xff}, "high-contrast", ""},
		{"no colour wins over everything", Options{Theme: "light", NoColor: true}, color.RGBA{0xff, 0xff, 0xff, 0xff}, "mono", ""},
		{"custom theme by name", Options{Theme: "ocean", Themes: []themes.Theme{ocean}}, nil, "ocean", ""},
		{"unknown name falls back with a flash", Options{Theme: "neon"}, nil, "dark", `theme "neon": unknown`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel(t.Context(), seedBackend(), tc.opts)
			if tc.bg != nil {
				m.Update(tea.BackgroundColorMsg{Color: tc.bg})
			}
			if got := m.Styles.Theme.Name; got != tc.want {
				t.Errorf("theme %s, want %s", got, tc.want)
			}
			if tc.flash != "" && !strings.Contains(m.flash.text, tc.flash) {
				t.Errorf("flash %q, want %q", m.flash.text, tc.flash)
			}
		})
	}
}

func TestInitAsksForBackgroundOnlyWhenNeeded(t *testing.T) {
	// With no theme chosen the console asks the terminal for its
	// background; Init returns a batch that includes that request.
	count := func(opts Options) int {
		m := newModel(t.Context(), seedBackend(), opts)
		m.blocking = func(tea.Cmd) tea.Cmd { return func() tea.Msg { return nil } }
		m.after = func(time.Duration, tea.Msg) tea.Cmd { return func() tea.Msg { return nil } }
		n := 0
		var walk func(c tea.Cmd)
		walk = func(c tea.Cmd) {
			if c == nil {
				return
			}
			msg := c()
			if b, ok := msg.(tea.BatchMsg); ok {
				for _, x := range b {
					walk(x)
				}
				return
			}
			if msg == tea.RequestBackgroundColor() {
				n++
			}
		}
		walk(m.Init())
		return n
	}
	if got := count(Options{}); got != 1 {
		t.Errorf("no theme: %d background requests, want 1", got)
	}
	if got := count(Options{Theme: "dark"}); got != 0 {
		t.Errorf("named theme: %d background requests, want 0", got)
	}
	if got := count(Options{NoColor: true}); got != 0 {
		t.Errorf("no colour: %d background requests, want 0", got)
	}
}

func TestThemeKeyCycles(t *testing.T) {
	h := newHarness(t, seedBackend(), Options{}, 80, 24)
	var seen []string
	for range themes.Names() {
		h.keys("t")
		seen = append(seen, h.m.Styles.Theme.Name)
	}
	if strings.Join(seen, ",") != "light,high-contrast,mono,dark" {
		t.Errorf("t cycles %v", seen)
	}
	if !strings.Contains(h.flash(), "theme: dark") {
		t.Errorf("flash %q", h.flash())
	}
	// A detected background no longer overrides the operator's choice.
	h.send(tea.BackgroundColorMsg{Color: color.White})
	if h.m.Styles.Theme.Name != "dark" {
		t.Error("background detection overrode the theme chosen with t")
	}
	mono := newHarness(t, seedBackend(), Options{NoColor: true}, 80, 24)
	mono.keys("t")
	if mono.m.Styles.Theme.Name != "mono" || !strings.Contains(mono.flash(), "colour is off") {
		t.Errorf("NoColor: t gave %s, flash %q", mono.m.Styles.Theme.Name, mono.flash())
	}
}

func TestMonoScreenHasNoColour(t *testing.T) {
	h := newHarness(t, seedBackend(), Options{NoColor: true}, 120, 40)
	out := h.m.render()
	reverse := false
	for _, params := range sgrParams(out) {
		for _, p := range params {
			n, _ := strconv.Atoi(p)
			if (n >= 30 && n <= 49) || (n >= 90 && n <= 107) {
				t.Fatalf("mono screen carries colour SGR %v", params)
			}
			reverse = reverse || n == 7
		}
	}
	// Selection still shows: the cursor glyph and reverse video.
	if !strings.Contains(ansi.Strip(out), "> w-01") {
		t.Error("no cursor glyph on the selected row")
	}
	if !reverse {
		t.Error("selected row not in reverse video")
	}
}

var sgrRE = regexp.MustCompile(`\x1b\[([0-9;:]*)m`)

// sgrParams lists the parameters of every SGR sequence in s.
func sgrParams(s string) [][]string {
	var out [][]string
	for _, m := range sgrRE.FindAllStringSubmatch(s, -1) {
		out = append(out, strings.FieldsFunc(m[1], func(r rune) bool { return r == ';' || r == ':' }))
	}
	return out
}

func TestStateShownWithoutColour(t *testing.T) {
	h := newHarness(t, seedBackend(), Options{NoColor: true}, 120, 40)
	h.keys("2")
	h.mustContain("▶ dispatched", "↻ backoff", "✗ failed", "✓ done", "○ queued", "◌ requested")
	h.keys("1")
	h.mustContain("● busy", "○ idle", "◐ draining", "✗ lost")
	// The active view is bracketed, not only coloured.
	h.mustContain("[1 Workers]")
}

func TestDispatchRateSparkline(t *testing.T) {
	b := seedBackend()
	now := t0
	b.now = func() time.Time { return now }
	h := newHarness(t, b, Options{}, 120, 40)
	h.mustContain("dispatch -")
	// Totals every second with 10, 20, 40, 80 more dispatches.
	for _, d := range []uint64{10, 20, 40, 80} {
		now = now.Add(time.Second)
		b.mutate(func(b *memBackend) { b.dispatches += d })
		h.refresh()
	}
	if got := h.m.coord.rates; len(got) != 4 || got[0] != 10 || got[3] != 80 {
		t.Fatalf("rates %v, want [10 20 40 80]", got)
	}
	h.mustContain("dispatch 80/s ▁▂▄█")
	// Refreshes within the same second do not add samples.
	h.refresh()
	if len(h.m.coord.rates) != 4 {
		t.Errorf("a refresh within a second added a sample: %v", h.m.coord.rates)
	}
	// A restarted coordinator (counter went back) restarts the series.
	now = now.Add(time.Second)
	b.mutate(func(b *memBackend) { b.dispatches = 5 })
	h.refresh()
	if len(h.m.coord.rates) != 4 || h.m.coord.sample.Dispatches != 5 {
		t.Errorf("after a counter reset: rates %v sample %d", h.m.coord.rates, h.m.coord.sample.Dispatches)
	}
}

func TestCoordinatorTextCannotEscape(t *testing.T) {
	b := seedBackend()
	b.endpoint = "tcp://evil\x1b]0;pwned\x07:5571"
	b.mutate(func(b *memBackend) {
		b.jobs[0].URL = "https://evil.example/\x1b[2J\x1b[31mred"
		b.jobs[0].LastError = "line one\nline two\x1b[H"
	})
	h := newHarness(t, b, Options{NoColor: true}, 200, 40)
	h.keys("2", "enter")
	out := h.m.render()
	for _, bad := range []string{"\x1b[2J", "\x1b[31m", "\x1b]0;", "\x07", "\x1b[H"} {
		if strings.Contains(out, bad) {
			t.Errorf("coordinator text put %q on the terminal", bad)
		}
	}
	for i, l := range strings.Split(out, "\n") {
		if w := ansi.StringWidth(l); w > 200 {
			t.Errorf("line %d is %d cells wide", i, w)
		}
	}
	h.mustContain("line one line two")
}

func TestHelpListsEveryKey(t *testing.T) {
	for _, ro := range []bool{false, true} {
		h := newHarness(t, seedBackend(), Options{ReadOnly: ro}, 120, 40)
		h.keys("?")
		if h.m.mode != modeHelp {
			t.Fatal("? should open help")
		}
		s := h.screen()
		for _, g := range h.m.fullHelp() {
			for _, b := range g.keys {
				line := b.Help().Key
				if !strings.Contains(s, line) || !strings.Contains(s, b.Help().Desc) {
					t.Errorf("help (read-only %v) lacks %s %q", ro, line, b.Help().Desc)
				}
			}
		}
		if got := strings.Contains(s, "ACT (disabled: read-only)"); got != ro {
			t.Errorf("read-only %v: disabled marking shown = %v", ro, got)
		}
		h.keys("esc")
		if h.m.mode != modeNormal {
			t.Error("esc should close help")
		}
	}
}

func TestHelpScrollsWhenShort(t *testing.T) {
	h := newHarness(t, seedBackend(), Options{}, 40, 12)
	h.keys("?")
	h.mustContain("j/k scrolls")
	first := h.screen()
	h.keys("j", "j")
	if h.screen() == first {
		t.Error("j did not scroll the help")
	}
	for range 100 {
		h.keys("j")
	}
	if strings.Contains(h.screen(), "j/k scrolls") {
		t.Error("at the end of the help the scroll hint should go")
	}
}

func TestHintLineAlwaysVisible(t *testing.T) {
	for _, v := range []string{"1", "2", "3", "4", "5"} {
		for _, w := range []int{40, 80, 120} {
			h := newHarness(t, seedBackend(), Options{}, w, 20)
			h.keys(v)
			lines := strings.Split(h.screen(), "\n")
			last := lines[len(lines)-1]
			if !strings.Contains(last, "? help") || !strings.Contains(last, "q quit") {
				t.Errorf("view %s at width %d: hint line %q lacks help and quit", v, w, last)
			}
		}
	}
}

func TestHeaderShowsStateAtAGlance(t *testing.T) {
	b := seedBackend()
	b.endpoint = "tcp://10.0.0.5:5571"
	b.mutate(func(b *memBackend) { b.paused = true })
	h := newHarness(t, b, Options{ReadOnly: true, Version: "v9"}, 120, 40)
	h.mustContain("drover v9", "tcp://10.0.0.5:5571", "● live", "RO read-only", "‖ PAUSED",
		"queued 14", "dispatched 4", "backoff 2", "done 2", "failed 2", "unroutable 1",
		"idle 2", "busy 2", "draining 1", "lost 1", "waiters 3")
}

func TestEventsFollowNewest(t *testing.T) {
	b := seedBackend()
	h := newHarness(t, b, Options{}, 80, 24)
	h.keys("5")
	if h.selected() != "25" {
		t.Fatalf("selected event %s, want the newest (25)", h.selected())
	}
	b.mutate(func(b *memBackend) { b.addEvent(admin.Event{At: t0, Kind: "job.done", JobID: 3}) })
	h.refresh()
	if h.selected() != "26" {
		t.Errorf("on the newest row the selection follows new events: got %s, want 26", h.selected())
	}
	// Moved off the top, the selection stays on its event.
	h.keys("j")
	b.mutate(func(b *memBackend) { b.addEvent(admin.Event{At: t0, Kind: "job.done", JobID: 4}) })
	h.refresh()
	if h.selected() != "25" {
		t.Errorf("selection %s, want event 25 kept", h.selected())
	}
}

// Once nothing is queued, running, backing off or requested and something
// was done, the header says the work is finished (in the caller's words
// when given); while work remains it does not.
func TestHeaderSaysWhenAllDone(t *testing.T) {
	for _, tc := range []struct {
		name, doneText, want string
	}{
		{"default", "", "✓ all done"},
		{"crawl", "crawl finished · q for the summary", "✓ crawl finished · q for the summary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newMemBackend(fixedClock)
			b.addJob(admin.JobRow{JobID: 1, Key: "k1", URL: "https://a.example.com/", State: "done"})
			b.addJob(admin.JobRow{JobID: 2, Key: "k2", URL: "https://a.example.com/b", State: "queued"})
			h := newHarness(t, b, Options{DoneText: tc.doneText}, 120, 30)
			if strings.Contains(h.screen(), "✓") {
				t.Fatalf("finished shown with a job queued:\n%s", h.screen())
			}
			b.mutate(func(b *memBackend) { b.jobs[1].State = "done" })
			h.refresh()
			h.mustContain(tc.want)
		})
	}
}

// Refused clients (commands forbidden for their key's role, handshakes
// refused) show in the header once there are some.
func TestHeaderShowsRefusedClients(t *testing.T) {
	b := seedBackend()
	h := newHarness(t, b, Options{}, 160, 40)
	if strings.Contains(h.screen(), "refused") {
		t.Fatalf("refused shown with none:\n%s", h.screen())
	}
	b.mu.Lock()
	tot := admin.Totals{WorkersIdle: 1, Forbidden: 3, HandshakesRefused: 2}
	b.totals = &tot
	b.mu.Unlock()
	h.refresh()
	h.mustContain("refused 5")
}
