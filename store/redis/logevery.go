package redis

import "time"

// logEvery counts what a log line reports and says when the line is due:
// at most one every interval, so that something recurring (an outage's
// refused keys, a job no worker can take coming back) is a line now and
// then with the count since the last, not a line each time.
type logEvery struct {
	every time.Duration
	n     int
	next  time.Time
}

// add counts n more at now and reports whether a line is due, with the
// count to report (then counted from 0 again).
func (e *logEvery) add(now time.Time, n int) (count int, due bool) {
	e.n += n
	if e.n == 0 || now.Before(e.next) {
		return 0, false
	}
	count, e.n, e.next = e.n, 0, now.Add(e.every)
	return count, true
}
