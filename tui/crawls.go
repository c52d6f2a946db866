package tui

import (
	"charm.land/bubbles/v2/key"

	"context"
	"strconv"
	"strings"
	"time"

	"drover/admin"
	"drover/tui/table"
)

// maxBackoffQueries bounds the queries one refresh of the Crawls view
// makes to find its crawls' hosts among the host back-offs.
const maxBackoffQueries = 64

// crawlBackoff is a host back-off holding jobs of one crawl.
type crawlBackoff struct {
	admin.HostRow
	crawlJobs int // jobs of the crawl it holds back
}

// fetchCrawlBackoffs finds, for each crawl with jobs backing off, the host
// back-offs that hold them: the host back-offs in force (the Retries
// view's Page.Hosts), then per host and crawl the count of the crawl's
// jobs of that host in backoff (the jobs view, host= crawler= state=
// filter, limit 1). A crawl whose name the filter grammar cannot express
// (it holds white space) gets none.
func fetchCrawlBackoffs(ctx context.Context, b Backend, crawls []admin.Crawl, now time.Time) (map[string][]crawlBackoff, error) {
	want := false
	for _, c := range crawls {
		want = want || c.Backoff > 0
	}
	if !want {
		return nil, nil
	}
	r, err := b.Query(ctx, admin.Query{View: admin.ViewRetries, Filter: "state=backoff", Limit: 1})
	if err != nil || len(r.Hosts) == 0 {
		return nil, err
	}
	out := map[string][]crawlBackoff{}
	asked := 0
	for _, c := range crawls {
		if c.Backoff == 0 || strings.ContainsAny(c.Name, " \t\n") {
			continue
		}
		for _, h := range r.Hosts {
			if asked == maxBackoffQueries {
				return out, nil
			}
			if !h.Until.After(now) || strings.ContainsAny(h.Host, " \t\n") {
				continue
			}
			asked++
			p, err := b.Query(ctx, admin.Query{View: admin.ViewJobs, Filter: "state=backoff crawler=" + c.Name + " host=" + h.Host, Limit: 1})
			if err != nil {
				return nil, err
			}
			if p.Total > 0 {
				out[c.Name] = append(out[c.Name], crawlBackoff{HostRow: h, crawlJobs: p.Total})
			}
		}
	}
	return out, nil
}

// crawlsView lists the crawls defined on the coordinator (§13.1) with
// their jobs by state, as the coordinator counts them.
var crawlsView = &viewDesc{
	view: admin.ViewCrawls, title: "Crawls", noun: "crawl",
	noDetail: "crawls have no detail; filter Jobs (2) by crawler=NAME",
	keys:     func(*keyMap) keymap { return nil },
	hints: func(k *keyMap) []key.Binding {
		return []key.Binding{withDesc(k.Filter, "filter"), withDesc(k.Reverse, "reverse"), withDesc(k.Pause, "pause"), moveHint}
	},
	columns: []table.Column{
		{Title: "CRAWL", Sort: "name", Min: 8, Max: 32, Flex: 2},
		{Title: "STATE", Min: 9},
		{Title: "SCOPE", Min: 6, Priority: 3},
		{Title: "DEPTH", Min: 5, Align: table.Right, Priority: 4},
		{Title: "QUEUED", Min: 6, Align: table.Right},
		{Title: "RUNNING", Min: 7, Align: table.Right},
		{Title: "DONE", Min: 6, Align: table.Right},
		{Title: "FAILED", Min: 6, Align: table.Right, Priority: 1},
		{Title: "PAGES/S", Min: 7, Align: table.Right, Priority: 1},
		{Title: "BACK-OFFS", Min: 9, Align: table.Right, Priority: 2},
		{Title: "PAGES", Min: 6, Align: table.Right, Priority: 4},
		{Title: "BUDGET USED/LEFT", Min: 16, Align: table.Right, Priority: 2},
	},
	len: func(p *admin.Page) int { return len(p.Crawls) },
	id:  func(p *admin.Page, i int) string { return p.Crawls[i].Name },
	paneRow: func(p *pane, i int, _ time.Time) table.Row {
		c := &p.page.Crawls[i]
		depth, budget := "-", "-"
		if c.MaxDepth > 0 {
			depth = strconv.Itoa(c.MaxDepth)
		}
		if c.MaxPages > 0 {
			budget = strconv.Itoa(c.Pages) + "/" + strconv.Itoa(max(c.MaxPages-c.Pages, 0))
		}
		backoffs := "-"
		if n := len(p.backoffs[c.Name]); n > 0 || c.Backoff > 0 {
			backoffs = strconv.Itoa(n) + " hosts"
			if n == 1 {
				backoffs = "1 host"
			}
		}
		state := c.State // the coordinator's rule (admin.Crawl.CurrentState)
		return table.Row{
			ID: c.Name, StateCol: 1, State: crawlStateColour[state],
			Cells: []string{
				c.Name, state, dash(c.Scope), depth,
				strconv.Itoa(c.Queued + c.Backoff), strconv.Itoa(c.Running), strconv.Itoa(c.Done), strconv.Itoa(c.Failed),
				strconv.FormatFloat(c.PagesPerSec, 'f', 1, 64), backoffs, strconv.Itoa(c.Pages), budget,
			},
		}
	},
	label: func(p *admin.Page, i int) string { return p.Crawls[i].Name },
}

// crawlStateColour colours a crawl's state by a job state word.
var crawlStateColour = map[string]string{
	admin.CrawlRunning: "dispatched", admin.CrawlPaused: "backoff", admin.CrawlCancelled: "failed",
	admin.CrawlDone: "done", admin.CrawlIdle: "queued",
}

// selectedBackoffs are the host back-offs holding jobs of the crawl
// selected in the Crawls view.
func (m *model) selectedBackoffs() []crawlBackoff {
	p := m.panes[admin.ViewCrawls]
	if p == nil || p.selID == "" {
		return nil
	}
	return p.backoffs[p.selID]
}

// crawlClock is the coordinator's time of a refresh, or the console's when
// the coordinator gave none.
func crawlClock(at, now time.Time) time.Time {
	if at.IsZero() {
		return now
	}
	return at
}
