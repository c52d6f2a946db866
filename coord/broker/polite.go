package broker

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"drover/admin"
)

// Politeness (issue 22, DESIGN.md §8 "Politeness is the frontier's"): the
// broker holds every host's limits for the whole fleet, so they hold
// whatever the number of workers.
//
//   - A host has a concurrency cap (at most PerHost of its jobs dispatched
//     at once; 0 = no cap) and an interval (at least MinDelay between two
//     of its dispatches, and from the end of one of its jobs to the next
//     dispatch, raised by a robots.txt Crawl-delay a worker reported; 0 =
//     none). A host under its cap and past its interval is eligible. The
//     interval runs from ends too because a job reaches its worker a
//     moment after its dispatch: with a cap of 1, the site then sees its
//     requests start at least the interval apart whatever that moment.
//   - Queued jobs wait in lanes: one FIFO per (host, header class). Each
//     class keeps a ring of the lanes whose host is eligible and that hold
//     jobs. A worker takes the head job of the front lane of the class
//     (among those it matches) whose front lane's head is oldest; the lane
//     moves to the back of its ring. So hosts take turns (round-robin): a
//     host with a million queued jobs gets one turn per round, like a host
//     with ten. With one host (or none with limits and one lane per class)
//     this is the FIFO order of DESIGN.md §3.
//   - A host that reaches its cap or enters its interval leaves the rings
//     (its lanes are parked) and its queued jobs wait with the reason
//     "polite: ..."; it comes back when one of its jobs ends (cap) or at
//     its next eligible time (a timer in the host heap, so dispatch never
//     scans hosts). Worker slots are never held for a parked host: they
//     take other hosts' jobs.

// Limits are one host's politeness limits.
type Limits struct {
	// PerHost is the most jobs of the host dispatched at once; 0 = no cap.
	PerHost int
	// MinDelay is the least time between two dispatches of the host's
	// jobs; 0 = none.
	MinDelay time.Duration
}

// Off reports whether the limits hold nothing back.
func (l Limits) Off() bool { return l.PerHost == 0 && l.MinDelay == 0 }

// String renders the limits as the console and reasons show them.
func (l Limits) String() string {
	if l.Off() {
		return "no limits"
	}
	var parts []string
	if l.PerHost > 0 {
		parts = append(parts, strconv.Itoa(l.PerHost)+" at once")
	}
	if l.MinDelay > 0 {
		parts = append(parts, "1 per "+l.MinDelay.String())
	}
	return strings.Join(parts, ", ")
}

// HostRule gives the hosts matching Pattern their own limits. Patterns:
// "*" (every host), "*.example.com" (example.com and every name under it),
// or one host ("example.com"). A pattern without a port matches the host on
// any port; "example.com:8080" only that port.
type HostRule struct {
	Pattern string
	Limits
}

// Match reports whether the rule's pattern covers host (a host key: the
// URL's host, with its port when not the scheme's default).
func (r HostRule) Match(host string) bool {
	p := strings.ToLower(r.Pattern)
	h := strings.ToLower(host)
	if p == "*" {
		return true
	}
	if !hasPort(p) {
		h = stripPort(h)
	}
	if rest, ok := strings.CutPrefix(p, "*."); ok {
		return h == rest || strings.HasSuffix(h, "."+rest)
	}
	return h == p
}

// hasPort reports whether a host key ends in :port (not the last group
// of a bracketed IPv6 literal).
func hasPort(h string) bool {
	i := strings.LastIndexByte(h, ':')
	return i >= 0 && !strings.Contains(h[i:], "]") && (h[0] != '[' || strings.Contains(h[:i], "]"))
}

func stripPort(h string) string {
	if hasPort(h) {
		return h[:strings.LastIndexByte(h, ':')]
	}
	return h
}

// Politeness is the fleet's politeness policy (Config.Politeness).
type Politeness struct {
	// Default applies to every host no rule matches.
	Default Limits
	// Rules override Default for the hosts they match; the first match
	// wins.
	Rules []HostRule
	// Local, when set, applies instead of Default to the hosts IsLocal
	// reports (the caller's rule, e.g. crawl.IsLocalHost) no rule
	// matches: a local site is the user's own, so a default delay need
	// not apply to it. An explicit setting applies to every host: leave
	// Local nil then.
	Local *Limits
	// IsLocal says which host keys Local applies to; required with Local.
	IsLocal func(host string) bool
	// MaxCrawlDelay caps a robots.txt Crawl-delay reported for a host
	// (SetCrawlDelay). Default 30 s.
	MaxCrawlDelay time.Duration
	// ShareRobots holds a host whose robots.txt the broker has no copy of
	// to one job at a time until a worker reports the file (robots.go),
	// so that the fleet fetches it once.
	ShareRobots bool
	// Since, when set, is when this coordinator started: a host's first
	// dispatch comes at least its interval after it, since a coordinator
	// before this one (a restart) may have dispatched to the host just
	// before. So the politeness clock needs no persisting: every dispatch
	// of an earlier coordinator happened before Since.
	Since time.Time
	// Processor, when set, limits politeness to the jobs of that
	// processor (the crawl handler's, "fetch"): other jobs of a host (an
	// --exec queue) neither wait for its limits nor count against them.
	// Empty: every job.
	Processor string
}

// applies reports whether politeness applies to jobs of processor p.
func (p Politeness) applies(proc string) bool { return p.Processor == "" || p.Processor == proc }

// DefaultMaxCrawlDelay is Politeness.MaxCrawlDelay's default.
const DefaultMaxCrawlDelay = 30 * time.Second

// For returns the configured limits of host.
func (p Politeness) For(host string) Limits {
	for _, r := range p.Rules {
		if r.Match(host) {
			return r.Limits
		}
	}
	if p.Local != nil && p.IsLocal != nil && p.IsLocal(host) {
		return *p.Local
	}
	return p.Default
}

// validate checks the policy, naming the bad field.
func (p *Politeness) validate() error {
	var errs []error
	check := func(what string, l Limits) {
		if l.PerHost < 0 {
			errs = append(errs, fmt.Errorf("broker config %s per-host %d: want >= 0 (0: no cap)", what, l.PerHost))
		}
		if l.MinDelay < 0 {
			errs = append(errs, fmt.Errorf("broker config %s min-delay %v: want >= 0 (0: none)", what, l.MinDelay))
		}
	}
	check("Politeness.Default", p.Default)
	if p.Local != nil {
		check("Politeness.Local", *p.Local)
		if p.IsLocal == nil {
			errs = append(errs, errors.New("broker config Politeness.Local is set without Politeness.IsLocal, the rule that says which hosts are local"))
		}
	}
	for i, r := range p.Rules {
		if err := ValidPattern(r.Pattern); err != nil {
			errs = append(errs, fmt.Errorf("broker config Politeness.Rules[%d]: %w", i, err))
		}
		check(fmt.Sprintf("Politeness.Rules[%d] (%s)", i, r.Pattern), r.Limits)
	}
	switch {
	case p.MaxCrawlDelay == 0:
		p.MaxCrawlDelay = DefaultMaxCrawlDelay
	case p.MaxCrawlDelay < 0:
		errs = append(errs, fmt.Errorf("broker config Politeness.MaxCrawlDelay %v: want > 0 (or 0 for the default %v)", p.MaxCrawlDelay, DefaultMaxCrawlDelay))
	}
	return errors.Join(errs...)
}

// ValidPattern checks a host pattern: "*", "*.domain" or a host, without
// spaces, slashes or other wildcards.
func ValidPattern(p string) error {
	rest := strings.TrimPrefix(p, "*.")
	switch {
	case p == "*":
		return nil
	case rest == "":
		return fmt.Errorf("host pattern %q: empty, want a host, *.domain or *", p)
	case strings.ContainsAny(rest, "*/ \t?#@"):
		return fmt.Errorf("host pattern %q: want a host (example.com, example.com:8080), *.domain or *", p)
	}
	return nil
}

// lane is the queued jobs of one host in one header class, FIFO through
// job.hlink. It sits in its class's ring while it holds jobs and its
// host is eligible. A free lane holds the host's jobs politeness does not
// apply to (Politeness.Processor): it stays in its ring while it holds
// jobs, whatever the host's limits.
type lane struct {
	link   links[lane] // its place in its class's ring; first: ringLink
	host   *host
	class  *class
	q      hostList
	inRing bool
	free   bool
}

// waits reports whether the lane is held back by its host's limits now.
func (l *lane) waits() bool { return l.host.parked && !l.free }

// ring is a class's round-robin of lanes that can give a job now.
type ring struct{ list[lane, ringLink] }

func (r *ring) push(l *lane) {
	r.list.push(l)
	l.inRing = true
}

func (r *ring) remove(l *lane) {
	r.list.remove(l)
	l.inRing = false
}

// laneFor returns h's lane for class c (free or not), creating it.
func (h *host) laneFor(c *class, free bool) *lane {
	if h.lane0.class == c && h.lane0.free == free {
		return &h.lane0
	}
	if h.lane0.class == nil {
		h.lane0 = lane{host: h, class: c, free: free}
		return &h.lane0
	}
	if h.more == nil {
		h.more = new([]*lane)
	}
	for _, l := range *h.more {
		if l.class == c && l.free == free {
			return l
		}
	}
	l := &lane{host: h, class: c, free: free}
	*h.more = append(*h.more, l)
	return l
}

// eachLane calls f for every lane of h.
func (h *host) eachLane(f func(*lane)) {
	if h.lane0.class == nil {
		return
	}
	f(&h.lane0)
	if h.more != nil {
		for _, l := range *h.more {
			f(l)
		}
	}
}

// laneAdd appends a queued job to its lane (it is already in its class
// queue); the lane enters its ring if the host is eligible.
func (b *Broker) laneAdd(j *job, t int64) {
	h := b.hostOf(j)
	l := h.laneFor(b.classOf(j), j.has(jobFree))
	l.q.push(j)
	if j.has(jobFree) {
		if !l.inRing {
			l.class.ring.push(l)
		}
		return
	}
	h.nq++
	// A parked host may be eligible again; an unparked one not yet, when
	// it is new and inside its first interval (Politeness.Since): one
	// refresh settles both.
	if h.parked || h.next > t {
		if h.parked {
			b.polite++
			b.syncWaiting(h)
		}
		b.refresh(h, t)
		if h.parked {
			b.politeWait(h, t)
		}
		return
	}
	if !l.inRing {
		l.class.ring.push(l)
	}
}

// laneRemove takes a queued job out of its lane.
func (b *Broker) laneRemove(j *job) {
	h := b.hostOf(j)
	l := h.laneFor(b.classOf(j), j.has(jobFree))
	l.q.remove(&b.jobs, j)
	if l.q.n == 0 && l.inRing {
		l.class.ring.remove(l)
	}
	if j.has(jobFree) {
		return
	}
	h.nq--
	if h.parked {
		b.polite--
		b.syncWaiting(h)
	}
	if h.nq == 0 {
		h.waitShown = false
	}
}

// eligible reports whether host h may have a job dispatched at t.
func (h *host) eligible(t int64) bool {
	c := h.capNow()
	return (c == 0 || h.inflight < c) && h.next <= t
}

// refresh parks or unparks h after its in-flight count, its next eligible
// time or its limits changed, and sets its timer.
func (b *Broker) refresh(h *host, t int64) {
	switch el := h.eligible(t); {
	case el && h.parked:
		h.parked = false
		b.polite -= int(h.nq)
		h.eachLane(func(l *lane) {
			if l.q.n > 0 && !l.inRing {
				l.class.ring.push(l)
			}
		})
		b.syncWaiting(h)
	case !el && !h.parked:
		h.parked = true
		b.polite += int(h.nq)
		h.eachLane(func(l *lane) {
			if l.inRing && !l.free {
				l.class.ring.remove(l)
			}
		})
		b.syncWaiting(h)
	}
	b.schedule(h, t)
}

// politeDue is when a parked host with queued jobs becomes eligible by the
// clock: 0 when it waits for a slot (or has nothing to wait for).
func politeDue(h *host, t int64) int64 {
	if c := h.capNow(); h.parked && h.nq > 0 && (c == 0 || h.inflight < c) && h.next > t {
		return h.next
	}
	return 0
}

// politeWait emits host.polite when a host starts holding queued jobs
// back: once per backlog (until its queue empties), not at every turn.
func (b *Broker) politeWait(h *host, t int64) {
	if h.waitShown || h.nq == 0 {
		return
	}
	h.waitShown = true
	b.emit(admin.Event{At: tm(t), Kind: admin.EventHostPolite, Detail: h.name + ": " + b.politeWhy(h) + "; " + strconv.Itoa(int(h.nq)) + " jobs wait"})
}

// dispatched applies a dispatch of one of h's jobs at t.
func (b *Broker) dispatched(h *host, t int64) {
	if g := h.gap; g > 0 {
		h.next = t + g
	}
	if !h.eligible(t) {
		b.refresh(h, t)
		b.politeWait(h, t)
	}
}

// politeWhy says why a parked host holds its jobs back.
func (b *Broker) politeWhy(h *host) string {
	lim := h.limits()
	if h.cap > 0 && h.inflight >= h.cap {
		return WaitPolite.text(strconv.Itoa(int(h.inflight)) + " in flight on " + h.name + " (limit " + lim.String() + ")")
	}
	if c := h.capNow(); c > 0 && h.inflight >= c {
		return WaitPolite.text("robots.txt of " + h.name + " being fetched, " + strconv.Itoa(int(h.inflight)) + " in flight (limit " + lim.String() + ")")
	}
	return WaitPolite.text("next dispatch to " + h.name + " at " + tm(h.next).Format(time.RFC3339Nano) + " (limit " + lim.String() + ")")
}

// limits are h's limits in force (MinDelay raised by its Crawl-delay).
func (h *host) limits() Limits {
	return Limits{PerHost: int(h.cap), MinDelay: time.Duration(h.gap)}
}

// setLimits applies configured limits to h (its interval raised by its
// Crawl-delay).
func (b *Broker) setLimits(h *host, l Limits) {
	h.cap = int32(min(l.PerHost, 1<<30))
	h.gap = max(int64(l.MinDelay), h.crawlDelay)
}

// SetCrawlDelay records a robots.txt Crawl-delay a worker saw for host:
// the host's interval becomes max(its MinDelay, d capped at
// Politeness.MaxCrawlDelay) for the whole fleet. d = 0 clears it. It
// reports whether the host's interval changed.
func (b *Broker) SetCrawlDelay(now time.Time, hostName string, d time.Duration) bool {
	h := b.hostFor(hostName)
	if !b.setCrawlDelay(h, d, ns(now)) {
		return false
	}
	b.emit(admin.Event{At: now, Kind: admin.EventHostCrawlDelay, Detail: h.name + ": Crawl-delay " + time.Duration(h.crawlDelay).String() + ", limit " + h.limits().String()})
	return true
}

// setCrawlDelay is SetCrawlDelay without its event.
func (b *Broker) setCrawlDelay(h *host, d time.Duration, t int64) bool {
	d = min(max(d, 0), b.cfg.Politeness.MaxCrawlDelay)
	if h.crawlDelay == int64(d) {
		return false
	}
	before := h.gap
	h.crawlDelay = int64(d)
	b.setLimits(h, b.cfg.Politeness.For(h.name)) // the interval: max(MinDelay, Crawl-delay)
	if h.next != 0 {
		h.next += h.gap - before // the dispatch that set it is spaced by the new interval
	}
	if since := b.cfg.Politeness.Since; !since.IsZero() {
		h.next = max(h.next, ns(since)+h.gap) // a restored copy's: as hostFor does
	}
	if h.inflight > 0 && t+h.gap > h.next {
		// A job of the host is fetching now (the reporter's, which read
		// robots.txt first): the next start is an interval after this.
		h.next = t + h.gap
	}
	b.refresh(h, t)
	return h.gap != before
}

// HostLimits returns the limits in force for host (configured, with its
// Crawl-delay): what the broker would apply to a job of it.
func (b *Broker) HostLimits(hostName string) Limits {
	if h := b.hosts[hostName]; h != nil {
		return h.limits()
	}
	return b.cfg.Politeness.For(hostName)
}

// syncWaiting keeps the set of hosts holding queued jobs back.
func (b *Broker) syncWaiting(h *host) {
	want := h.parked && h.nq > 0
	if _, in := b.waiting[h]; in != want {
		if want {
			b.waiting[h] = struct{}{}
		} else {
			delete(b.waiting, h)
		}
	}
}

// maxPoliteRows bounds the polite hosts a page lists (most jobs first).
const maxPoliteRows = 100

// politeRows lists the hosts holding queued jobs back for politeness, most
// waiting jobs first, at most maxPoliteRows.
func (b *Broker) politeRows() []admin.HostRow {
	rows := make([]admin.HostRow, 0, min(len(b.waiting), maxPoliteRows))
	hs := make([]*host, 0, len(b.waiting))
	for h := range b.waiting {
		hs = append(hs, h)
	}
	slices.SortFunc(hs, func(x, y *host) int { return cmp.Or(cmp.Compare(y.nq, x.nq), strings.Compare(x.name, y.name)) })
	for _, h := range hs[:min(len(hs), maxPoliteRows)] {
		r := admin.HostRow{Host: h.name, Jobs: int(h.nq), Polite: true, InFlight: int(h.inflight), Limit: h.limits().String()}
		if politeDue(h, 0) != 0 {
			r.Until = tm(h.next)
		}
		rows = append(rows, r)
	}
	return rows
}
