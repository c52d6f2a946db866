package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// helpColumnWidth is the narrowest column of the help screen.
const helpColumnWidth = 40

// helpScreen is the help component's state: how far it is scrolled. Its
// content is generated from the components' keymaps (fullHelp).
type helpScreen struct {
	scroll int
}

// helpKeys is the help screen's keymap: j/k scroll, ctrl+c quits, and any
// other key closes help (helpKey).
func helpKeys(k *keyMap) keymap {
	closeHelp := func(m *model) tea.Cmd {
		m.mode = modeNormal
		return nil
	}
	return keymap{
		{key: k.Down, run: func(m *model) tea.Cmd {
			m.helpScreen.scroll = min(m.helpScreen.scroll+1, max(len(m.helpLines())-(m.Height-1), 0))
			return nil
		}},
		{key: k.Up, run: func(m *model) tea.Cmd {
			m.helpScreen.scroll = max(m.helpScreen.scroll-1, 0)
			return nil
		}},
		{key: k.ForceQuit, run: (*model).quit},
		{key: k.CloseHelp, run: closeHelp},
	}
}

// helpHints are the help screen's keys on the hint line: Scroll stands for
// Up and Down.
func helpHints(k *keyMap) []key.Binding { return []key.Binding{k.Scroll, k.CloseHelp} }

// openHelp shows the help screen from its top.
func (m *model) openHelp() tea.Cmd {
	m.mode, m.helpScreen.scroll = modeHelp, 0
	return nil
}

// helpKey routes a key press on the help screen; a key its keymap lacks
// closes help, as CloseHelp does.
func (m *model) helpKey(k tea.KeyPressMsg) tea.Cmd {
	if b := m.helpKeys.find(k); b != nil {
		return b.run(m)
	}
	m.mode = modeNormal
	return nil
}

// helpLines lays out every key in as many columns as the width allows,
// balanced by height. A read-only console lists its disabled keys too,
// marked ✗ and struck through, under a title that says why.
func (m *model) helpLines() []string {
	s := m.Styles
	var blocks [][]string
	for _, g := range m.fullHelp() {
		title := strings.ToUpper(g.title)
		for _, b := range g.keys {
			if !b.Enabled() {
				title += " (disabled: read-only)"
				break
			}
		}
		block := []string{s.ColumnTitle.Render(title)}
		for _, b := range g.keys {
			h := b.Help()
			if !b.Enabled() {
				block = append(block, s.Muted.Render("✗")+s.HintKey.Render(padRight(h.Key, 6))+" "+s.HelpDisabled.Render(h.Desc))
				continue
			}
			block = append(block, " "+s.HintKey.Render(padRight(h.Key, 6))+" "+s.Text.Render(h.Desc))
		}
		blocks = append(blocks, block)
	}
	cols := min(max(m.Width/helpColumnWidth, 1), len(blocks))
	columns := balance(blocks, cols)
	height := 0
	for _, c := range columns {
		height = max(height, len(c))
	}
	colW := m.Width / len(columns)
	title := s.Title.Render("Keys") + s.Muted.Render(" · every key of the console")
	if m.opts.ReadOnly {
		title += s.ReadOnly.Render(" · read-only: actions are disabled")
	}
	lines := make([]string, 0, height+1)
	lines = append(lines, title)
	for i := 0; i < height; i++ {
		var b strings.Builder
		for _, c := range columns {
			cell := ""
			if i < len(c) {
				cell = c[i]
			}
			b.WriteString(fitLine(cell, colW-1) + " ")
		}
		lines = append(lines, b.String())
	}
	return lines
}

// balance splits the blocks, in order, into n columns (a blank line between
// blocks) so that the tallest column is as short as possible.
func balance(blocks [][]string, n int) [][]string {
	best, bestH := [][]string(nil), -1
	var try func(rest [][]string, n int, acc [][]string)
	try = func(rest [][]string, n int, acc [][]string) {
		if n == 1 {
			cols := append(acc, stack(rest))
			h := 0
			for _, c := range cols {
				h = max(h, len(c))
			}
			if bestH < 0 || h < bestH {
				best, bestH = append([][]string(nil), cols...), h
			}
			return
		}
		for i := 1; i <= len(rest)-n+1; i++ {
			try(rest[i:], n-1, append(acc[:len(acc):len(acc)], stack(rest[:i])))
		}
	}
	try(blocks, n, nil)
	return best
}

// stack joins blocks with a blank line between them.
func stack(blocks [][]string) []string {
	var out []string
	for i, b := range blocks {
		if i > 0 {
			out = append(out, "")
		}
		out = append(out, b...)
	}
	return out
}

// helpView renders the help screen in h lines, scrolled.
func (m *model) helpView(h int) []string {
	lines := m.helpLines()
	maxScroll := max(len(lines)-h, 0)
	scroll := min(m.helpScreen.scroll, maxScroll)
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
