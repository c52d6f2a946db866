package tui

import (
	"strconv"
	"time"

	"charm.land/bubbles/v2/key"

	"drover/admin"
	"drover/tui/common"
	"drover/tui/table"
)

// jobsView is the Jobs view: every requested key and its job.
var jobsView = &viewDesc{
	view: admin.ViewJobs, title: "Jobs", noun: "job",
	keys: jobKeys,
	hints: func(k *keyMap) []key.Binding {
		return []key.Binding{withDesc(k.Detail, "attempts"), withDesc(k.Waiters, "waiters"), withDesc(k.Requeue, "requeue"),
			withDesc(k.Mark, "mark"), withDesc(k.Filter, "filter"), withDesc(k.Sort, "sort"), withDesc(k.Pause, "pause"), moveHint}
	},
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
	len: jobsLen, id: jobID, mark: jobMark, label: jobLabel,
	row: jobRow(8, func(j *admin.JobRow, now time.Time) []string {
		return []string{
			j.URL, common.StateLabel(j.State), j.Owner,
			strconv.Itoa(j.Waiters), strconv.Itoa(j.Attempts), strconv.Itoa(j.Failures),
			common.Until(now, j.RetryAt), dash(j.Worker), errOrReason(j),
			common.Since(now, j.Created),
		}
	}),
}

// retriesView is the Retries view: jobs in back-off or failed, and the
// hosts backing off below them.
var retriesView = &viewDesc{
	view: admin.ViewRetries, title: "Retries", noun: "job",
	keys: jobKeys,
	hints: func(k *keyMap) []key.Binding {
		return []key.Binding{withDesc(k.Requeue, "requeue (all failed if none marked)"), withDesc(k.Mark, "mark"),
			withDesc(k.Detail, "attempts"), withDesc(k.Filter, "filter"), withDesc(k.Sort, "sort"), withDesc(k.Pause, "pause"), moveHint}
	},
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
	len: jobsLen, id: jobID, mark: jobMark, label: jobLabel,
	row: jobRow(3, func(j *admin.JobRow, now time.Time) []string {
		return []string{
			j.URL, common.StateLabel(j.State), common.Until(now, j.RetryAt), errOrReason(j),
			strconv.Itoa(j.Attempts), strconv.Itoa(j.Failures), strconv.Itoa(j.Throttles), dash(j.Worker),
		}
	}),
}

// The rows of the views that list jobs (Jobs and Retries): the page's
// jobs, by key, labelled by URL.
func jobsLen(p *admin.Page) int            { return len(p.Jobs) }
func jobID(p *admin.Page, i int) string    { return p.Jobs[i].Key }
func jobLabel(p *admin.Page, i int) string { return p.Jobs[i].URL }

// jobRow makes a job's table row of the cells cells gives, its state in
// the second column, coloured by its state, and its reason in column
// waitCol, coloured by why it waits.
func jobRow(waitCol int, cells func(j *admin.JobRow, now time.Time) []string) func(*admin.Page, int, time.Time) table.Row {
	return func(p *admin.Page, i int, now time.Time) table.Row {
		j := &p.Jobs[i]
		return table.Row{ID: j.Key, StateCol: 1, State: j.State, WaitCol: waitCol, Wait: j.Wait, Cells: cells(j, now)}
	}
}

// jobKeys is the keymap of the views that list jobs (Jobs and Retries).
func jobKeys(k *keyMap) keymap {
	return keymap{
		{key: k.Detail, group: groupFind, run: (*model).toggleDetail},
		{key: k.Mark, group: groupSelect, run: (*model).toggleMark},
		{key: k.MarkAll, group: groupSelect, run: (*model).markAll},
		{key: k.Requeue, group: groupAct, run: (*model).startRequeue},
	}
}

func jobMark(p *admin.Page, i int) mark {
	j := &p.Jobs[i]
	target := ""
	switch {
	case j.JobID != 0:
		target = strconv.FormatUint(j.JobID, 10)
	case j.State != "requested":
		// A job another coordinator on the cluster holds, or in the
		// cluster's queue: named by its key; the coordinator answers
		// where it is.
		target = j.Key
	}
	return mark{label: j.URL + " (" + j.State + ")", target: target, state: j.State}
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
