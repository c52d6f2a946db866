package tui

import (
	"context"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"drover/admin"
	"drover/tui/common"
)

// detailJobsLimit caps the jobs listed in a worker's detail pane.
const detailJobsLimit = 50

// detailState is the open detail pane: the selected row's full record,
// fetched with each refresh (a job's attempts, a worker's headers and jobs).
type detailState struct {
	view      admin.View
	id        string
	label     string
	loaded    bool
	err       string
	job       *admin.JobRow
	worker    *admin.WorkerRow
	jobs      []admin.JobRow
	jobsTotal int
}

// detailData is what one round fetched for the pane.
type detailData struct {
	view      admin.View
	id        string
	err       string
	job       *admin.JobRow
	worker    *admin.WorkerRow
	jobs      []admin.JobRow
	jobsTotal int
}

// detailReq names the row whose detail a round must fetch.
type detailReq struct {
	view admin.View
	id   string
}

func (d *detailState) apply(x *detailData) {
	d.loaded, d.err = true, x.err
	d.job, d.worker, d.jobs, d.jobsTotal = x.job, x.worker, x.jobs, x.jobsTotal
}

// detailRequest is the detail the next round must fetch, or nil.
func (m *model) detailRequest() *detailReq {
	if m.detail == nil || m.detail.view == admin.ViewEvents || m.detail.id == "" {
		return nil
	}
	return &detailReq{view: m.detail.view, id: m.detail.id}
}

// fetchDetail runs the detail queries: a job by key (with its history), or
// a worker by id and the jobs it holds. Errors stay in the pane; they do
// not make the console STALE.
func fetchDetail(ctx context.Context, b Backend, r detailReq) *detailData {
	d := &detailData{view: r.view, id: r.id}
	switch r.view {
	case admin.ViewWorkers:
		page, err := b.Query(ctx, admin.Query{View: admin.ViewWorkers, Filter: "worker=" + r.id, Limit: 1})
		d.worker = find(page.Workers, func(w *admin.WorkerRow) bool { return w.ID == r.id })
		if err != nil || d.worker == nil {
			d.err = notFound("worker "+r.id, err)
			return d
		}
		jobs, err := b.Query(ctx, admin.Query{View: admin.ViewJobs, Filter: "worker=" + r.id, Limit: detailJobsLimit})
		if err != nil {
			d.err = "jobs of worker " + r.id + ": " + err.Error()
			return d
		}
		d.jobs, d.jobsTotal = jobs.Jobs, jobs.Total
	default:
		page, err := b.Query(ctx, admin.Query{View: admin.ViewJobs, Key: r.id, Limit: 1})
		d.job = find(page.Jobs, func(j *admin.JobRow) bool { return j.Key == r.id })
		if err != nil || d.job == nil {
			d.err = notFound("key "+r.id, err)
		}
	}
	return d
}

// find is the first row of rows that is, nil for none.
func find[T any](rows []T, is func(*T) bool) *T {
	for i := range rows {
		if is(&rows[i]) {
			return &rows[i]
		}
	}
	return nil
}

// notFound says why what's detail is missing: the query's error, or its
// row is gone.
func notFound(what string, err error) string {
	if err != nil {
		return what + ": " + err.Error()
	}
	return what + " is gone"
}

// toggleDetail opens the selected row's detail pane, or closes it.
func (m *model) toggleDetail() tea.Cmd {
	if m.detail != nil {
		m.detail = nil
		m.clampAll()
		return nil
	}
	p := m.pane()
	if p.selID == "" {
		return m.setFlash(flashInfo, "no row selected")
	}
	m.detail = &detailState{view: p.view, id: p.selID, label: p.selLabel}
	m.clampAll()
	if p.view == admin.ViewEvents {
		return nil
	}
	return m.requestRefresh(true)
}

// retargetDetail points an open detail pane at the new selection.
func (m *model) retargetDetail(p *pane) tea.Cmd {
	d := m.detail
	if d == nil || d.view != p.view || p.selID == "" || d.id == p.selID {
		return nil
	}
	m.detail = &detailState{view: p.view, id: p.selID, label: p.selLabel}
	if p.view == admin.ViewEvents {
		return nil
	}
	return m.requestRefresh(true)
}

// c cleans text from the coordinator before it is shown.
var c = common.Sanitize

// detailLines renders the pane's content in at most h lines, unstyled
// except for state words. Lists that do not fit keep their newest entries
// (attempts) or their first ones (a worker's jobs) and say how many more.
func (m *model) detailLines(h int) []string {
	d := m.detail
	now := m.Now()
	switch {
	case d.view == admin.ViewEvents:
		return m.eventDetail()
	case !d.loaded:
		return []string{"loading " + c(d.label) + "…"}
	case d.err != "":
		return []string{m.Styles.Error.Render(c(d.err))}
	case d.worker != nil:
		w := d.worker
		lines := []string{
			"worker " + c(w.ID) + " · " + c(w.Host) + " · " + m.Styles.State(w.State).Render(common.StateLabel(w.State)) +
				" · slots " + strconv.Itoa(w.Used) + "/" + strconv.Itoa(w.Slots) +
				" · done " + common.Compact(w.Done) + " · failures " + common.Compact(w.Failures) +
				" · heartbeat " + common.Since(now, w.LastHeartbeat) + " ago · up " + common.Since(now, w.Since),
			"headers: " + c(headerList(w.Headers)),
			"jobs held (" + strconv.Itoa(d.jobsTotal) + "):",
		}
		if len(d.jobs) == 0 {
			lines = append(lines, "  none")
		}
		jobs := d.jobs
		if room := h - len(lines); len(jobs) > room {
			jobs = jobs[:max(room-1, 0)]
		}
		for i := range jobs {
			j := &jobs[i]
			lines = append(lines, "  "+strconv.FormatUint(j.JobID, 10)+"  "+
				m.Styles.State(j.State).Render(common.StateLabel(j.State))+"  "+common.Since(now, j.Updated)+"  "+c(j.URL))
		}
		if more := d.jobsTotal - len(jobs); more > 0 {
			lines = append(lines, "  … and "+strconv.Itoa(more)+" more (filter worker="+c(w.ID)+" in Jobs)")
		}
		return lines
	case d.job != nil:
		j := d.job
		id := "key"
		if j.JobID != 0 {
			id = "job " + strconv.FormatUint(j.JobID, 10)
		}
		lines := []string{
			id + " · " + c(j.URL) + " · " + c(j.Crawler) + "/" + c(j.Processor),
			m.Styles.State(j.State).Render(common.StateLabel(j.State)) +
				" · attempts " + strconv.Itoa(j.Attempts) + " · failures " + strconv.Itoa(j.Failures) +
				" · throttles " + strconv.Itoa(j.Throttles) + " · waiters " + strconv.Itoa(j.Waiters) +
				" · retry " + common.Until(now, j.RetryAt) + " · age " + common.Since(now, j.Created),
			"key " + c(j.Key) + "  owner " + c(dash(j.Owner)) + "  worker " + c(dash(j.Worker)),
		}
		if reason := c(j.Reason); reason != "" {
			if j.Wait != "" {
				reason = m.Styles.Wait(j.Wait).Render(reason)
			}
			lines = append(lines, "waiting: "+reason)
		}
		if j.LastError != "" {
			lines = append(lines, "last error: "+c(j.LastError))
		}
		lines = append(lines, "attempts:")
		if len(j.History) == 0 {
			lines = append(lines, "  none yet")
		}
		first := 0
		if room := h - len(lines); len(j.History) > room {
			first = len(j.History) - max(room-1, 0)
			lines = append(lines, "  … "+plural(first, "earlier attempt"))
		}
		for i := first; i < len(j.History); i++ {
			a := j.History[i]
			outcome := a.Outcome
			if outcome == "" {
				outcome = "running"
			}
			line := "  #" + strconv.Itoa(i+1) + "  " + clockTime(a.At) + "  " + c(dash(a.Worker)) + "  " +
				m.Styles.State(a.Outcome).Render(c(outcome))
			if a.Error != "" {
				line += "  " + c(a.Error)
			}
			lines = append(lines, line)
		}
		return lines
	}
	return nil
}

func (m *model) eventDetail() []string {
	p := m.panes[admin.ViewEvents]
	for i := range p.page.Events {
		e := &p.page.Events[i]
		if strconv.FormatUint(e.Seq, 10) != m.detail.id {
			continue
		}
		lines := []string{
			"event " + strconv.FormatUint(e.Seq, 10) + " · " + e.At.UTC().Format("2006-01-02 15:04:05.000") + " · " + c(string(e.Kind)),
			"job " + strconv.FormatUint(e.JobID, 10) + "  worker " + c(dash(e.Worker)) + "  key " + c(dash(e.Key)),
			"url " + c(dash(e.URL)),
		}
		// The detail text in full, wrapped to the screen.
		lines = append(lines, strings.Split(ansi.Wordwrap(c(e.Detail), max(m.Width-2, 10), " "), "\n")...)
		return lines
	}
	return []string{c(m.detail.label) + " is no longer in the window"}
}

// renderDetail draws the pane in h lines: a rule with the title, then the
// content, cut to fit.
func (m *model) renderDetail(h int) []string {
	if h <= 0 {
		return nil
	}
	title := " " + views[m.detail.view].noun + " detail · enter or esc closes "
	rule := m.Styles.Border.Render("──" + title + strings.Repeat("─", max(m.Width-2-ansi.StringWidth(title), 0)))
	out := []string{fitLine(rule, m.Width)}
	for _, l := range m.detailLines(h - 1) {
		if len(out) == h {
			break
		}
		out = append(out, fitLine(" "+l, m.Width))
	}
	for len(out) < h {
		out = append(out, strings.Repeat(" ", m.Width))
	}
	return out
}

// fitLine truncates a styled line to w cells with an ellipsis, and pads it.
func fitLine(s string, w int) string {
	sw := ansi.StringWidth(s)
	if sw > w {
		return ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", w-sw)
}
