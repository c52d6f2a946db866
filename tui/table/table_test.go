package table

import (
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"drover/admin"
	"drover/themes"
	"drover/tui/common"
)

var testCols = []Column{
	{Title: "ID", Sort: "id", Min: 6, Flex: 1, Max: 10},
	{Title: "STATE", Sort: "state", Min: 8},
	{Title: "URL", Sort: "url", Min: 10, Flex: 3, Priority: 1},
	{Title: "AGE", Min: 5, Align: Right, Priority: 2},
}

func TestLayout(t *testing.T) {
	tests := []struct {
		width int
		want  []int
	}{
		// 2 gutter + 6+8+10+5 + 3 separators = 34: every column at its minimum.
		{34, []int{6, 8, 10, 5}},
		// 14 spare cells: ID takes 1/4, URL 3/4; the rounding cell goes to
		// the first flexible column.
		{48, []int{10, 8, 20, 5}},
		// ID stops at its Max of 10; URL takes everything else.
		{100, []int{10, 8, 72, 5}},
		// Too narrow for AGE (priority 2): dropped first, its cells shared.
		{33, []int{8, 8, 13, 0}},
		// Too narrow for URL too.
		{20, []int{9, 8, 0, 0}},
		// Too narrow for even the priority-0 minimums: they keep them and
		// rendering truncates.
		{10, []int{6, 8, 0, 0}},
		{2, []int{0, 0, 0, 0}},
	}
	for _, tc := range tests {
		got := Layout(testCols, tc.width)
		if !slices.Equal(got, tc.want) {
			t.Errorf("Layout(%d) = %v, want %v", tc.width, got, tc.want)
		}
	}
}

func TestLayoutFillsWidthWithFlex(t *testing.T) {
	for w := 34; w < 200; w++ {
		got := Layout(testCols, w)
		sum, n := Gutter, 0
		for _, x := range got {
			if x > 0 {
				sum += x
				n++
			}
		}
		sum += n - 1
		if sum != w {
			t.Fatalf("Layout(%d) = %v uses %d cells, want all %d", w, got, sum, w)
		}
	}
}

func TestFit(t *testing.T) {
	tests := []struct {
		s     string
		w     int
		align Align
		want  string
	}{
		{"abc", 5, Left, "abc  "},
		{"abc", 5, Right, "  abc"},
		{"abcdef", 4, Left, "abc…"},
		{"abcd", 4, Left, "abcd"},
		{"line1\nline2", 11, Left, "line1 line2"},
		{"tab\there", 8, Left, "tab here"},
		{"日本語", 5, Left, "日本…"}, // wide runes: 2 cells each
		{"x", 0, Left, ""},
	}
	for _, tc := range tests {
		got := Fit(tc.s, tc.w, tc.align)
		if got != tc.want {
			t.Errorf("Fit(%q, %d) = %q, want %q", tc.s, tc.w, got, tc.want)
		}
		if tc.w > 0 && ansi.StringWidth(got) != tc.w {
			t.Errorf("Fit(%q, %d) is %d cells wide", tc.s, tc.w, ansi.StringWidth(got))
		}
	}
}

func newModel(w, h int) Model {
	return Model{
		Common:  common.Common{Width: w, Height: h, Styles: common.NewStyles(themes.Default())},
		Columns: testCols,
		Sort:    "url",
		Desc:    true,
	}
}

func TestViewShapeAndGlyphs(t *testing.T) {
	m := newModel(50, 6)
	rows := []Row{
		{ID: "a", Cells: []string{"w1", "idle", "https://example.com/a", "3s"}, StateCol: 1, State: "idle"},
		{ID: "b", Cells: []string{"w2", "failed", "https://example.com/" + strings.Repeat("x", 80), "1m"}, StateCol: 1, State: "failed", Marked: true},
		{ID: "c", Cells: []string{"w3", "busy", "u", "2s"}, StateCol: 1, State: "busy"},
	}
	out := m.View(rows, 2)
	lines := strings.Split(out, "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines, want 6", len(lines))
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w != 50 {
			t.Errorf("line %d is %d cells: %q", i, w, ansi.Strip(l))
		}
	}
	plain := func(i int) string { return ansi.Strip(lines[i]) }
	if !strings.Contains(plain(0), "URL↓") {
		t.Errorf("header %q lacks the descending sort indicator on URL", plain(0))
	}
	if !strings.HasPrefix(plain(1), "  w1") {
		t.Errorf("unselected unmarked row %q: want a blank gutter", plain(1))
	}
	if !strings.HasPrefix(plain(2), " *w2") || !strings.Contains(plain(2), "…") {
		t.Errorf("marked long row %q: want a mark glyph and an ellipsis", plain(2))
	}
	if !strings.HasPrefix(plain(3), ">"+" w3") {
		t.Errorf("selected row %q: want the cursor glyph", plain(3))
	}
	if strings.TrimSpace(plain(4)) != "" || strings.TrimSpace(plain(5)) != "" {
		t.Error("lines past the rows should be blank")
	}
}

func TestViewNarrowTerminalStaysInWidth(t *testing.T) {
	for _, w := range []int{1, 3, 8, 12, 20} {
		m := newModel(w, 3)
		out := m.View([]Row{{Cells: []string{"worker-with-long-id", "dispatched", "u", "1s"}, StateCol: 1, State: "dispatched"}}, 0)
		for i, l := range strings.Split(out, "\n") {
			if got := ansi.StringWidth(l); got > w {
				t.Errorf("width %d: line %d is %d cells: %q", w, i, got, ansi.Strip(l))
			}
		}
	}
}

// A row's wait cell takes the wait's colour; without a wait it is plain.
func TestWaitCellColoured(t *testing.T) {
	m := newModel(50, 3)
	styled := m.Styles.Wait(admin.WaitPolite).Render("X")
	polite := styled[:strings.Index(styled, "X")] // the style's opening sequence
	url := "https://example.com/a"
	row := Row{ID: "a", Cells: []string{"w1", "queued", url, "3s"}, StateCol: 1, State: "queued", WaitCol: 2}
	if out := m.View([]Row{row}, -1); strings.Contains(out, polite) {
		t.Errorf("row not waiting %q: want no cell in the polite style", out)
	}
	row.Wait = admin.WaitPolite
	if out := m.View([]Row{row}, -1); !strings.Contains(out, polite+url) {
		t.Errorf("row waiting polite %q: want its URL cell in the polite style %q", out, polite)
	}
}
