package tui

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"drover/admin"
	"drover/tui/common"
	"drover/tui/dialog"
)

// markAllCap bounds the rows `*` marks in one go.
const markAllCap = 100_000

// quitDialog is the id of the quit confirmation.
const quitDialog = "quit"

// actDoneMsg is the backend's answer to an action.
type actDoneMsg struct {
	action admin.Action
	view   admin.View
	result admin.ActionResult
	err    error
}

// markAllMsg carries the rows `*` marked.
type markAllMsg struct {
	view  admin.View
	gen   uint64
	marks map[string]mark
	total int
	err   error
}

// toggleMark marks or unmarks the selected row.
func (m *model) toggleMark() tea.Cmd {
	p := m.pane()
	d := views[p.view]
	i := p.cursor - p.page.Offset
	if p.selID == "" || i < 0 || i >= d.len(&p.page) {
		return m.setFlash(flashInfo, "no row selected")
	}
	if _, ok := p.marks[p.selID]; ok {
		delete(p.marks, p.selID)
	} else {
		p.marks[p.selID] = d.mark(&p.page, i)
	}
	return nil
}

// markAll marks every row the filter shows, asking the coordinator for
// them (up to markAllCap) rather than walking anything locally.
func (m *model) markAll() tea.Cmd {
	p := m.pane()
	d := views[p.view]
	q := admin.Query{View: p.view, Limit: markAllCap, Sort: p.sort, Desc: p.desc, Filter: p.filter}
	view, gen := p.view, p.gen
	b, parent, timeout := m.b, m.ctx, m.opts.Timeout
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, timeout)
		defer cancel()
		page, err := b.Query(ctx, q)
		if err != nil {
			return markAllMsg{view: view, gen: gen, err: err}
		}
		marks := make(map[string]mark, d.len(&page))
		for i, n := 0, d.len(&page); i < n; i++ {
			marks[d.id(&page, i)] = d.mark(&page, i)
		}
		return markAllMsg{view: view, gen: gen, marks: marks, total: page.Total}
	}
}

func (m *model) applyMarkAll(msg markAllMsg) tea.Cmd {
	p := m.panes[msg.view]
	if msg.gen != p.gen {
		return nil // the filter changed meanwhile: these are not the rows it shows
	}
	if msg.err != nil {
		return m.setFlash(flashError, "mark all: "+msg.err.Error())
	}
	maps.Copy(p.marks, msg.marks)
	text := "marked " + plural(len(msg.marks), "row")
	if p.filter != "" {
		text += " matching " + p.filter
	}
	if msg.total > len(msg.marks) {
		text += " (the first " + common.Grouped(len(msg.marks)) + " of " + common.Grouped(msg.total) + ")"
	}
	return m.setFlash(flashInfo, text)
}

// targets returns the marked rows of the pane, or else the selected one.
func (m *model) targets(p *pane) []mark {
	if len(p.marks) > 0 {
		out := slices.Collect(maps.Values(p.marks))
		slices.SortFunc(out, func(a, b mark) int { return strings.Compare(a.label, b.label) })
		return out
	}
	d := views[p.view]
	i := p.cursor - p.page.Offset
	if p.selID == "" || d.mark == nil || i < 0 || i >= d.len(&p.page) {
		return nil
	}
	return []mark{d.mark(&p.page, i)}
}

// actionNames says what each key's action is called, for refusals.
var actionNames = map[admin.ActionKind]string{
	admin.ActEvict: "evict (E)", admin.ActDrain: "drain (D)", admin.ActRequeue: "requeue (R)", admin.ActPause: "pause (P)",
}

// refused says why an action key did nothing: read-only, or not a view
// it works in. A nil answer means the action may go on.
func (m *model) refused(kind admin.ActionKind) tea.Cmd {
	if m.opts.ReadOnly {
		return m.setFlash(flashWarn, "read-only console: "+actionNames[kind]+" is disabled")
	}
	return nil
}

// refuseAction answers an action key pressed in a view it does not work in.
func (m *model) refuseAction(kind admin.ActionKind) tea.Cmd {
	if cmd := m.refused(kind); cmd != nil {
		return cmd
	}
	if kind == admin.ActRequeue {
		return m.setFlash(flashInfo, "requeue (R) works on jobs: press 2 for Jobs or 4 for Retries")
	}
	return m.setFlash(flashInfo, actionNames[kind]+" works on workers: press 1 for the Workers view")
}

// workerTargets are the marked workers, or the selected one, for an
// action of kind; ok false when there are none or the action is refused,
// and cmd says so.
func (m *model) workerTargets(kind admin.ActionKind) (ts []mark, ids, labels []string, cmd tea.Cmd, ok bool) {
	if cmd := m.refused(kind); cmd != nil {
		return nil, nil, nil, cmd, false
	}
	ts = m.targets(m.pane())
	if len(ts) == 0 {
		return nil, nil, nil, m.setFlash(flashInfo, "no worker selected"), false
	}
	ids, labels = split(ts)
	return ts, ids, labels, nil, true
}

// startEvict asks to evict the marked workers, or the selected one.
func (m *model) startEvict() tea.Cmd {
	ts, ids, labels, cmd, ok := m.workerTargets(admin.ActEvict)
	if !ok {
		return cmd
	}
	return m.openDialog(admin.Action{Kind: admin.ActEvict, Targets: ids}, "Evict "+plural(len(ts), "worker")+"?", labels,
		"Their jobs go back to the queue, not charged a failure.", "Evict")
}

// startDrain asks to drain the marked workers, or the selected one; to
// undrain them when all are draining already.
func (m *model) startDrain() tea.Cmd {
	ts, ids, labels, cmd, ok := m.workerTargets(admin.ActDrain)
	if !ok {
		return cmd
	}
	n := plural(len(ts), "worker")
	allDraining := true
	for _, t := range ts {
		allDraining = allDraining && t.state == "draining"
	}
	if allDraining {
		return m.openDialog(admin.Action{Kind: admin.ActUndrain, Targets: ids}, "Undrain "+n+"?", labels,
			"They take new jobs again.", "Undrain")
	}
	return m.openDialog(admin.Action{Kind: admin.ActDrain, Targets: ids}, "Drain "+n+"?", labels,
		"They get no new jobs and leave when their jobs finish.", "Drain")
}

// startPause asks to pause dispatch, or to resume it.
func (m *model) startPause() tea.Cmd {
	if cmd := m.refused(admin.ActPause); cmd != nil {
		return cmd
	}
	if m.coord.totals.Paused {
		return m.openDialog(admin.Action{Kind: admin.ActResume}, "Resume dispatch?",
			[]string{common.Grouped(m.coord.totals.Queued) + " queued jobs become eligible"},
			"Workers get jobs again.", "Resume")
	}
	return m.openDialog(admin.Action{Kind: admin.ActPause}, "Pause dispatch?",
		[]string{common.Grouped(m.coord.totals.Queued) + " queued jobs wait",
			common.Grouped(m.coord.totals.Dispatched) + " dispatched jobs run to the end"},
		"Nothing new is dispatched until you resume (P).", "Pause")
}

// startRequeue requeues the marked jobs, or the selected one; in Retries
// with nothing marked it requeues every failed job.
func (m *model) startRequeue() tea.Cmd {
	if cmd := m.refused(admin.ActRequeue); cmd != nil {
		return cmd
	}
	p := m.pane()
	note := "Back to the queue now; attempt and failure counts are kept."
	if p.view == admin.ViewRetries && len(p.marks) == 0 {
		n := m.coord.totals.Failed
		if n == 0 {
			return m.setFlash(flashInfo, "no failed jobs to requeue")
		}
		var items []string
		for i := range p.page.Jobs {
			if j := &p.page.Jobs[i]; j.State == "failed" {
				items = append(items, j.URL)
			}
		}
		if more := n - len(items); more > 0 && len(items) > 0 {
			items = append(items, "and "+plural(more, "more failed job"))
		}
		return m.openDialog(admin.Action{Kind: admin.ActRequeueFailed}, "Requeue all "+plural(n, "failed job")+"?",
			items, note, "Requeue all")
	}
	ts := m.targets(p)
	if len(ts) == 0 {
		return m.setFlash(flashInfo, "no job selected")
	}
	var ids, labels, skipped []string
	for _, t := range ts {
		if t.target == "" {
			skipped = append(skipped, t.label)
			continue
		}
		ids = append(ids, t.target)
		labels = append(labels, t.label)
	}
	if len(ids) == 0 {
		return m.setFlash(flashInfo, "nothing to requeue: a requested key has no job yet")
	}
	if len(skipped) > 0 {
		note = plural(len(skipped), "requested key") + " without a job skipped. " + note
	}
	return m.openDialog(admin.Action{Kind: admin.ActRequeue, Targets: ids}, "Requeue "+plural(len(ids), "job")+"?",
		labels, note, "Requeue")
}

func split(ts []mark) (targets, labels []string) {
	for _, t := range ts {
		targets = append(targets, t.target)
		labels = append(labels, t.label)
	}
	return targets, labels
}

// openDialog opens the confirmation for an action; Cancel has the focus.
func (m *model) openDialog(a admin.Action, title string, items []string, note, confirm string) tea.Cmd {
	m.pending = &a
	c := m.Common.SetSize(m.Width, m.bodyHeight())
	m.dialog = dialog.New(c, string(a.Kind), title, items, note, confirm)
	m.mode = modeDialog
	return nil
}

// dialogClosed runs the confirmed action, or says nothing was done.
func (m *model) dialogClosed(msg dialog.ClosedMsg) tea.Cmd {
	m.mode = modeNormal
	if msg.ID == quitDialog {
		if msg.Confirmed {
			return m.quitNow()
		}
		return nil
	}
	a := m.pending
	m.pending = nil
	if a == nil || string(a.Kind) != msg.ID {
		return nil
	}
	if !msg.Confirmed {
		return m.setFlash(flashInfo, "cancelled: nothing was done")
	}
	action, view := *a, m.view
	b, parent, timeout := m.b, m.ctx, m.opts.Timeout
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, timeout)
		defer cancel()
		res, err := b.Act(ctx, action)
		return actDoneMsg{action: action, view: view, result: res, err: err}
	}
}

// pastTense names what an action did.
var pastTense = map[admin.ActionKind]string{
	admin.ActEvict: "evicted", admin.ActDrain: "draining", admin.ActUndrain: "undrained",
	admin.ActRequeue: "requeued", admin.ActRequeueFailed: "requeued", admin.ActPause: "paused dispatch",
	admin.ActResume: "resumed dispatch",
}

// applyAct reports an action's outcome and refreshes at once.
func (m *model) applyAct(msg actDoneMsg) tea.Cmd {
	if msg.err != nil {
		return tea.Batch(m.requestRefresh(true), m.setFlash(flashError, string(msg.action.Kind)+" failed: "+msg.err.Error()))
	}
	p := m.panes[msg.view]
	p.quiet = true
	for _, t := range msg.action.Targets {
		for id, mk := range p.marks {
			if mk.target == t {
				delete(p.marks, id)
			}
		}
	}
	r := msg.result
	var text string
	switch msg.action.Kind {
	case admin.ActPause, admin.ActResume:
		text = pastTense[msg.action.Kind]
	case admin.ActEvict, admin.ActDrain, admin.ActUndrain:
		text = pastTense[msg.action.Kind] + " " + plural(r.Affected, "worker")
	default:
		text = pastTense[msg.action.Kind] + " " + plural(r.Affected, "job")
	}
	level := flashInfo
	if len(r.Errors) > 0 {
		level = flashWarn
		text += "; refused: " + r.Errors[0]
		if len(r.Errors) > 1 {
			text += fmt.Sprintf(" (and %d more)", len(r.Errors)-1)
		}
	}
	return tea.Batch(m.requestRefresh(true), m.setFlash(level, text))
}

// workInFlight reports whether quitting an embedded coordinator would stop
// unfinished work; unknown (no totals yet) counts as yes.
func (m *model) workInFlight() bool {
	t := m.coord.totals
	return !m.coord.haveTotals || t.Queued+t.Dispatched+t.Backoff+t.KeysRequested > 0
}

// quit leaves, after a confirmation when the coordinator is embedded and
// work is in flight.
func (m *model) quit() tea.Cmd {
	if !m.opts.Embedded || !m.workInFlight() {
		return m.quitNow()
	}
	t := m.coord.totals
	var items []string
	if !m.coord.haveTotals {
		items = append(items, "the coordinator has not answered yet")
	}
	for _, it := range []struct {
		n    int
		what string
	}{{t.Queued, "queued"}, {t.Dispatched, "dispatched"}, {t.Backoff, "in back-off"}, {t.KeysRequested, "keys requested"}} {
		if it.n > 0 {
			items = append(items, common.Grouped(it.n)+" "+it.what)
		}
	}
	m.pending = nil
	c := m.Common.SetSize(m.Width, m.bodyHeight())
	m.dialog = dialog.New(c, quitDialog, "Quit and stop the coordinator?", items,
		"It runs in this process: quitting stops it with this work unfinished (ctrl+c again quits).", "Quit")
	m.mode = modeDialog
	return nil
}

func (m *model) quitNow() tea.Cmd {
	m.quitting = true
	m.mode = modeNormal
	m.cancel()
	return tea.Quit
}

// itoa is strconv.Itoa, short for the renderers.
func itoa(n int) string { return strconv.Itoa(n) }
