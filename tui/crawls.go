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

// crawlStates are the job states the Crawls view counts per crawl, asked
// of the jobs view with a state= and crawler= filter and limit 1 (only the
// page's total is read), as `drover status` does.
var crawlStates = []string{"queued", "dispatched", "failed"}

// fetchCrawlJobs counts each crawl's jobs by state. A crawl whose name the
// filter grammar cannot express (it holds a space) gets no counts.
func fetchCrawlJobs(ctx context.Context, b Backend, crawls []admin.Crawl) (map[string]map[string]int, error) {
	out := make(map[string]map[string]int, len(crawls))
	for _, c := range crawls {
		if strings.ContainsAny(c.Name, " \t\n") {
			continue
		}
		n := make(map[string]int, len(crawlStates))
		for _, st := range crawlStates {
			p, err := b.Query(ctx, admin.Query{View: admin.ViewJobs, Filter: "state=" + st + " crawler=" + c.Name, Limit: 1})
			if err != nil {
				return nil, err
			}
			n[st] = p.Total
		}
		out[c.Name] = n
	}
	return out, nil
}

// crawlSample is one crawl's page count at a moment.
type crawlSample struct {
	pages int
	at    time.Time
}

// crawlFigures is what the Crawls view keeps beside its page: the job
// counts of the last refresh, and pages/s from successive page counts.
type crawlFigures struct {
	jobs   map[string]map[string]int
	sample map[string]crawlSample
	rate   map[string]float64
}

// apply takes a refresh's counts. The rate is the change of the crawl's
// page count (jobs dispatched, its budget's count) over at least a second
// of the coordinator's clock; a redefined crawl whose count went down
// starts over.
func (f *crawlFigures) apply(crawls []admin.Crawl, jobs map[string]map[string]int, at time.Time) {
	f.jobs = jobs
	if f.sample == nil {
		f.sample, f.rate = map[string]crawlSample{}, map[string]float64{}
	}
	for _, c := range crawls {
		s, ok := f.sample[c.Name]
		switch {
		case !ok || c.Pages < s.pages || at.Before(s.at):
			f.sample[c.Name] = crawlSample{c.Pages, at}
			delete(f.rate, c.Name)
		case at.Sub(s.at) >= time.Second:
			f.rate[c.Name] = float64(c.Pages-s.pages) / at.Sub(s.at).Seconds()
			f.sample[c.Name] = crawlSample{c.Pages, at}
		}
	}
}

// crawlClock is the coordinator's time of a refresh, or the console's when
// the coordinator gave none.
func crawlClock(at, now time.Time) time.Time {
	if at.IsZero() {
		return now
	}
	return at
}

// crawlsView lists the crawls defined on the coordinator (§13.1).
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
		{Title: "SCOPE", Min: 6, Priority: 2},
		{Title: "DEPTH", Min: 5, Align: table.Right, Priority: 3},
		{Title: "QUEUED", Min: 6, Align: table.Right},
		{Title: "RUNNING", Min: 7, Align: table.Right},
		{Title: "FAILED", Min: 6, Align: table.Right, Priority: 1},
		{Title: "PAGES", Min: 6, Align: table.Right},
		{Title: "PAGES/S", Min: 7, Align: table.Right, Priority: 1},
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
		count := func(st string) string {
			n, ok := p.crawls.jobs[c.Name][st]
			if !ok {
				return "-"
			}
			return strconv.Itoa(n)
		}
		rate := "-"
		if r, ok := p.crawls.rate[c.Name]; ok {
			rate = strconv.FormatFloat(r, 'f', 1, 64)
		}
		state := c.State
		if state == "" {
			state = "running"
		}
		return table.Row{
			ID: c.Name, StateCol: 1, State: crawlStateColour[state],
			Cells: []string{
				c.Name, state, dash(c.Scope), depth,
				count("queued"), count("dispatched"), count("failed"),
				strconv.Itoa(c.Pages), rate, budget,
			},
		}
	},
	label: func(p *admin.Page, i int) string { return p.Crawls[i].Name },
}

// crawlStateColour colours a crawl's state by a job state word.
var crawlStateColour = map[string]string{"running": "dispatched", "paused": "backoff", "cancelled": "failed"}
