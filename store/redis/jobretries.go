package redis

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"drover/admin"
	"drover/coord/id"
)

// The retries of every coordinator (QUERY view retries on any
// coordinator): jobs backing off or failed live in the broker of the
// coordinator that ran them, not in Redis, so each coordinator publishes
// its first PublishedRetries rows of the view (next retry first) and how
// many it has in its summary, once a second, and the others list those.

// PublishedRetries is how many of its retries rows a coordinator
// publishes.
const PublishedRetries = 50

// maxPublishedError bounds the error text of a published row.
const maxPublishedError = 200

// retriesNote is what NoteRetries keeps for the summary.
type retriesNote struct {
	rows  []admin.JobRow
	total int
}

// NoteRetries notes this coordinator's first retries rows and how many it
// has, for its next summary (rows past PublishedRetries are dropped, long
// errors cut, histories left out).
func (v *JobView) NoteRetries(rows []admin.JobRow, total int) {
	rows = slices.Clone(rows[:min(len(rows), PublishedRetries)])
	for i := range rows {
		r := &rows[i]
		r.History = nil
		r.Coordinator = v.l.coord
		if len(r.LastError) > maxPublishedError {
			r.LastError = r.LastError[:maxPublishedError] + "…"
		}
	}
	v.retries.Store(&retriesNote{rows: rows, total: total})
}

// noted is the retries note for the summary (nil: none yet).
func (v *JobView) noted() ([]admin.JobRow, int) {
	n := v.retries.Load()
	if n == nil {
		return nil, 0
	}
	return n.rows, n.total
}

// Retries lists the retries rows the other live coordinators published,
// by coordinator id, each with Coordinator set, its Reason beginning "on
// coordinator C" and JobID 0 (a job id is its coordinator's own), and the
// sum of their totals.
func (v *JobView) Retries() (rows []admin.JobRow, total int, err error) {
	l := v.l
	ctx, cancel := l.ctx()
	defer cancel()
	live, err := l.rdb.SMembers(ctx, l.liveSet()).Result()
	if err != nil {
		return nil, 0, fmt.Errorf("redis job view: reading the coordinators: %w", err)
	}
	var ids []string
	for _, c := range live {
		if c != l.coord {
			ids = append(ids, c)
		}
	}
	if len(ids) == 0 {
		return nil, 0, nil
	}
	slices.SortFunc(ids, compareIDs)
	vals, err := l.rdb.HMGet(ctx, l.summariesKey(), ids...).Result()
	if err != nil {
		return nil, 0, fmt.Errorf("redis job view: reading the summaries: %w", err)
	}
	for i, x := range vals {
		js, _ := x.(string)
		var s summary
		if js == "" || json.Unmarshal([]byte(js), &s) != nil {
			continue
		}
		total += s.RetriesTotal
		for _, r := range s.Retries {
			r.Coordinator, r.JobID = ids[i], 0
			r.Reason = strings.TrimSuffix("on coordinator "+ids[i]+": "+r.Reason, ": ")
			if fp, err := id.ParseFingerprint(r.Key); err == nil {
				v.remember(fp, id.Host(r.URL))
			}
			rows = append(rows, r)
		}
	}
	return rows, total, nil
}
