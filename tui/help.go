package tui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// helpColumnWidth is the width of one column of the help screen.
const helpColumnWidth = 50

// helpLines lays out every key in columns that fit the width. A read-only
// console lists its disabled keys too, struck through and marked.
func (m *model) helpLines() []string {
	s := m.Styles
	var blocks [][]string
	for _, g := range m.keys.fullHelp() {
		block := []string{s.ColumnTitle.Render(strings.ToUpper(g.title))}
		for _, b := range g.keys {
			h := b.Help()
			k := s.HintKey.Render(padRight(h.Key, 7))
			if !b.Enabled() {
				block = append(block, " "+k+" "+s.HelpDisabled.Render(h.Desc)+s.Muted.Render(" (disabled: read-only)"))
				continue
			}
			block = append(block, " "+k+" "+s.Text.Render(h.Desc))
		}
		blocks = append(blocks, append(block, ""))
	}
	cols := max(m.Width/helpColumnWidth, 1)
	total := 0
	for _, b := range blocks {
		total += len(b)
	}
	perCol := (total + cols - 1) / cols
	var columns [][]string
	var cur []string
	for _, b := range blocks {
		if len(cur) > 0 && len(cur)+len(b) > perCol && len(columns) < cols-1 {
			columns = append(columns, cur)
			cur = nil
		}
		cur = append(cur, b...)
	}
	columns = append(columns, cur)
	height := 0
	for _, c := range columns {
		height = max(height, len(c))
	}
	colW := m.Width / len(columns)
	lines := make([]string, 0, height+1)
	title := s.Title.Render("Keys") + s.Muted.Render(" · every key of the console")
	if m.opts.ReadOnly {
		title += s.ReadOnly.Render(" · read-only: actions are disabled")
	}
	lines = append(lines, title)
	for i := 0; i < height; i++ {
		var b strings.Builder
		for _, c := range columns {
			cell := ""
			if i < len(c) {
				cell = c[i]
			}
			b.WriteString(fitLine(cell, colW))
		}
		lines = append(lines, b.String())
	}
	return lines
}

// helpView renders the help screen in h lines, scrolled by helpScroll.
func (m *model) helpView(h int) []string {
	lines := m.helpLines()
	maxScroll := max(len(lines)-h, 0)
	scroll := min(m.helpScroll, maxScroll)
	lines = lines[scroll:]
	out := make([]string, 0, h)
	for i := 0; i < h; i++ {
		if i < len(lines) {
			out = append(out, fitLine(lines[i], m.Width))
		} else {
			out = append(out, strings.Repeat(" ", m.Width))
		}
	}
	if h > 0 && scroll < maxScroll {
		out[h-1] = fitLine(m.Styles.Muted.Render("  … j/k scrolls"), m.Width)
	}
	return out
}

func padRight(s string, w int) string {
	if n := ansi.StringWidth(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}
