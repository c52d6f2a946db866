package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"drover/admin"
	"drover/tui/common"
	"drover/tui/dialog"
	"drover/tui/table"
)

// Screen layout: three header lines, the view tabs and the status line at
// the top; the flash line and the hint line at the bottom; the body between.
const (
	headerLines  = 3
	chromeLines  = headerLines + 4 // tabs, status, flash, hints
	minWidth     = 30
	minHeight    = 10
	hostLinesMax = 6 // host back-off lines in Retries, title included
)

// bodyHeight is the number of lines between the status and flash lines.
func (m *model) bodyHeight() int { return max(m.Height-chromeLines, 0) }

// layout splits the body: the table (its header line included), the
// Retries host back-offs and the detail pane.
func (m *model) layout() (tableH, hostsH, detailH int) {
	body := m.bodyHeight()
	if m.detail != nil {
		// The pane gets two thirds: a job's attempts need the room, and
		// a few table rows keep the context.
		detailH = body - max(body/3, min(body, 6))
	}
	n := 0
	switch m.view {
	case admin.ViewRetries:
		n = len(m.panes[admin.ViewRetries].page.Hosts)
	case admin.ViewCrawls:
		n = len(m.selectedBackoffs())
	}
	if n > 0 {
		hostsH = min(n+1, hostLinesMax, max(body-detailH-3, 0))
	}
	tableH = max(body-detailH-hostsH, 0)
	return tableH, hostsH, detailH
}

// visRows is the number of data rows the table shows.
func (m *model) visRows() int {
	t, _, _ := m.layout()
	return max(t-1, 0)
}

// View renders the screen. Only the root model returns a tea.View.
func (m *model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = "drover console"
	return v
}

func (m *model) render() string {
	if m.Width <= 0 || m.Height <= 0 {
		return ""
	}
	if m.Width < minWidth || m.Height < minHeight {
		msg := "terminal too small: need " + itoa(minWidth) + "x" + itoa(minHeight) + ", q quits"
		return lipgloss.Place(m.Width, m.Height, lipgloss.Center, lipgloss.Center, fitLine(msg, m.Width))
	}
	if m.mode == modeHelp {
		// Help takes the whole screen but the hint line.
		return strings.Join(append(m.helpView(m.Height-1), m.hintLine()), "\n")
	}
	lines := make([]string, 0, m.Height)
	lines = append(lines, m.header()...)
	lines = append(lines, m.tabs(), m.status())
	body := m.body()
	if m.mode == modeDialog {
		body = m.overlayDialog(body)
	}
	lines = append(lines, body...)
	lines = append(lines, m.flashLine(), m.hintLine())
	return strings.Join(lines, "\n")
}

// tabs renders the view bar; the active view is bracketed, not only coloured.
func (m *model) tabs() string {
	var b strings.Builder
	for i, v := range viewOrder {
		label := itoa(i+1) + " " + views[v].title
		if v == m.view {
			b.WriteString(m.Styles.TabActive.Render("[" + label + "]"))
		} else {
			b.WriteString(m.Styles.TabInactive.Render(" " + label + " "))
		}
		b.WriteByte(' ')
	}
	return fitLine(b.String(), m.Width)
}

// status renders the filter (or its editor), the order, the marks and the
// position in the table.
func (m *model) status() string {
	s := m.Styles
	p := m.pane()
	if m.mode == modeFilter {
		line := m.editor.input.View()
		if m.editor.err != "" {
			line += "  " + s.Error.Render(common.Sanitize(m.editor.err))
		} else {
			line += "  " + s.Muted.Render("enter applies · esc cancels")
		}
		return fitLine(line, m.Width)
	}
	var parts []string
	if p.view == admin.ViewWaiters {
		if p.key == "" {
			parts = append(parts, s.Muted.Render("no key selected"))
		} else {
			parts = append(parts, s.Muted.Render("waiting on ")+s.Text.Render(common.Sanitize(m.keyLabel(p.key))))
		}
	}
	if p.filter != "" {
		parts = append(parts, s.Muted.Render("filter ")+s.Accent.Render(common.Sanitize(p.filter)))
	}
	order := "default order"
	if p.sort != "" {
		order = "sort " + p.sort
	}
	if p.desc {
		order += " ↓"
	} else if p.sort != "" {
		order += " ↑"
	}
	parts = append(parts, s.Muted.Render(order))
	if n := len(p.marks); n > 0 {
		parts = append(parts, s.Marked.Render(plural(n, "mark")))
	}
	left := strings.Join(parts, s.Muted.Render(" · "))
	right := ""
	switch {
	case !p.loaded:
		right = "loading…"
	case p.page.Total == 0:
		right = "no rows"
	default:
		end := min(p.top+m.visRows(), p.page.Total)
		right = "rows " + common.Grouped(p.top+1) + "–" + common.Grouped(end) + " of " + common.Grouped(p.page.Total)
	}
	right = s.Muted.Render(right)
	gap := m.Width - ansi.StringWidth(left) - ansi.StringWidth(right)
	if gap < 1 {
		return fitLine(left+" "+right, m.Width)
	}
	return left + strings.Repeat(" ", gap) + right
}

// keyLabel names the waiters' key by its URL when known.
func (m *model) keyLabel(key string) string {
	if key == m.waitKey && m.waitURL != "" {
		return m.waitURL
	}
	return key
}

// body renders the lines between the status and flash lines.
func (m *model) body() []string {
	h := m.bodyHeight()
	tableH, hostsH, detailH := m.layout()
	lines := make([]string, 0, h)
	lines = append(lines, m.tableView(tableH)...)
	if hostsH > 0 {
		lines = append(lines, m.hostsView(hostsH)...)
	}
	if detailH > 0 {
		lines = append(lines, m.renderDetail(detailH)...)
	}
	for len(lines) < h {
		lines = append(lines, strings.Repeat(" ", m.Width))
	}
	return lines[:h]
}

// tableView renders the current view's visible rows from the fetched
// window; rows not fetched yet show as "…".
func (m *model) tableView(h int) []string {
	if h <= 0 {
		return nil
	}
	p := m.pane()
	d := views[p.view]
	tm := table.Model{Common: m.Common.SetSize(m.Width, h), Columns: d.columns, Sort: p.sort, Desc: p.desc}
	vis := h - 1
	if !p.loaded || p.page.Total == 0 {
		lines := strings.Split(tm.View(nil, -1), "\n")
		if len(lines) > 2 {
			lines[2] = fitLine("  "+m.Styles.Muted.Render(m.emptyText(p)), m.Width)
		}
		return lines
	}
	now := m.Now()
	rows := make([]table.Row, 0, vis)
	n := d.len(&p.page)
	for abs := p.top; abs < min(p.top+vis, p.page.Total); abs++ {
		i := abs - p.page.Offset
		if i < 0 || i >= n {
			rows = append(rows, table.Row{StateCol: -1, Cells: []string{"…"}})
			continue
		}
		var r table.Row
		if d.paneRow != nil {
			r = d.paneRow(p, i, now)
		} else {
			r = d.row(&p.page, i, now)
		}
		_, r.Marked = p.marks[r.ID]
		rows = append(rows, r)
	}
	return strings.Split(tm.View(rows, p.cursor-p.top), "\n")
}

// emptyText explains an empty or unloaded table.
func (m *model) emptyText(p *pane) string {
	d := views[p.view]
	switch {
	case p.view == admin.ViewWaiters && p.key == "":
		return "no key selected: pick a URL in Jobs (2) or Retries (4), then press 3"
	case !p.loaded && m.coord.stale:
		return "no answer from the coordinator: " + common.Sanitize(m.coord.staleErr)
	case !p.loaded:
		return "loading…"
	case p.view == admin.ViewWaiters:
		return "nobody waits on this key"
	case p.filter != "":
		return "no " + d.noun + "s match the filter (esc clears it)"
	}
	return "no " + d.noun + "s"
}

// hostsView renders the per-host back-offs below the Retries table, or
// below the Crawls table those holding the selected crawl's jobs.
func (m *model) hostsView(h int) []string {
	s := m.Styles
	hosts := m.panes[admin.ViewRetries].page.Hosts
	title := "  HOST BACK-OFFS ("
	var crawlJobs []int
	if m.view == admin.ViewCrawls {
		hosts = hosts[:0:0]
		for _, b := range m.selectedBackoffs() {
			hosts, crawlJobs = append(hosts, b.HostRow), append(crawlJobs, b.crawlJobs)
		}
		title = "  HOST BACK-OFFS OF " + common.Sanitize(m.panes[admin.ViewCrawls].selID) + " ("
	}
	now := m.Now()
	out := []string{fitLine(s.ColumnTitle.Render(title+itoa(len(hosts))+")"), m.Width)}
	for i := 0; i < len(hosts) && len(out) < h; i++ {
		hr := hosts[i]
		if len(out) == h-1 && len(hosts)-i > 1 {
			out = append(out, fitLine(s.Muted.Render("  … and "+itoa(len(hosts)-i)+" more hosts"), m.Width))
			break
		}
		line := "  " + s.Warn.Render("↻ "+common.Sanitize(hr.Host)) + s.Muted.Render("  until ") + clockTime(hr.Until) +
			" (" + common.Until(now, hr.Until) + ")" + s.Muted.Render("  throttles ") + itoa(hr.Throttles) +
			s.Muted.Render("  jobs held ") + itoa(hr.Jobs)
		if hr.Polite { // held by its politeness limits, not a back-off
			line = "  " + s.Info.Render("⏸ "+common.Sanitize(hr.Host)) + s.Muted.Render("  polite: ") + common.Sanitize(hr.Limit) +
				s.Muted.Render("  in flight ") + itoa(hr.InFlight) + s.Muted.Render("  jobs held ") + itoa(hr.Jobs)
			if !hr.Until.IsZero() {
				line += s.Muted.Render("  next ") + clockTime(hr.Until)
			}
		}
		if crawlJobs != nil {
			line += s.Muted.Render(" (of the crawl ") + itoa(crawlJobs[i]) + s.Muted.Render(")")
		}
		out = append(out, fitLine(line, m.Width))
	}
	return out
}

// overlayDialog draws the dialog box centred over the body.
func (m *model) overlayDialog(body []string) []string {
	box := m.dialog.View()
	if box == "" || len(body) == 0 {
		return body
	}
	bw, bh := lipgloss.Width(box), lipgloss.Height(box)
	x, y := max((m.Width-bw)/2, 0), max((len(body)-bh)/2, 0)
	base := lipgloss.NewLayer(strings.Join(body, "\n"))
	top := lipgloss.NewLayer(box).X(x).Y(y).Z(1)
	out := strings.Split(lipgloss.NewCompositor(base, top).Render(), "\n")
	for len(out) < len(body) {
		out = append(out, "")
	}
	out = out[:len(body)]
	for i := range out {
		out[i] = fitLine(out[i], m.Width)
	}
	return out
}

// flashLine shows the last flash message, or why the console is STALE.
func (m *model) flashLine() string {
	s := m.Styles
	switch {
	case m.flash.text != "":
		text := common.Sanitize(m.flash.text)
		switch m.flash.level {
		case flashError:
			return fitLine(s.Error.Render("✗ "+text), m.Width)
		case flashWarn:
			return fitLine(s.Warn.Render("! "+text), m.Width)
		default:
			return fitLine(s.Info.Render("› "+text), m.Width)
		}
	case m.coord.stale:
		return fitLine(s.Error.Render("✗ coordinator not answering: "+common.Sanitize(m.coord.staleErr)), m.Width)
	}
	return strings.Repeat(" ", m.Width)
}

// hintLine shows the current view's keys, with help and quit always at
// the right.
func (m *model) hintLine() string {
	s := m.Styles
	right := hintText(s, []key.Binding{withDesc(m.keys.Help, "help"), withDesc(m.keys.Quit, "quit")})
	switch m.mode {
	case modeDialog:
		return fitLine(hintText(s, dialog.Keys.ShortHelp()), m.Width)
	case modeHelp:
		return fitLine(hintText(s, helpHints(&m.keys)), m.Width)
	case modeFilter:
		return fitLine(hintText(s, filterHints(&m.keys))+s.HintSep.Render(" • ")+s.HintDesc.Render(filterExample), m.Width)
	}
	rw := ansi.StringWidth(right)
	avail := max(m.Width-rw-2, 0)
	h := m.help
	h.SetWidth(avail)
	left := h.ShortHelpView(views[m.view].hints(&m.keys))
	// help drops the items that do not fit, but keeps one that leaves no
	// room for its ellipsis: cut what is left over.
	if ansi.StringWidth(left) > avail {
		left = ansi.Truncate(left, avail, "…")
	}
	gap := max(m.Width-ansi.StringWidth(left)-rw, 1)
	return fitLine(left+strings.Repeat(" ", gap)+right, m.Width)
}

// hintText renders bindings as hint items: the key, its short description,
// a separator between items.
func hintText(s *common.Styles, bs []key.Binding) string {
	var b strings.Builder
	for i, k := range bs {
		if i > 0 {
			b.WriteString(s.HintSep.Render(" • "))
		}
		b.WriteString(s.HintKey.Render(k.Help().Key) + " " + s.HintDesc.Render(k.Help().Desc))
	}
	return b.String()
}
