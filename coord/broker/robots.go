package broker

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"drover/coord/id"
)

// robots.txt for the fleet (issue 22, PROTOCOL.md §6.18): the host's one
// record keeps the copy of its robots.txt a worker reported, so that the
// fleet fetches it once per expiry, not once per worker.
//
//   - A worker that fetched a host's robots.txt reports it (SetRobots)
//     while it holds a job of that host; the copy replaces any earlier
//     one, and its Crawl-delay raises the host's interval (SetCrawlDelay).
//   - A dispatch of a job whose URL is under the copy's origin carries the
//     copy (Assignment.Robots) until it expires: the transport sends it to
//     the worker before the JOB, and the worker does not fetch the file.
//   - With Politeness.ShareRobots, a host whose copy the broker lacks (none
//     yet, or it expired) has one job dispatched at a time — its probe —
//     whatever its cap, until a worker reports the file or every job of it
//     in flight has ended (the worker did not report: robots.txt was
//     unreachable). Only a worker announcing RobotsHeader probes; a host
//     whose job goes to one that does not is not held. Then its cap applies again; a host whose
//     probe ended without a report is not held again until a copy comes
//     and expires.

// Robots is one origin's robots.txt as a worker reported it.
type Robots struct {
	// Origin is scheme://host[:port] of the URLs it applies to.
	Origin string
	// Body is the file as fetched; empty allows everything.
	Body []byte
	// CrawlDelay is the Crawl-delay the reporting worker read in it.
	CrawlDelay time.Duration
	// Expires is when the copy may no longer be used.
	Expires time.Time
}

// TTL is how long the copy may still be used at now.
func (r *Robots) TTL(now time.Time) time.Duration { return max(r.Expires.Sub(now), 0) }

// RobotsHeader is the HELLO header (value "1") of a worker that takes the
// fleet's robots.txt copies and reports the files it fetches: the wire's
// name for it (net/wire.RobotsHeader is the same string). Only such a
// worker's dispatch can be a probe.
const RobotsHeader = "drv.robots"

// takesRobots reports whether w announced RobotsHeader.
func (w *worker) takesRobots() bool { return w.headers[RobotsHeader] == "1" }

// The robots states of a host (host.rstate).
const (
	robotsOff      uint8 = iota // Politeness.ShareRobots is off: no probe
	robotsUnknown               // no copy: its next dispatch is a probe
	robotsProbing               // a probe is in flight: one job at a time
	robotsKnown                 // a copy is kept (host.robots)
	robotsUnshared              // a probe ended without a report: no hold
)

// capNow is h's concurrency cap in force: 1 while its robots.txt is
// unknown or being fetched for the fleet, else its configured cap.
func (h *host) capNow() int32 {
	if h.rstate == robotsUnknown || h.rstate == robotsProbing {
		return 1
	}
	return h.cap
}

// ErrNotHolding: a worker reported robots.txt for a host it holds no job of.
var ErrNotHolding = fmt.Errorf("%w: the worker holds no job of that host", ErrWrongState)

// ErrBadOrigin: a robots.txt report's origin is not one (OriginHost).
var ErrBadOrigin = errors.New("want scheme://host[:port] with scheme http or https, no path")

// OriginHost returns the host key of an origin (scheme://host[:port], as a
// normalised URL starts); false when it is not one.
func OriginHost(origin string) (string, bool) {
	scheme, rest, ok := strings.Cut(origin, "://")
	if !ok || (scheme != "http" && scheme != "https") || rest == "" || strings.ContainsAny(rest, "/?#@ ") {
		return "", false
	}
	return rest, true
}

// SetRobots keeps the robots.txt the worker on session s reported for its
// origin's host, and applies its Crawl-delay to the host for the whole
// fleet. The worker must hold a job of that host (a peer speaks only for
// hosts it was sent); otherwise nothing changes and the error says why.
// It returns the copy kept (nil for a report that expired already); a
// copy is never modified, so a caller may tell copies apart by pointer.
func (b *Broker) SetRobots(now time.Time, s id.Session, r Robots) (*Robots, error) {
	hostName, ok := OriginHost(r.Origin)
	if !ok {
		return nil, fmt.Errorf("robots.txt for origin %q: %w", r.Origin, ErrBadOrigin)
	}
	w := b.sessions[s]
	if w == nil {
		return nil, fmt.Errorf("robots.txt for %s from session %d: %w", r.Origin, s, ErrUnknownWorker)
	}
	var h *host
	for _, j := range w.held {
		if b.hostOf(j).name == hostName {
			h = b.hostOf(j)
			break
		}
	}
	if h == nil {
		return nil, fmt.Errorf("robots.txt for %s from worker %s: %w", r.Origin, w.id, ErrNotHolding)
	}
	t := ns(now)
	if ns(r.Expires) <= t {
		return nil, nil // expired already: nothing to share
	}
	h.keepRobots(r)
	if !b.SetCrawlDelay(now, hostName, r.CrawlDelay) {
		b.refresh(h, t) // the probe's hold ends
	}
	return h.robots, nil
}

// RestoreRobots gives host hostName the robots.txt copy r that a
// coordinator before this one kept (a restart): the host has it as if a
// worker had just reported it — later jobs of its origin carry it, its
// Crawl-delay spaces the host — without an event and without a worker
// holding a job of the host. A copy expired at now is not restored
// (false).
func (b *Broker) RestoreRobots(now time.Time, hostName string, r Robots) (bool, error) {
	switch oh, ok := OriginHost(r.Origin); {
	case !ok:
		return false, fmt.Errorf("restore robots.txt of host %q: origin %q: %w", hostName, r.Origin, ErrBadOrigin)
	case oh != hostName:
		return false, fmt.Errorf("restore robots.txt of host %q: origin %q is another host's", hostName, r.Origin)
	}
	t := ns(now)
	if ns(r.Expires) <= t {
		return false, nil
	}
	h := b.hostFor(hostName)
	h.keepRobots(r)
	if !b.setCrawlDelay(h, r.CrawlDelay, t) {
		b.refresh(h, t)
	}
	return true, nil
}

// robotsFor returns the copy a dispatch of j to w at t carries (nil:
// none), and starts a probe when j's host has none and w reports what it
// fetches. A host whose copy is unknown dispatched to a worker that does
// not (an --exec worker, an older one) is not held: that worker would never
// report, so holding the host to one job would only slow it.
func (b *Broker) robotsFor(j *job, w *worker, t int64) *Robots {
	if j.has(jobFree) {
		return nil
	}
	h := b.hostOf(j)
	if h.hasCopy && ns(h.robots.Expires) <= t {
		h.dropRobots()
	}
	if !h.hasCopy {
		switch {
		case h.rstate == robotsUnknown && w.takesRobots():
			h.rstate = robotsProbing
		case h.rstate == robotsUnknown:
			h.rstate = robotsUnshared
		}
		return nil
	}
	r := h.robots
	u := j.urlRef()
	if !b.urls.HasPrefix(u, r.Origin) || (b.urls.Len(u) > len(r.Origin) && b.urls.ByteAt(u, len(r.Origin)) != '/') {
		return nil // another scheme on the same host key
	}
	return r
}

// probeEnded notes that every job of h in flight ended: a probe that got
// no report stops holding the host.
func (h *host) probeEnded() {
	if h.rstate == robotsProbing && h.inflight == 0 {
		h.rstate = robotsUnshared
	}
}

// HostRobots returns the copy of host's robots.txt the broker keeps (nil
// when none).
func (b *Broker) HostRobots(hostName string) *Robots {
	if h := b.hosts[hostName]; h != nil {
		return h.robots
	}
	return nil
}

// keepRobots makes r the host's robots.txt copy (robots and hasCopy are
// changed together only here and in dropRobots).
func (h *host) keepRobots(r Robots) {
	h.robots, h.hasCopy = &r, true
	if h.rstate != robotsOff {
		h.rstate = robotsKnown
	}
}

// dropRobots forgets the host's copy (it expired).
func (h *host) dropRobots() {
	h.robots, h.hasCopy = nil, false
	if h.rstate == robotsKnown {
		h.rstate = robotsUnknown
	}
}
