package common

import (
	"strings"
	"testing"
	"time"

	"drover/admin"
	"drover/themes"
)

func TestMonoSelectionUsesReverse(t *testing.T) {
	mono, _ := themes.ByName("mono")
	got := NewStyles(mono).Selected.Render("x")
	// SGR 7 is reverse video: the selected row stays visible with no colour.
	if !hasSGR(got, "7") {
		t.Errorf("mono selected row %q: want reverse video", got)
	}
	if strings.Contains(got, "38;") || strings.Contains(got, "48;") {
		t.Errorf("mono selected row %q carries a colour", got)
	}
}

func TestColourSelectionHasBackground(t *testing.T) {
	got := NewStyles(themes.Default()).Selected.Render("x")
	if !strings.Contains(got, "48;") {
		t.Errorf("dark selected row %q: want a background colour", got)
	}
}

func TestStateClasses(t *testing.T) {
	s := NewStyles(themes.Default())
	tests := []struct {
		state string
		want  string // which class style
	}{
		{"done", "ok"}, {"idle", "ok"}, {"failed", "error"}, {"lost", "error"},
		{"backoff", "warn"}, {"draining", "warn"}, {"dispatched", "info"}, {"queued", "text"},
	}
	classes := map[string]string{
		"ok": s.OK.Render("x"), "warn": s.Warn.Render("x"), "error": s.Error.Render("x"),
		"info": s.Info.Render("x"), "text": s.Text.Render("x"),
	}
	seen := map[string]string{}
	for class, r := range classes {
		if other, dup := seen[r]; dup {
			t.Fatalf("the default theme renders %s and %s alike (%q): this test cannot tell them apart", class, other, r)
		}
		seen[r] = class
	}
	for _, tc := range tests {
		if got := s.State(tc.state).Render("x"); got != classes[tc.want] {
			t.Errorf("State(%s) renders %q, want the %s style %q", tc.state, got, tc.want, classes[tc.want])
		}
	}
}

// Every wait word has a colour of its own class (none falls to plain
// text), and a word the console does not know is plain text.
func TestWaitClasses(t *testing.T) {
	s := NewStyles(themes.Default())
	want := map[admin.Wait]string{
		admin.WaitUnroutable: s.Warn.Render("x"), admin.WaitPaused: s.Warn.Render("x"), admin.WaitRetry: s.Warn.Render("x"),
		admin.WaitHostBackoff: s.Warn.Render("x"), admin.WaitPolite: s.Info.Render("x"), admin.WaitReclaim: s.Info.Render("x"),
		admin.WaitPaged: s.Muted.Render("x"), "newer-word": s.Text.Render("x"),
	}
	for _, w := range admin.Waits() {
		if _, ok := want[w]; !ok {
			t.Errorf("wait %q has no class in this test: give it one in Styles.Wait", w)
		}
	}
	for w, style := range want {
		if got := s.Wait(w).Render("x"); got != style {
			t.Errorf("Wait(%s) renders %q, want %q", w, got, style)
		}
	}
	if s.Warn.Render("x") == s.Text.Render("x") || s.Info.Render("x") == s.Text.Render("x") || s.Muted.Render("x") == s.Text.Render("x") {
		t.Fatal("the default theme's warn, info and muted render as plain text: this test cannot tell them apart")
	}
}

func TestCommonNow(t *testing.T) {
	fixed := time.Date(2025, 5, 6, 7, 8, 9, 0, time.UTC)
	c := Common{Clock: func() time.Time { return fixed }}
	if !c.Now().Equal(fixed) {
		t.Errorf("Now = %v, want the injected clock", c.Now())
	}
	if (Common{}).Now().IsZero() {
		t.Error("no clock: want the wall clock")
	}
	if got := c.SetSize(-1, 5); got.Width != 0 || got.Height != 5 {
		t.Errorf("SetSize(-1,5) = %dx%d", got.Width, got.Height)
	}
}

// hasSGR reports whether s opens with an SGR sequence holding param.
func hasSGR(s, param string) bool {
	if !strings.HasPrefix(s, "\x1b[") {
		return false
	}
	end := strings.IndexByte(s, 'm')
	if end < 0 {
		return false
	}
	for _, p := range strings.Split(s[2:end], ";") {
		if p == param {
			return true
		}
	}
	return false
}
