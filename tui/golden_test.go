package tui

import (
	"bytes"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest/v2"
)

// observed wraps the console for teatest: after every Update it publishes
// the plain screen and whether the console is idle, so the test can wait
// for a state without reading the model from another goroutine.
type observed struct {
	m    *model
	snap *atomic.Pointer[snapshot]
}

type snapshot struct {
	screen string
	idle   bool
	rounds uint64 // backend rounds started
}

func (o observed) Init() tea.Cmd { return o.m.Init() }

func (o observed) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := o.m.Update(msg)
	o.snap.Store(&snapshot{screen: ansi.Strip(o.m.render()), idle: !o.m.refresh.inFlight && !o.m.refresh.urgent, rounds: o.m.refresh.seq})
	return o, cmd
}

func (o observed) View() tea.View { return o.m.View() }

// waitScreen polls the published screen until it holds want and the
// console is idle, failing after a deadline.
func waitScreen(t *testing.T, snap *atomic.Pointer[snapshot], want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		if s := snap.Load(); s != nil && s.idle && strings.Contains(s.screen, want) {
			return
		}
		if time.Now().After(deadline) {
			last := "(nothing yet)"
			if s := snap.Load(); s != nil {
				last = s.screen
			}
			t.Fatalf("timed out waiting for %q on screen:\n%s", want, last)
		}
		<-tick.C
	}
}

// step is a key (or "type:" and text to type) and the text that shows
// once it took effect.
type step struct {
	key  string
	want string
}

// goldenViews are the screens with golden files, each reached by keys.
var goldenViews = []struct {
	name  string
	opts  Options
	steps []step
}{
	{name: "workers", steps: nil},
	{name: "jobs", steps: []step{{"2", "[2 Jobs]"}}},
	{name: "waiters", steps: []step{
		{"2", "[2 Jobs]"}, {"G", "rows"}, {"k", "rows"}, {"3", "s-30"},
	}},
	{name: "retries", steps: []step{{"4", "HOST BACK-OFFS"}}},
	{name: "events", steps: []step{{"5", "[5 Events]"}}},
	{name: "help_readonly", opts: Options{ReadOnly: true}, steps: []step{{"?", "ACT (disabled: read-only)"}}},
	{name: "evict_dialog", steps: []step{{"space", "1 mark"}, {"j", "rows"}, {"space", "2 marks"}, {"E", "Evict 2 workers?"}}},
	{name: "job_detail", steps: []step{
		{"2", "[2 Jobs]"}, {"j", "rows"}, {"j", "rows"}, {"j", "rows"}, {"j", "rows"}, {"enter", "attempts:"},
	}},
	{name: "filtered_sorted", steps: []step{
		{"2", "[2 Jobs]"}, {"/", "enter applies"}, {"type:host=example.com", "/host=example.com"},
		{"enter", "filter host=example.com"}, {"s", "sort url"}, {"S", "sort url ↓"},
	}},
}

// TestGolden renders each view through a real Bubble Tea program (teatest)
// at 80x24 and 120x40, with the ASCII colour profile and a fixed clock, and
// compares the final screen with testdata/TestGolden/*.golden. Run with
// -update to rewrite the files after a deliberate change.
func TestGolden(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		for _, gv := range goldenViews {
			t.Run(fmt.Sprintf("%s_%dx%d", gv.name, size[0], size[1]), func(t *testing.T) {
				b := seedBackend()
				t.Cleanup(b.close)
				opts := gv.opts
				opts.Clock, opts.Theme, opts.Version, opts.Poll = fixedClock, "dark", "v1.0.0", time.Hour
				snap := &atomic.Pointer[snapshot]{}
				tm := teatest.NewTestModel(t, observed{m: newModel(t.Context(), b, opts), snap: snap},
					teatest.WithInitialTermSize(size[0], size[1]),
					teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.ASCII)))
				waitScreen(t, snap, "w-06")
				for _, st := range gv.steps {
					if text, ok := strings.CutPrefix(st.key, "type:"); ok {
						tm.Type(text)
					} else {
						tm.Send(keyPress(st.key))
					}
					waitScreen(t, snap, st.want)
				}
				if err := tm.Quit(); err != nil {
					t.Fatal(err)
				}
				final := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(observed)
				golden.RequireEqual(t, asciiScreen(t, final.m.View().Content))
			})
		}
	}
}

// asciiScreen is the screen as a terminal with the ASCII profile receives
// it: no colours, text attributes (bold, reverse, underline) kept.
func asciiScreen(t *testing.T, content string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := &colorprofile.Writer{Forward: &buf, Profile: colorprofile.ASCII}
	if _, err := w.WriteString(content); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestGoldenTeatestOutput checks the bytes the real renderer wrote: the
// first frame holds the header and the Workers view, and no colour
// sequence reaches an ASCII terminal.
func TestGoldenTeatestOutput(t *testing.T) {
	b := seedBackend()
	t.Cleanup(b.close)
	snap := &atomic.Pointer[snapshot]{}
	opts := Options{Clock: fixedClock, Theme: "dark", Poll: time.Hour}
	tm := teatest.NewTestModel(t, observed{m: newModel(t.Context(), b, opts), snap: snap},
		teatest.WithInitialTermSize(120, 40),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.ASCII)))
	waitScreen(t, snap, "w-06")
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	out := readAll(t, tm.FinalOutput(t, teatest.WithFinalTimeout(10*time.Second)))
	for _, want := range []string{"drover", "embedded", "live", "Workers", "crawler-a"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("renderer output lacks %q", want)
		}
	}
	for _, sgr := range []string{"38;2;", "48;2;", "38;5;", "48;5;"} {
		if bytes.Contains(out, []byte(sgr)) {
			t.Errorf("colour sequence %q written to an ASCII terminal", sgr)
		}
	}
}

func readAll(t *testing.T, r interface{ Read([]byte) (int, error) }) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(r); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
