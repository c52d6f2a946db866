package broker

import (
	"container/heap"
	"fmt"
	"strconv"
	"strings"
	"time"

	"drover/admin"
	"drover/backoff"
)

// host is the per-host state, the one record of everything the fleet
// knows about a host: the job index used by host= filters, its queued jobs
// (lanes, one per header class), its politeness (polite.go: cap, interval,
// Crawl-delay, in-flight count, next eligible time), the throttling
// back-off and its held-back jobs, and its robots.txt (robots.go).
type host struct {
	// The fields every dispatch and result of the host's jobs reads or
	// writes come first, in 128 bytes: with many hosts a dispatch meets a
	// host whose record is not in cache, and these cost it two cache lines
	// (the record is 256 bytes, an allocation size class whose records
	// start on a cache line).
	lane0     lane     // its queued jobs of its first header class
	idx       countIdx // per-state counts over positions in ids
	nq        int32    // queued jobs in its lanes that its limits hold (not free)
	cap       int32    // jobs dispatched at once at most; 0: no cap
	inflight  int32    // its jobs dispatched now
	parked    bool     // ineligible: its lanes are out of the rings
	waitShown bool     // host.polite emitted for the current wait
	rstate    uint8    // robots.txt for the fleet (robots.go)
	hasCopy   bool     // robots is set (read without loading robots' line)
	gap       int64    // interval between dispatches (ns): the configured MinDelay raised by crawlDelay
	next      int64    // earliest next dispatch (Unix ns)

	name       string
	ids        idList   // every job naming this host, in submission order
	more       *[]*lane // its queued jobs of other header classes; nil: none
	backoff    jobList  // its jobs in back-off, in the order they entered it
	robots     *Robots  // its robots.txt copy (robots.go)
	crawlDelay int64    // robots.txt Crawl-delay reported (ns), capped
	heapIdx    int32    // its place in the broker's timer heap, -1 when not there
	level      int32    // consecutive throttles since the last forgiveness
	throttles  int32    // throttles since the last forgiveness
	no         uint32   // its index in Broker.hostAll
	until      int64    // back-off in force until (Unix ns); 0 when none
	forgiveAt  int64    // when its level resets if no throttle comes: the latest back-off's end plus BackoffForgive, or later (HoldHost)
	due        int64    // the heap key: next wake-up or forgiveness
}

func (b *Broker) hostFor(name string) *host {
	h := b.hosts[name]
	if h == nil {
		h = &host{name: name, no: uint32(len(b.hostAll)), heapIdx: -1}
		if b.cfg.Politeness.ShareRobots {
			h.rstate = robotsUnknown
		}
		b.setLimits(h, b.cfg.Politeness.For(name))
		if since := b.cfg.Politeness.Since; !since.IsZero() {
			if g := h.gap; g > 0 {
				h.next = ns(since) + g // a coordinator before this one may have dispatched to it just before
			}
		}
		b.hosts[name] = h
		b.hostAll = append(b.hostAll, h)
	}
	return h
}

// throttle handles a Throttled outcome: it raises the host's back-off
// (Retry-After when given, capped; else exponential with jitter, capped),
// moves the job and every queued job of the host to backoff until the
// host's back-off ends.
func (b *Broker) throttle(j *job, retryAfter time.Duration, t int64, now time.Time) {
	h := b.hostOf(j)
	if h.level > 0 && b.quiet(h, t) {
		b.forgive(h)
	}
	h.level++
	h.throttles++
	var d time.Duration
	if retryAfter > 0 {
		d = min(retryAfter, b.cfg.BackoffCap)
	} else {
		p := backoff.Policy{Start: b.cfg.BackoffStart, Cap: b.cfg.BackoffCap, Jitter: max(b.cfg.Jitter, 0)}
		d = p.Delay(int(h.level), b.cfg.Rand.Float64)
	}
	b.thr[h] = struct{}{}
	b.emit(admin.Event{At: now, Kind: admin.EventJobThrottled, JobID: uint64(j.id), URL: b.url(j), Detail: "host " + h.name + " backed off " + d.String()})
	if b.extend(h, t+int64(d), now) {
		b.backoffs = append(b.backoffs, HostBackoff{Host: h.name, Until: tm(h.until), Level: int(h.level),
			Forgiven: tm(h.forgiveAt)})
	}
	b.place(j, t, now)
	b.holdLanes(h, t, now)
	b.schedule(h, t)
}

// extend moves h's back-off end to until if that is later, and reports
// whether it did.
func (b *Broker) extend(h *host, until int64, now time.Time) bool {
	if until <= h.until {
		return false
	}
	h.forgiveAt = until + int64(b.cfg.BackoffForgive)
	b.emit(admin.Event{At: now, Kind: admin.EventHostBackoff, Detail: h.name + " until " + tm(until).Format(time.RFC3339)})
	// Jobs already held back wait for the new end too: their retry time
	// is the host's (jobHostWait), so the retry_at index takes them out
	// before it changes.
	tr := b.trees[sortRetryAt]
	if tr != nil {
		for k := h.backoff.head; k != nil; k = h.backoff.next(&b.jobs, k) {
			tr.remove(k)
		}
	}
	h.until = until
	for k := h.backoff.head; k != nil; k = h.backoff.next(&b.jobs, k) {
		if tr != nil && k.has(jobHostWait) {
			tr.insert(k)
		} else {
			b.setRetryHost(k)
		}
	}
	return true
}

// holdLanes moves every queued job of h to back-off while its back-off
// is in force; an ended back-off leaves them in their lanes.
func (b *Broker) holdLanes(h *host, t int64, now time.Time) {
	if h.until <= t {
		return // ended: place would put each job back in its lane
	}
	h.eachLane(func(l *lane) {
		for l.q.head != nil {
			k := l.q.head
			b.unqueue(k)
			b.place(k, t, now)
		}
	})
}

// HostBackoff is a host's back-off as coordinators sharing a job queue tell
// each other (TakeBackoffs, HoldHost).
type HostBackoff struct {
	Host  string
	Until time.Time // the host's jobs wait until then
	// Level counts the host's throttles in a row; Forgiven is when it
	// resets if no throttle comes (the end plus BackoffForgive, or a later
	// Forgiven another coordinator sent).
	Level    int
	Forgiven time.Time
}

// TakeBackoffs appends to dst the back-offs throttles here started or
// extended since the last call, and forgets them.
func (b *Broker) TakeBackoffs(dst []HostBackoff) []HostBackoff {
	dst = append(dst, b.backoffs...)
	b.backoffs = b.backoffs[:0]
	return dst
}

// HoldHost applies a back-off another coordinator's throttle put on a host
// (a 429 or 503 its worker got), by the rules of a throttle here: the
// host's queued jobs wait in back-off until bo.Until (a later end here
// stands), and its level becomes at least bo.Level, so a throttle here
// continues from it, and is not forgiven before bo.Forgiven. A host the
// broker has no record of is left alone (its jobs, claimed later, learn of
// it then).
func (b *Broker) HoldHost(now time.Time, bo HostBackoff) {
	h := b.hosts[bo.Host]
	if h == nil {
		return
	}
	t := ns(now)
	if h.level > 0 && b.quiet(h, t) {
		b.forgive(h)
	}
	if lv := int32(min(bo.Level, 1<<30)); lv > h.level {
		h.level = lv
		h.throttles = max(h.throttles, lv)
		b.thr[h] = struct{}{}
	}
	// A back-off that has already ended holds nothing (extending to it
	// would leave the host's jobs placed back in their lanes for ever).
	if ns(bo.Until) > t && b.extend(h, ns(bo.Until), now) {
		b.holdLanes(h, t, now)
	}
	if h.level > 0 {
		h.forgiveAt = max(h.forgiveAt, ns(bo.Forgiven))
	}
	b.schedule(h, t)
}

// backoffReason is the reason of the jobs a host's back-off holds.
func (h *host) backoffReason() string {
	return WaitHostBackoff.text("until " + tm(h.until).Format(time.RFC3339))
}

// quiet reports whether the host has been quiet for BackoffForgive: no
// back-off in force and none ended within the period.
func (b *Broker) quiet(h *host, t int64) bool {
	return h.until <= t && t >= h.forgiveAt
}

// forgive resets a host's back-off level.
func (b *Broker) forgive(h *host) {
	h.level = 0
	h.throttles = 0
	delete(b.thr, h)
}

// schedule sets the host's heap entry to its next timer: the end of its
// back-off while jobs wait, else its forgiveness, or the end of its
// politeness interval when sooner; none when nothing applies.
func (b *Broker) schedule(h *host, t int64) {
	var due int64
	switch {
	case h.until > t:
		due = h.until
	case h.level > 0:
		due = h.forgiveAt
	}
	if p := politeDue(h, t); p != 0 && (due == 0 || p < due) {
		due = p
	}
	switch {
	case due == 0 && h.heapIdx >= 0:
		heap.Remove(&b.heap, int(h.heapIdx))
	case due != 0 && h.heapIdx >= 0:
		h.due = due
		heap.Fix(&b.heap, int(h.heapIdx))
	case due != 0:
		h.due = due
		heap.Push(&b.heap, h)
	}
}

// Tick applies every timer due at now: hosts whose back-off ended release
// their jobs to the queue, jobs whose retry delay ended are queued (retry.go),
// hosts quiet for BackoffForgive after their last back-off ended are forgiven
// (level reset), hosts past their politeness interval take turns again,
// jobs unroutable for UnroutableTimeout fail, and a growing key index
// moves a bounded part of its old table.
func (b *Broker) Tick(now time.Time) {
	t := ns(now)
	b.wake(t, now)
	b.wakeRetries(t, now)
	b.releaseHolds(t)
	b.byKey.x.Step(tickMove) // a growing key index's move goes on when no job comes
	if b.cfg.UnroutableTimeout > 0 && b.unrt > 0 {
		limit := int64(b.cfg.UnroutableTimeout)
		for _, c := range b.classAll {
			if c.capable > 0 {
				continue
			}
			for j := c.queue.head; j != nil && t-max(j.updated, c.unrtAt) >= limit; j = c.queue.head {
				reason := b.unroutableReason(c)
				b.unqueue(j)
				b.fail(j, t, now, reason+" for "+b.cfg.UnroutableTimeout.String())
			}
		}
	}
}

// wake applies the host timers due at t (back-off ends, forgiveness,
// politeness intervals): a heap pop per due host, never a scan.
func (b *Broker) wake(t int64, now time.Time) {
	for len(b.heap) > 0 && b.heap[0].due <= t {
		h := b.heap[0]
		if h.until != 0 && h.until <= t {
			// h.until stays until every job left its back-off: it is their
			// retry time (jobHostWait) until place clears it.
			n := h.backoff.n
			for h.backoff.head != nil {
				k := h.backoff.head
				h.backoff.remove(&b.jobs, k)
				b.setState(k, Queued, t)
				b.emit(admin.Event{At: now, Kind: admin.EventJobWoken, JobID: uint64(k.id), URL: b.url(k)})
				b.place(k, t, now)
			}
			h.until = 0
			b.emit(admin.Event{At: now, Kind: admin.EventHostResumed, Detail: h.name + ": " + strconv.Itoa(n) + " jobs back in the queue"})
		}
		if h.level > 0 && b.quiet(h, t) {
			b.forgive(h)
			b.emit(admin.Event{At: now, Kind: admin.EventHostForgiven, Detail: h.name})
		}
		b.refresh(h, t) // schedules it
	}
}

// NextDeadline returns when Tick next has something to do; false when no
// timer is pending.
func (b *Broker) NextDeadline() (time.Time, bool) {
	var d int64
	if len(b.heap) > 0 {
		d = b.heap[0].due
	}
	if h, ok := b.nextHold(); ok && (d == 0 || h < d) {
		d = h
	}
	if r := b.nextRetry(); r != 0 && (d == 0 || r < d) {
		d = r
	}
	if b.cfg.UnroutableTimeout > 0 && b.unrt > 0 {
		for _, c := range b.classAll {
			if c.capable == 0 && c.queue.head != nil {
				at := max(c.queue.head.updated, c.unrtAt) + int64(b.cfg.UnroutableTimeout)
				if d == 0 || at < d {
					d = at
				}
			}
		}
	}
	if d == 0 {
		return time.Time{}, false
	}
	return tm(d), true
}

// hostHeap orders hosts by their next timer.
type hostHeap []*host

// Len implements heap.Interface.
func (q hostHeap) Len() int { return len(q) }

// Less implements heap.Interface.
func (q hostHeap) Less(i, j int) bool { return q[i].due < q[j].due }

// Swap implements heap.Interface.
func (q hostHeap) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].heapIdx = int32(i)
	q[j].heapIdx = int32(j)
}

// Push implements heap.Interface.
func (q *hostHeap) Push(x any) {
	h := x.(*host)
	h.heapIdx = int32(len(*q))
	*q = append(*q, h)
}

// Pop implements heap.Interface.
func (q *hostHeap) Pop() any {
	old := *q
	h := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	h.heapIdx = -1
	return h
}

// The layouts HTTP allows for a Retry-After date (RFC 9110 §5.6.7): the
// preferred IMF-fixdate, then the obsolete RFC 850 and asctime forms.
var httpDateLayouts = [...]string{
	"Mon, 02 Jan 2006 15:04:05 GMT",
	"Monday, 02-Jan-06 15:04:05 GMT",
	"Mon Jan _2 15:04:05 2006",
}

// ParseRetryAfter turns an HTTP Retry-After value (delay in seconds or an
// HTTP date) into a delay from now; a date in the past gives 0.
func ParseRetryAfter(v string, now time.Time) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, fmt.Errorf("retry-after: empty, want seconds or an HTTP date")
	}
	if v[0] >= '0' && v[0] <= '9' {
		n, err := strconv.ParseUint(v, 10, 63)
		if err != nil {
			return 0, fmt.Errorf("retry-after %q: want whole seconds: %w", v, err)
		}
		if n > uint64(1<<63-1)/uint64(time.Second) {
			n = uint64(1<<63-1) / uint64(time.Second)
		}
		return time.Duration(n) * time.Second, nil
	}
	for _, layout := range httpDateLayouts {
		if at, err := time.Parse(layout, v); err == nil {
			return max(at.Sub(now), 0), nil
		}
	}
	return 0, fmt.Errorf("retry-after %q: want seconds or an HTTP date like %q", v, httpDateLayouts[0])
}
