package tui

import (
	"strconv"
	"time"

	"charm.land/bubbles/v2/key"

	"drover/admin"
	"drover/tui/common"
	"drover/tui/table"
)

// waitersView is the Waiters view: the sessions waiting on the key last
// selected in Jobs or Retries.
var waitersView = &viewDesc{
	view: admin.ViewWaiters, title: "Waiters", noun: "waiting session",
	noDetail: "waiters have no detail; the key's detail is in Jobs (2)",
	keys:     func(*keyMap) keymap { return nil },
	hints: func(k *keyMap) []key.Binding {
		return []key.Binding{withDesc(k.Jobs, "pick a key in jobs"), withDesc(k.Sort, "sort"), withDesc(k.Pause, "pause"), moveHint}
	},
	columns: []table.Column{
		{Title: "POS", Sort: "position", Min: 4, Align: table.Right},
		{Title: "SESSION", Sort: "session", Min: 10, Flex: 2},
		{Title: "WAITING", Sort: "since", Min: 8, Align: table.Right},
		{Title: "SINCE", Min: 8, Priority: 1},
	},
	len: func(p *admin.Page) int { return len(p.Waiters) },
	id:  func(p *admin.Page, i int) string { return p.Waiters[i].Session },
	row: func(p *admin.Page, i int, now time.Time) table.Row {
		w := &p.Waiters[i]
		return table.Row{
			ID: w.Session, StateCol: -1,
			Cells: []string{strconv.Itoa(w.Position), w.Session, common.Since(now, w.Since), clockTime(w.Since)},
		}
	},
	label: func(p *admin.Page, i int) string { return "session " + p.Waiters[i].Session },
}
