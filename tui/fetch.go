package tui

import (
	"context"
	"fmt"

	tea "charm.land/bubbletea/v2"

	"drover/admin"
)

// maxMargin caps the rows fetched beyond the visible window on each side.
// The margin lets the cursor move a page without a round trip, and lets the
// selection be found again when rows move by up to a page between refreshes.
const maxMargin = 100

// rateSamples is how many dispatch-rate samples the sparkline keeps.
const rateSamples = 60

// fetchedMsg is the answer to one round of backend calls.
type fetchedMsg struct {
	seq    uint64
	view   admin.View
	gen    uint64
	q      admin.Query
	totals admin.Totals
	page   admin.Page
	detail *detailData
	// backoffs: ViewCrawls' host back-offs by crawl name.
	backoffs map[string][]crawlBackoff
	err      error
}

// refreshState schedules the rounds of backend calls: at most one in
// flight, and after each one a cooldown of Options.Refresh before a
// Changed-driven refresh. A refresh the operator caused (scroll, new
// view) is urgent and does not wait for the cooldown.
type refreshState struct {
	seq      uint64 // rounds started
	applied  uint64 // seq of the last round applied
	inFlight bool
	cooling  bool
	coolGen  uint64
	dirty    bool
	urgent   bool
}

// probeMsg tells what became of a selected row that left the window.
type probeMsg struct {
	level flashLevel
	text  string
}

// requestRefresh asks for a round of backend calls. An urgent one (the
// operator scrolled, switched view, changed the filter) goes as soon as
// nothing is in flight; a change signal waits for the cooldown, so Changed
// costs at most one round per Options.Refresh.
func (m *model) requestRefresh(urgent bool) tea.Cmd {
	if urgent {
		m.refresh.urgent = true
	} else {
		m.refresh.dirty = true
	}
	return m.maybeFetch()
}

func (m *model) maybeFetch() tea.Cmd {
	if m.refresh.inFlight || m.quitting {
		return nil
	}
	if m.refresh.urgent || (m.refresh.dirty && !m.refresh.cooling) {
		m.refresh.urgent, m.refresh.dirty = false, false
		return m.startFetch()
	}
	return nil
}

// windowQuery is the query for a pane's visible rows plus a margin.
func (m *model) windowQuery(p *pane) admin.Query {
	vis := max(m.visRows(), 1)
	margin := min(vis, maxMargin)
	off := max(0, p.top-margin)
	q := admin.Query{
		View: p.view, Offset: off, Limit: (p.top - off) + vis + margin,
		Sort: p.sort, Desc: p.desc, Filter: p.filter,
	}
	if p.view == admin.ViewWaiters {
		q.Key = p.key
	}
	return q
}

// startFetch starts one round: totals, the current view's window, and the
// detail pane's rows when it is open, under one timeout.
func (m *model) startFetch() tea.Cmd {
	p := m.pane()
	q := m.windowQuery(p)
	m.refresh.seq++
	m.refresh.inFlight = true
	msg := fetchedMsg{seq: m.refresh.seq, view: p.view, gen: p.gen, q: q}
	req := m.detailRequest()
	b, parent, timeout, asked := m.b, m.ctx, m.opts.Timeout, m.Now()
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, timeout)
		defer cancel()
		t, err := b.Totals(ctx)
		if err != nil {
			msg.err = fmt.Errorf("totals: %w", err)
			return msg
		}
		msg.totals = t
		if q.View == admin.ViewWaiters && q.Key == "" {
			msg.page = admin.Page{View: q.View}
		} else {
			page, err := b.Query(ctx, q)
			if err != nil {
				msg.err = fmt.Errorf("%s window: %w", q.View, err)
				return msg
			}
			msg.page = page
		}
		if q.View == admin.ViewCrawls {
			if msg.backoffs, err = fetchCrawlBackoffs(ctx, b, msg.page.Crawls, crawlClock(t.At, asked)); err != nil {
				msg.err = fmt.Errorf("crawl back-offs: %w", err)
				return msg
			}
		}
		if req != nil {
			msg.detail = fetchDetail(ctx, b, *req)
		}
		return msg
	}
}

// applyFetch takes a round's answer: STALE on error, otherwise new totals,
// the window (if its order still applies) and the selection re-found.
func (m *model) applyFetch(msg fetchedMsg) tea.Cmd {
	if msg.seq <= m.refresh.applied {
		return nil
	}
	m.refresh.inFlight = false
	m.refresh.applied = msg.seq
	var cmds []tea.Cmd
	if msg.err != nil {
		m.coord.stale = true
		m.coord.staleErr = msg.err.Error()
	} else {
		m.coord.stale = m.coord.closed
		if !m.coord.closed {
			m.coord.staleErr = ""
		}
		m.coord.lastOK = m.Now()
		m.coord.setTotals(msg.totals, m.Now())
		if p := m.panes[msg.view]; msg.gen == p.gen {
			if msg.view == admin.ViewCrawls {
				p.backoffs = msg.backoffs
			}
			cmds = append(cmds, m.applyPage(p, msg.page, msg.q))
		}
		if msg.detail != nil && m.detail != nil && m.detail.view == msg.detail.view && m.detail.id == msg.detail.id {
			m.detail.apply(msg.detail)
		}
	}
	m.refresh.cooling = true
	m.refresh.coolGen++
	cmds = append(cmds, m.after(m.opts.Refresh, coolDoneMsg{gen: m.refresh.coolGen}), m.maybeFetch())
	return tea.Batch(cmds...)
}

// applyPage installs a fetched window and keeps the selection on the same
// row: found again, the cursor moves with it and keeps its screen line;
// gone, a flash says what became of it.
func (m *model) applyPage(p *pane, page admin.Page, q admin.Query) tea.Cmd {
	prevSel, prevLabel := p.selID, p.selLabel
	screenRow := p.cursor - p.top
	p.page, p.loaded = page, true
	var cmds []tea.Cmd
	switch {
	case p.follow:
		p.cursor, p.top = 0, 0
	case prevSel != "":
		if i := m.find(p, prevSel); i >= 0 {
			p.cursor = page.Offset + i
			p.top = p.cursor - screenRow
		} else if !p.quiet {
			cmds = append(cmds, m.lost(p, prevSel, prevLabel))
		}
	}
	p.quiet = false
	m.clamp(p)
	m.selectAt(p)
	if !m.covered(p) && m.windowQuery(p).Offset != q.Offset {
		cmds = append(cmds, m.requestRefresh(true))
	}
	cmds = append(cmds, m.retargetDetail(p))
	return tea.Batch(cmds...)
}

// find returns the index in the window of the row with that identity, or -1.
func (m *model) find(p *pane, id string) int {
	d := views[p.view]
	for i, n := 0, d.len(&p.page); i < n; i++ {
		if d.id(&p.page, i) == id {
			return i
		}
	}
	return -1
}

// idAt returns the identity and label of the row at an absolute index, or
// empty strings when it is outside the fetched window.
func (m *model) idAt(p *pane, abs int) (string, string) {
	d := views[p.view]
	i := abs - p.page.Offset
	if !p.loaded || i < 0 || i >= d.len(&p.page) {
		return "", ""
	}
	return d.id(&p.page, i), d.label(&p.page, i)
}

// selectAt records the row under the cursor as the selection; in Jobs and
// Retries it also becomes the key the Waiters view lists.
func (m *model) selectAt(p *pane) {
	p.selID, p.selLabel = m.idAt(p, p.cursor)
	if p.selID != "" && (p.view == admin.ViewJobs || p.view == admin.ViewRetries) {
		m.waitKey, m.waitURL = p.selID, p.selLabel
	}
}

// covered reports whether the fetched window holds every visible row.
func (m *model) covered(p *pane) bool {
	if !p.loaded {
		return false
	}
	end := min(p.top+m.visRows(), p.page.Total)
	if end <= p.top {
		return true
	}
	off := p.page.Offset
	return p.top >= off && end <= off+views[p.view].len(&p.page)
}

// clamp keeps cursor and top inside the table and the cursor on screen.
func (m *model) clamp(p *pane) {
	total, vis := p.page.Total, max(m.visRows(), 1)
	if total <= 0 {
		p.cursor, p.top = 0, 0
		return
	}
	p.cursor = min(max(p.cursor, 0), total-1)
	if p.cursor < p.top {
		p.top = p.cursor
	}
	if p.cursor >= p.top+vis {
		p.top = p.cursor - vis + 1
	}
	p.top = min(max(p.top, 0), max(total-vis, 0))
}

// clampAll re-clamps every pane after the window size changed.
func (m *model) clampAll() {
	for _, p := range m.panes {
		m.clamp(p)
	}
}

// moveTo puts the cursor on an absolute row and fetches if that row or the
// rows now visible are outside the fetched window.
func (m *model) moveTo(abs int) tea.Cmd {
	p := m.pane()
	if p.page.Total <= 0 {
		return nil
	}
	p.cursor = abs
	m.clamp(p)
	p.follow = p.view == admin.ViewEvents && p.cursor == 0
	m.selectAt(p)
	var cmds []tea.Cmd
	if !m.covered(p) {
		cmds = append(cmds, m.requestRefresh(true))
	}
	cmds = append(cmds, m.retargetDetail(p))
	return tea.Batch(cmds...)
}

// lost deals with a selected row missing from a new window: it asks the
// backend whether the row still exists to say which it was, gone or moved.
func (m *model) lost(p *pane, id, label string) tea.Cmd {
	d := views[p.view]
	name := d.noun + " " + label
	switch p.view {
	case admin.ViewWaiters:
		return m.setFlash(flashWarn, label+" no longer waits")
	case admin.ViewEvents:
		return m.setFlash(flashWarn, label+" aged out of the event log")
	case admin.ViewCrawls:
		return m.setFlash(flashWarn, label+" is no longer listed")
	}
	var q admin.Query
	if p.view == admin.ViewWorkers {
		q = admin.Query{View: admin.ViewWorkers, Filter: "worker=" + id, Limit: 1}
	} else {
		q = admin.Query{View: admin.ViewJobs, Key: id, Limit: 1}
	}
	filtered := p.filter != ""
	retries := p.view == admin.ViewRetries
	b, parent, timeout := m.b, m.ctx, m.opts.Timeout
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, timeout)
		defer cancel()
		page, err := b.Query(ctx, q)
		switch {
		case err != nil:
			return probeMsg{flashWarn, name + " is no longer in view"}
		case len(page.Workers) == 0 && len(page.Jobs) == 0:
			return probeMsg{flashWarn, name + " is gone"}
		case retries && len(page.Jobs) > 0 && page.Jobs[0].State != "backoff" && page.Jobs[0].State != "failed":
			return probeMsg{flashInfo, name + " left retries: now " + page.Jobs[0].State}
		case filtered:
			return probeMsg{flashInfo, name + " no longer matches the filter, or moved out of view"}
		default:
			return probeMsg{flashInfo, name + " moved out of view (the order changed)"}
		}
	}
}
