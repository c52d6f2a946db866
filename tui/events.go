package tui

import (
	"strconv"
	"time"

	"charm.land/bubbles/v2/key"

	"drover/admin"
	"drover/tui/table"
)

// eventsView is the Events view: the coordinator's event log, newest first.
var eventsView = &viewDesc{
	view: admin.ViewEvents, title: "Events", noun: "event",
	keys: func(k *keyMap) keymap {
		return keymap{{key: k.Detail, group: groupFind, run: (*model).toggleDetail}}
	},
	hints: func(k *keyMap) []key.Binding {
		return []key.Binding{withDesc(k.Detail, "detail"), withDesc(k.Filter, "filter"), withDesc(k.Top, "newest"),
			withDesc(k.Pause, "pause"), moveHint}
	},
	columns: []table.Column{
		{Title: "SEQ", Sort: "seq", Min: 6, Align: table.Right, Priority: 2},
		{Title: "TIME", Min: 8},
		{Title: "KIND", Min: 14, Max: 20, Flex: 1},
		{Title: "JOB", Min: 6, Align: table.Right, Priority: 3},
		{Title: "WORKER", Min: 6, Max: 16, Flex: 1, Priority: 2},
		{Title: "URL / KEY", Min: 16, Flex: 4, Priority: 1},
		{Title: "DETAIL", Min: 10, Flex: 3, Priority: 1},
	},
	len: func(p *admin.Page) int { return len(p.Events) },
	id:  func(p *admin.Page, i int) string { return strconv.FormatUint(p.Events[i].Seq, 10) },
	row: func(p *admin.Page, i int, now time.Time) table.Row {
		e := &p.Events[i]
		job := "-"
		if e.JobID != 0 {
			job = strconv.FormatUint(e.JobID, 10)
		}
		subject := e.URL
		if subject == "" {
			subject = e.Key
		}
		return table.Row{
			ID: strconv.FormatUint(e.Seq, 10), StateCol: 2, State: eventState(e.Kind),
			Cells: []string{
				strconv.FormatUint(e.Seq, 10), clockTime(e.At), string(e.Kind), job, dash(e.Worker), dash(subject), dash(e.Detail),
			},
		}
	},
	label: func(p *admin.Page, i int) string { return "event " + strconv.FormatUint(p.Events[i].Seq, 10) },
}

// eventStates colours the kinds drover emits by a state word; kinds not
// listed (neutral ones, or a newer server's) are shown uncoloured. A test
// checks that every kind listed is one admin.EventKinds names.
var eventStates = map[admin.EventKind]string{
	admin.EventJobDone:          "done",
	admin.EventWorkerRegistered: "done",
	admin.EventHostResumed:      "done",
	admin.EventBrokerResumed:    "done",
	admin.EventKeyDone:          "done",
	admin.EventJobFailed:        "failed",
	admin.EventJobOrphanResult:  "failed",
	admin.EventWorkerLost:       "failed",
	admin.EventWorkerEvicted:    "failed",
	admin.EventJobThrottled:     "backoff",
	admin.EventJobBackoff:       "backoff",
	admin.EventHostBackoff:      "backoff",
	admin.EventBrokerPaused:     "backoff",
	admin.EventWorkerDraining:   "backoff",
	admin.EventJobDispatched:    "dispatched",
}

// eventState maps an event kind to a state word for its colour: the kind
// itself is always shown.
func eventState(kind admin.EventKind) string { return eventStates[kind] }
