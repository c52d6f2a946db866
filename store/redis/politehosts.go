package redis

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"drover/admin"
	"drover/coord/broker"
)

// The hosts holding fetches back for politeness cluster-wide (drover
// status, the cluster view). On a shared queue a host's fetches wait in
// Redis, not in a coordinator's broker, so no broker lists the host. Each
// claim's answer says, for every host it asked, how many polite jobs wait
// there, how many are leased and when the next may be claimed; the queue
// keeps the hosts it last found holding jobs back (at their cap, or
// inside their interval), publishes them in its summary once per
// heartbeat, and the cluster view merges every live coordinator's. A
// claim asks up to 64 ready hosts picked at random, so on a crawl of many
// hosts the list is a sample, refreshed as claims go on.

// politeFor is how long a host a claim found holding jobs back stays
// listed without a claim finding it so again.
const politeFor = 10 * time.Second

// politeSeen is a host a claim found holding jobs back, and when.
type politeSeen struct {
	row admin.HostRow
	at  time.Time
}

// politeSnapshot holds the rows the summary publishes, built by the
// reactor, read by the goroutine that publishes.
type politeSnapshot struct {
	rows  atomic.Pointer[politeRows]
	built time.Time // when the reactor last built rows
}

// politeRows are the rows of a snapshot and when it was built.
type politeRows struct {
	rows []admin.HostRow
	at   time.Time
}

// notePolite takes in what a claim's answer v (claimHead strings first)
// at now says of host's polite jobs.
func (q *Queue) notePolite(now time.Time, host string, v []string) {
	wait, _ := strconv.ParseInt(v[1], 10, 64)
	backoff, _ := strconv.ParseInt(v[2], 10, 64)
	left, _ := strconv.Atoi(v[2+peekLen])
	n, _ := strconv.Atoi(v[3+peekLen])
	var lim broker.Limits
	if q.policy.Limits != nil {
		lim = q.policy.Limits(host)
	}
	held := left > 0 && backoff == 0 && (wait > 0 || lim.PerHost > 0 && n >= lim.PerHost)
	if !held {
		delete(q.seen, host)
		return
	}
	r := admin.HostRow{Host: host, Jobs: left, Polite: true, InFlight: n, Limit: lim.String()}
	if wait > 0 {
		r.Until = now.Add(time.Duration(wait) * time.Microsecond)
	}
	q.seen[host] = politeSeen{row: r, at: now}
}

// snapPolite rebuilds, at most once a second, the rows the summary
// publishes: the hosts seen holding jobs back within politeFor, most
// waiting jobs first, at most maxPoliteRows.
func (q *Queue) snapPolite(now time.Time) {
	if now.Sub(q.snap.built) < time.Second && now.After(q.snap.built) {
		return
	}
	q.snap.built = now
	rows := make([]admin.HostRow, 0, min(len(q.seen), maxPoliteRows))
	for h, s := range q.seen {
		if now.Sub(s.at) > politeFor {
			delete(q.seen, h)
			continue
		}
		rows = append(rows, s.row)
	}
	sortPolite(rows)
	q.snap.rows.Store(&politeRows{rows: rows[:min(len(rows), maxPoliteRows)], at: now})
}

// maxPoliteRows bounds the polite hosts a summary and the view list.
const maxPoliteRows = 100

// sortPolite orders polite hosts as the broker lists them: most waiting
// jobs first, then by name.
func sortPolite(rows []admin.HostRow) {
	slices.SortFunc(rows, func(x, y admin.HostRow) int {
		return cmp.Or(cmp.Compare(y.Jobs, x.Jobs), strings.Compare(x.Host, y.Host))
	})
}

// PoliteHosts are the hosts this coordinator's claims last found holding
// jobs back for politeness, none when it has not claimed for politeFor
// (its window full: what it found is old). Safe from any goroutine.
func (q *Queue) PoliteHosts(now time.Time) []admin.HostRow {
	if p := q.snap.rows.Load(); p != nil && now.Sub(p.at) <= politeFor {
		return p.rows
	}
	return nil
}

// mergePolite lists the polite hosts of several coordinators' summaries,
// the latest published row of each host, most waiting jobs first, at
// most maxPoliteRows.
func mergePolite(sums []summary) []admin.HostRow {
	latest := make(map[string]int) // host -> index in rows
	var rows []admin.HostRow
	var at []time.Time
	for _, s := range sums {
		for _, r := range s.Polite {
			i, ok := latest[r.Host]
			switch {
			case !ok:
				latest[r.Host] = len(rows)
				rows = append(rows, r)
				at = append(at, s.Heartbeat)
			case s.Heartbeat.After(at[i]):
				rows[i], at[i] = r, s.Heartbeat
			}
		}
	}
	sortPolite(rows)
	return rows[:min(len(rows), maxPoliteRows)]
}
