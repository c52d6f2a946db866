package dialog

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"drover/themes"
	"drover/tui/common"
)

func press(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

func newDialog(items ...string) Model {
	c := common.Common{Width: 80, Height: 24, Styles: common.NewStyles(themes.Default())}
	return New(c, "evict", "Evict 2 workers?", items, "Their jobs go back to the queue.", "Evict")
}

func TestKeySequences(t *testing.T) {
	tests := []struct {
		name   string
		keys   []string
		closed bool
		ok     bool // confirmed
	}{
		{"enter on Cancel does nothing", []string{"enter"}, true, false},
		{"space on Cancel does nothing", []string{"space"}, true, false},
		{"tab then enter confirms", []string{"tab", "enter"}, true, true},
		{"right then enter confirms", []string{"right", "enter"}, true, true},
		{"tab twice is back on Cancel", []string{"tab", "tab", "enter"}, true, false},
		{"shift+tab wraps to confirm", []string{"shift+tab", "enter"}, true, true},
		{"left from confirm back to cancel", []string{"right", "left", "enter"}, true, false},
		{"esc cancels even on confirm", []string{"tab", "esc"}, true, false},
		{"y is not a shortcut", []string{"y"}, false, false},
		{"moving focus alone does not close", []string{"tab"}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newDialog("w1", "w2")
			if m.Focused() != Cancel {
				t.Fatal("dialog must open with Cancel focused")
			}
			var got *ClosedMsg
			for _, k := range tc.keys {
				var cmd tea.Cmd
				m, cmd = m.Update(press(k))
				if cmd != nil {
					msg, ok := cmd().(ClosedMsg)
					if !ok {
						t.Fatalf("cmd gave %T, want ClosedMsg", cmd())
					}
					got = &msg
					break
				}
			}
			if (got != nil) != tc.closed {
				t.Fatalf("closed = %v, want %v", got != nil, tc.closed)
			}
			if got != nil {
				if got.Confirmed != tc.ok || got.ID != "evict" {
					t.Errorf("closed with %+v, want confirmed=%v id=evict", *got, tc.ok)
				}
			}
		})
	}
}

func TestViewListsItemsAndFocus(t *testing.T) {
	m := newDialog("w1 (host-a, 2 jobs)", "w2 (host-b, 0 jobs)")
	out := ansi.Strip(m.View())
	for _, want := range []string{"Evict 2 workers?", "w1 (host-a, 2 jobs)", "w2 (host-b, 0 jobs)", "Their jobs go back", "[ Cancel ]", "Evict"} {
		if !strings.Contains(out, want) {
			t.Errorf("dialog lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "[ Evict ]") {
		t.Error("confirm button shown focused on open")
	}
	m, _ = m.Update(press("tab"))
	if out := ansi.Strip(m.View()); !strings.Contains(out, "[ Evict ]") || strings.Contains(out, "[ Cancel ]") {
		t.Errorf("after tab, focus brackets should be on Evict:\n%s", out)
	}
}

func TestViewTruncatesLongLists(t *testing.T) {
	items := make([]string, 100)
	for i := range items {
		items[i] = "job " + strings.Repeat("x", i%7)
	}
	m := newDialog(items...)
	m.Height = 14
	out := m.View()
	lines := strings.Split(out, "\n")
	if len(lines) > 14 {
		t.Errorf("dialog is %d lines, want at most 14", len(lines))
	}
	if !strings.Contains(ansi.Strip(out), "more") {
		t.Error("truncated list should say how many more")
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w > 80 {
			t.Errorf("line %d is %d cells", i, w)
		}
	}
}
