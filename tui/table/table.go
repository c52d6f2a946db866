// Package table renders one window of a server-side table: the rows the
// coordinator returned for the visible range, laid out to the terminal's
// width. It never holds the whole table; the console fetches windows and
// hands them here. Columns narrow to their minimum and then drop by
// priority as the terminal narrows; long cells end in an ellipsis.
package table

import (
	"strings"

	"github.com/charmbracelet/x/ansi"

	"drover/admin"
	"drover/tui/common"
)

// Align says which side of its cell a column's text sits on.
type Align uint8

// Alignments.
const (
	Left Align = iota
	Right
)

// Column describes one column of a view.
type Column struct {
	Title string
	// Sort is the name the coordinator sorts this column by (the JSON name
	// of the row field); empty if the column is not sortable.
	Sort string
	// Min is the narrowest the column gets; Max caps it (0: no cap).
	Min, Max int
	// Flex is the column's share of width beyond the minimums (0: fixed).
	Flex int
	// Priority 0 columns always show; higher numbers are dropped first when
	// the terminal is too narrow for every minimum.
	Priority int
	Align    Align
}

// Row is one row of the window.
type Row struct {
	// ID is the row's identity (worker id, key, session, event seq): the
	// console's selection follows it across refreshes.
	ID    string
	Cells []string
	// StateCol is the index of the cell holding the row's state word,
	// styled by State; -1 for none.
	StateCol int
	State    string
	// WaitCol is the index of the cell saying why the row's job waits,
	// styled by Wait (common.Styles.Wait); ignored while Wait is empty.
	WaitCol int
	Wait    admin.Wait
	Marked  bool
}

// Gutter is the width of the selection and mark column at the left.
const Gutter = 2

// Glyphs of the gutter: the cursor and the mark show without colour.
const (
	CursorGlyph = ">"
	MarkGlyph   = "*"
)

// Model renders windows of a table.
type Model struct {
	common.Common
	Columns []Column
	// Sort and Desc are the current order, for the header's indicator.
	Sort string
	Desc bool
}

// Layout returns the width of each column for a total width; 0 means the
// column is dropped. Columns get their minimum, the lowest-priority ones are
// dropped until the minimums fit, and what is left is shared by Flex.
func Layout(cols []Column, width int) []int {
	widths := make([]int, len(cols))
	avail := width - Gutter
	if avail <= 0 || len(cols) == 0 {
		return widths
	}
	shown := make([]bool, len(cols))
	for i := range cols {
		shown[i] = true
	}
	need := func() int {
		n, k := 0, 0
		for i, c := range cols {
			if shown[i] {
				n += max(c.Min, 1)
				k++
			}
		}
		return n + max(k-1, 0) // one space between columns
	}
	for need() > avail {
		drop := -1
		for i, c := range cols {
			if shown[i] && c.Priority > 0 && (drop < 0 || c.Priority >= cols[drop].Priority) {
				drop = i
			}
		}
		if drop < 0 {
			break
		}
		shown[drop] = false
	}
	flexTotal := 0
	for i, c := range cols {
		if shown[i] {
			widths[i] = max(c.Min, 1)
			flexTotal += c.Flex
		}
	}
	extra := avail - need()
	// Share the extra width by Flex, respecting Max; repeat while some
	// column hit its cap and width is left.
	for extra > 0 && flexTotal > 0 {
		given, nextFlex := 0, 0
		for i, c := range cols {
			if !shown[i] || c.Flex == 0 || (c.Max > 0 && widths[i] >= c.Max) {
				continue
			}
			add := extra * c.Flex / flexTotal
			if c.Max > 0 {
				add = min(add, c.Max-widths[i])
			}
			widths[i] += add
			given += add
			if c.Max == 0 || widths[i] < c.Max {
				nextFlex += c.Flex
			}
		}
		extra -= given
		if given == 0 {
			// Rounding left a few cells: give them to the first column
			// that can still grow.
			for i, c := range cols {
				if shown[i] && c.Flex > 0 && (c.Max == 0 || widths[i] < c.Max) {
					widths[i] += extra
					extra = 0
					break
				}
			}
			break
		}
		flexTotal = nextFlex
	}
	return widths
}

// Fit pads or truncates s to exactly w cells; truncated text ends in "…".
// Control characters (a newline in an error message) become spaces.
func Fit(s string, w int, a Align) string {
	if w <= 0 {
		return ""
	}
	s = common.Sanitize(s)
	sw := ansi.StringWidth(s)
	if sw > w {
		s = ansi.Truncate(s, w, "…")
		sw = ansi.StringWidth(s)
	}
	if sw == w {
		return s
	}
	pad := strings.Repeat(" ", w-sw)
	if a == Right {
		return pad + s
	}
	return s + pad
}

// Header renders the column titles with the sort indicator.
func (m Model) Header(widths []int) string {
	var b strings.Builder
	b.WriteString(strings.Repeat(" ", Gutter))
	first := true
	for i, c := range m.Columns {
		if widths[i] == 0 {
			continue
		}
		if !first {
			b.WriteByte(' ')
		}
		first = false
		title := c.Title
		if c.Sort != "" && c.Sort == m.Sort {
			if m.Desc {
				title += "↓"
			} else {
				title += "↑"
			}
		}
		b.WriteString(Fit(title, widths[i], c.Align))
	}
	return m.Styles.ColumnTitle.Render(Fit(b.String(), m.Width, Left))
}

// Line renders one row to exactly the model's width.
func (m Model) Line(widths []int, r Row, selected bool) string {
	gutter := " "
	if selected {
		gutter = CursorGlyph
	}
	if r.Marked {
		gutter += MarkGlyph
	} else {
		gutter += " "
	}
	if selected || r.Marked {
		// One style over the whole line; the state word still shows.
		var b strings.Builder
		b.WriteString(gutter)
		m.cells(&b, widths, r, nil)
		line := Fit(b.String(), m.Width, Left)
		if selected {
			return m.Styles.Selected.Render(line)
		}
		return m.Styles.Marked.Render(line)
	}
	var b strings.Builder
	b.WriteString(gutter)
	used := m.cells(&b, widths, r, m.Styles)
	if used < m.Width {
		b.WriteString(strings.Repeat(" ", m.Width-used))
	}
	return b.String()
}

// cells writes the row's cells and returns the width written including the
// gutter; with styles the state cell is coloured by its state, and the
// wait cell by the wait.
func (m Model) cells(b *strings.Builder, widths []int, r Row, styles *common.Styles) int {
	used := Gutter
	first := true
	for i, c := range m.Columns {
		if widths[i] == 0 {
			continue
		}
		if used+1 > m.Width && !first {
			break
		}
		if !first {
			b.WriteByte(' ')
			used++
		}
		first = false
		w := min(widths[i], m.Width-used)
		text := ""
		if i < len(r.Cells) {
			text = r.Cells[i]
		}
		cell := Fit(text, w, c.Align)
		switch {
		case styles == nil:
		case i == r.StateCol:
			cell = styles.State(r.State).Render(cell)
		case i == r.WaitCol && r.Wait != "":
			cell = styles.Wait(r.Wait).Render(cell)
		}
		b.WriteString(cell)
		used += w
	}
	return used
}

// View renders the header and rows [0, Height-1) of the window; cursor is
// the index of the selected row in rows, or -1. Lines past the rows are
// blank, so the output is always Height lines of Width cells.
func (m Model) View(rows []Row, cursor int) string {
	if m.Height <= 0 || m.Width <= 0 {
		return ""
	}
	widths := Layout(m.Columns, m.Width)
	lines := make([]string, 0, m.Height)
	lines = append(lines, m.Header(widths))
	blank := strings.Repeat(" ", m.Width)
	for i := 0; len(lines) < m.Height; i++ {
		if i < len(rows) {
			lines = append(lines, m.Line(widths, rows[i], i == cursor))
		} else {
			lines = append(lines, blank)
		}
	}
	return strings.Join(lines, "\n")
}
