package tui

import (
	"charm.land/bubbles/v2/key"

	"time"

	"drover/admin"
	"drover/tui/table"
)

// viewOrder is the order of the views on the tab bar and keys 1-6.
var viewOrder = []admin.View{admin.ViewWorkers, admin.ViewJobs, admin.ViewWaiters, admin.ViewRetries, admin.ViewEvents, admin.ViewCrawls}

// mark is what the console remembers of a marked row: enough to list it in
// a dialog and to name it in an action, without the row being loaded.
type mark struct {
	label  string // for the dialog: "w-1 (host-a, busy, 2 jobs)"
	target string // for admin.Action.Targets: worker id or decimal job id; empty if the row cannot be acted on
	state  string // the row's state when marked (drain or undrain)
}

// viewDesc describes one view: its columns and how rows of a page become
// table rows, identities and marks.
type viewDesc struct {
	view    admin.View
	title   string
	noun    string // "worker", "job", ...
	columns []table.Column
	// keys is the view's own keymap: the row keys it answers (detail,
	// marks, actions). Keys it lacks are answered by the table's and the
	// console's keymaps, or refused with a flash (component.go).
	keys func(k *keyMap) keymap
	// hints are the view's keys on the hint line, most useful first.
	hints func(k *keyMap) []key.Binding
	// noDetail is the flash for enter in a view without a detail pane.
	noDetail string
	// len returns the number of rows of the page in this view.
	len func(p *admin.Page) int
	// id returns the identity of row i.
	id func(p *admin.Page, i int) string
	// row renders row i.
	row func(p *admin.Page, i int, now time.Time) table.Row
	// paneRow, when set, renders row i instead of row, from figures the
	// console keeps beside the page (the host back-offs holding each crawl's jobs).
	paneRow func(p *pane, i int, now time.Time) table.Row
	// mark describes row i for marks and dialogs.
	mark func(p *admin.Page, i int) mark
	// label names row i in flash messages.
	label func(p *admin.Page, i int) string
}

// views are the console's view components by view. Filled by init: the
// components' keymaps name model methods that read views.
var views map[admin.View]*viewDesc

func init() {
	views = map[admin.View]*viewDesc{
		admin.ViewWorkers: workersView,
		admin.ViewJobs:    jobsView,
		admin.ViewWaiters: waitersView,
		admin.ViewRetries: retriesView,
		admin.ViewEvents:  eventsView,
		admin.ViewCrawls:  crawlsView,
	}
}

// sortable returns the sort names of a view's sortable columns, in order.
func (d *viewDesc) sortable() []string {
	var out []string
	for _, c := range d.columns {
		if c.Sort != "" {
			out = append(out, c.Sort)
		}
	}
	return out
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// clockTime renders a time of day in UTC, or "-" for the zero time.
func clockTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("15:04:05")
}
