package tui

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"drover/admin"
	"drover/tui/common"
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
	// markable views accept space and *.
	markable bool
	// len returns the number of rows of the page in this view.
	len func(p *admin.Page) int
	// id returns the identity of row i.
	id func(p *admin.Page, i int) string
	// row renders row i.
	row func(p *admin.Page, i int, now time.Time) table.Row
	// paneRow, when set, renders row i instead of row, from figures the
	// console keeps beside the page (the crawls' job counts and rates).
	paneRow func(p *pane, i int, now time.Time) table.Row
	// mark describes row i for marks and dialogs.
	mark func(p *admin.Page, i int) mark
	// label names row i in flash messages.
	label func(p *admin.Page, i int) string
}

var views = map[admin.View]*viewDesc{
	admin.ViewWorkers: {
		view: admin.ViewWorkers, title: "Workers", noun: "worker", markable: true,
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
	},
	admin.ViewJobs: {
		view: admin.ViewJobs, title: "Jobs", noun: "job", markable: true,
		columns: []table.Column{
			{Title: "URL", Sort: "url", Min: 24, Flex: 6},
			{Title: "STATE", Sort: "state", Min: 12},
			{Title: "OWNER", Min: 6, Max: 12, Flex: 1, Priority: 6},
			{Title: "WAIT", Min: 4, Align: table.Right, Priority: 2},
			{Title: "ATT", Sort: "attempts", Min: 3, Align: table.Right, Priority: 4},
			{Title: "FAIL", Sort: "failures", Min: 4, Align: table.Right, Priority: 4},
			{Title: "RETRY", Sort: "retry_at", Min: 8, Priority: 5},
			{Title: "WORKER", Sort: "worker", Min: 6, Max: 16, Flex: 1, Priority: 2},
			{Title: "ERROR / REASON", Min: 10, Flex: 4, Priority: 3},
			{Title: "AGE", Sort: "age", Min: 6, Align: table.Right, Priority: 1},
		},
		len: func(p *admin.Page) int { return len(p.Jobs) },
		id:  func(p *admin.Page, i int) string { return p.Jobs[i].Key },
		row: func(p *admin.Page, i int, now time.Time) table.Row {
			j := &p.Jobs[i]
			return table.Row{
				ID: j.Key, StateCol: 1, State: j.State,
				Cells: []string{
					j.URL, common.StateLabel(j.State), j.Owner,
					strconv.Itoa(j.Waiters), strconv.Itoa(j.Attempts), strconv.Itoa(j.Failures),
					common.Until(now, j.RetryAt), dash(j.Worker), errOrReason(j),
					common.Since(now, j.Created),
				},
			}
		},
		mark:  jobMark,
		label: func(p *admin.Page, i int) string { return p.Jobs[i].URL },
	},
	admin.ViewWaiters: {
		view: admin.ViewWaiters, title: "Waiters", noun: "waiting session",
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
	},
	admin.ViewRetries: {
		view: admin.ViewRetries, title: "Retries", noun: "job", markable: true,
		columns: []table.Column{
			{Title: "URL", Sort: "url", Min: 20, Flex: 5},
			{Title: "STATE", Sort: "state", Min: 10},
			{Title: "NEXT", Sort: "retry_at", Min: 8},
			{Title: "REASON / ERROR", Min: 10, Flex: 3, Priority: 1},
			{Title: "ATT", Sort: "attempts", Min: 3, Align: table.Right, Priority: 2},
			{Title: "FAIL", Sort: "failures", Min: 4, Align: table.Right, Priority: 2},
			{Title: "THR", Sort: "throttles", Min: 3, Align: table.Right, Priority: 3},
			{Title: "WORKER", Sort: "worker", Min: 6, Max: 16, Flex: 1, Priority: 4},
		},
		len: func(p *admin.Page) int { return len(p.Jobs) },
		id:  func(p *admin.Page, i int) string { return p.Jobs[i].Key },
		row: func(p *admin.Page, i int, now time.Time) table.Row {
			j := &p.Jobs[i]
			return table.Row{
				ID: j.Key, StateCol: 1, State: j.State,
				Cells: []string{
					j.URL, common.StateLabel(j.State), common.Until(now, j.RetryAt), errOrReason(j),
					strconv.Itoa(j.Attempts), strconv.Itoa(j.Failures), strconv.Itoa(j.Throttles), dash(j.Worker),
				},
			}
		},
		mark:  jobMark,
		label: func(p *admin.Page, i int) string { return p.Jobs[i].URL },
	},
	admin.ViewEvents: {
		view: admin.ViewEvents, title: "Events", noun: "event",
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
	},
	admin.ViewCrawls: crawlsView,
}

func jobMark(p *admin.Page, i int) mark {
	j := &p.Jobs[i]
	target := ""
	if j.JobID != 0 {
		target = strconv.FormatUint(j.JobID, 10)
	}
	return mark{label: j.URL + " (" + j.State + ")", target: target, state: j.State}
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

func errOrReason(j *admin.JobRow) string {
	switch {
	case j.LastError != "" && j.Reason != "":
		return j.Reason + ": " + j.LastError
	case j.LastError != "":
		return j.LastError
	default:
		return dash(j.Reason)
	}
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

// clockTime renders a time of day in UTC, or "-" for the zero time.
func clockTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("15:04:05")
}
