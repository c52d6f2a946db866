package tui

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"

	"drover/admin"
	"drover/tui/common"
	"drover/tui/table"
)

// workersView is the Workers view: the workers connected, their slots,
// jobs and headers; evict and drain act on them.
var workersView = &viewDesc{
	view: admin.ViewWorkers, title: "Workers", noun: "worker",
	keys: func(k *keyMap) keymap {
		return keymap{
			{key: k.Detail, group: groupFind, run: (*model).toggleDetail},
			{key: k.Mark, group: groupSelect, run: (*model).toggleMark},
			{key: k.MarkAll, group: groupSelect, run: (*model).markAll},
			{key: k.Evict, group: groupAct, run: (*model).startEvict},
			{key: k.Drain, group: groupAct, run: (*model).startDrain},
		}
	},
	hints: func(k *keyMap) []key.Binding {
		return []key.Binding{withDesc(k.Evict, "evict"), withDesc(k.Drain, "drain"), withDesc(k.Mark, "mark"),
			withDesc(k.Detail, "detail"), withDesc(k.Filter, "filter"), withDesc(k.Sort, "sort"), withDesc(k.Pause, "pause"), moveHint}
	},
	columns: []table.Column{
		{Title: "ID", Sort: "id", Min: 8, Max: 24, Flex: 2},
		{Title: "HOST", Sort: "host", Min: 8, Max: 24, Flex: 2, Priority: 2},
		{Title: "STATE", Sort: "state", Min: 10},
		{Title: "SLOTS", Sort: "used", Min: 5, Align: table.Right, Priority: 1},
		{Title: "JOBS", Min: 6, Max: 30, Flex: 1, Priority: 4},
		{Title: "DONE", Sort: "done", Min: 6, Align: table.Right, Priority: 3},
		{Title: "FAIL", Sort: "failures", Min: 4, Align: table.Right, Priority: 3},
		{Title: "HB", Sort: "last_heartbeat", Min: 6, Align: table.Right, Priority: 1},
		{Title: "UP", Sort: "since", Min: 6, Align: table.Right, Priority: 4},
		{Title: "HEADERS", Min: 10, Flex: 3, Priority: 5},
	},
	len: func(p *admin.Page) int { return len(p.Workers) },
	id:  func(p *admin.Page, i int) string { return p.Workers[i].ID },
	row: func(p *admin.Page, i int, now time.Time) table.Row {
		w := &p.Workers[i]
		state := common.StateLabel(w.State)
		if !w.HeldUntil.IsZero() {
			state += " " + common.Until(now, w.HeldUntil) // held back after early deaths
		}
		return table.Row{
			ID: w.ID, StateCol: 2, State: w.State,
			Cells: []string{
				w.ID, w.Host, state,
				strconv.Itoa(w.Used) + "/" + strconv.Itoa(w.Slots),
				jobList(w.Jobs),
				common.Compact(w.Done), common.Compact(w.Failures),
				common.Since(now, w.LastHeartbeat), common.Since(now, w.Since),
				headerList(w.Headers),
			},
		}
	},
	mark: func(p *admin.Page, i int) mark {
		w := &p.Workers[i]
		return mark{
			label:  w.ID + " (" + w.Host + ", " + w.State + ", " + strconv.Itoa(len(w.Jobs)) + " jobs)",
			target: w.ID, state: w.State,
		}
	},
	label: func(p *admin.Page, i int) string { return p.Workers[i].ID },
}

func jobList(ids []uint64) string {
	if len(ids) == 0 {
		return "-"
	}
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(id, 10))
	}
	return b.String()
}

// headerList renders headers as sorted k=v pairs.
func headerList(h map[string]string) string {
	if len(h) == 0 {
		return "-"
	}
	keys := slices.Sorted(maps.Keys(h))
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(h[k])
	}
	return b.String()
}
