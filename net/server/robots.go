package server

import (
	"bytes"
	"fmt"
	"time"

	"drover/coord"
	"drover/coord/broker"
	"drover/net/wire"
	"drover/store"
)

// robots.txt for the fleet (PROTOCOL.md §6.18): a worker's ROBOTS report
// goes to the coordinator, which keeps it in the host's record; a JOB of
// that origin is preceded by the copy, for a worker that announced it
// takes them (HELLO header drv.robots=1) and was not sent this copy yet.
// With a store, the copy kept is written in the step's batch, and a
// restarted coordinator restores the copies that have not expired: the
// fleet does not fetch the files again, and their Crawl-delays still space
// their hosts.

// robotsWrites are the robots.txt records the next batch writes, by host
// key: the copy kept since the last batch, or nil to delete the stored
// one (it expired: found at restore). One per host, so it stays bounded
// while the store is failed and nothing is written.
type robotsWrites map[string]*broker.Robots

// maxRobotsSent bounds the copies remembered as sent to one worker: past
// it the memory starts over, and a copy may be sent to it again.
const maxRobotsSent = 1024

// robots hands a worker's ROBOTS to the coordinator; a report the
// coordinator refuses (an origin the worker holds no job of, a bad origin)
// is answered ERROR and counted.
func (d *peerDialogue) robots(now time.Time, p *peer, m *wire.Robots) {
	r := broker.Robots{Origin: m.Origin, Body: bytes.Clone(m.Content), CrawlDelay: m.CrawlDelay, Expires: now.Add(m.TTL)}
	kept, err := d.c.Robots(now, p.s, r)
	if err != nil {
		d.out.reject(onPeers, p.ident, m.Req, errorCode(err), "ROBOTS: %v", err)
		return
	}
	if kept == nil {
		return
	}
	if d.dur != nil {
		h, _ := broker.OriginHost(kept.Origin) // the broker kept it: a valid origin
		d.rob.put(h, kept)
	}
	if p.robots != nil {
		p.keepSent(kept) // it has the file: no need to send it back
	}
}

// put has the next batch write host's copy r (nil: delete it).
func (w *robotsWrites) put(host string, r *broker.Robots) {
	if *w == nil {
		*w = make(robotsWrites)
	}
	(*w)[host] = r
}

// pending reports whether the next batch has robots records to write.
func (w robotsWrites) pending() bool { return len(w) > 0 }

// into adds the copies kept since the last batch, and the deletions of
// expired ones, to the step's batch.
func (w robotsWrites) into(b *store.Batch) {
	for h, r := range w {
		var err error
		if r == nil {
			err = b.DeleteRobots(h)
		} else {
			err = b.PutRobots(h, &store.RobotsRecord{Origin: r.Origin, CrawlDelay: r.CrawlDelay, Expires: r.Expires, Body: r.Body})
		}
		if err != nil {
			return // recorded in the batch: Apply fails it as a whole
		}
	}
	clear(w)
}

// restore gives coordinator c's hosts the robots.txt copies kept in st
// that have not expired at now; the expired ones are deleted with the
// first batch.
func (w *robotsWrites) restore(c *coord.Coordinator, st *store.Store, now time.Time) error {
	err := st.ReadRobots(func(host string, r *store.RobotsRecord) error {
		ok, err := c.RestoreRobots(now, host, broker.Robots{Origin: r.Origin, Body: r.Body, CrawlDelay: r.CrawlDelay, Expires: r.Expires})
		if err != nil {
			return err
		}
		if !ok {
			w.put(host, nil)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("restore robots.txt copies: %w", err)
	}
	return nil
}

// sendRobots sends session a.Session the robots.txt copy its job carries,
// before its JOB, unless the worker does not take copies or has this one.
func (d *dispatcher) sendRobots(now time.Time, a *broker.Assignment) {
	p, ok := d.sess.peer[a.Session]
	if !ok || p.robots == nil {
		return
	}
	r := a.Robots
	if p.robots[r.Origin] == r {
		return
	}
	ttl := max(r.TTL(now), time.Millisecond)
	if d.out.toPeer(p.ident, &wire.Robots{Origin: r.Origin, TTL: ttl, CrawlDelay: r.CrawlDelay, Content: r.Body}) {
		p.lastSent = now
		p.keepSent(r)
	}
}

// keepSent remembers that the worker has copy r.
func (p *peer) keepSent(r *broker.Robots) {
	if len(p.robots) >= maxRobotsSent {
		clear(p.robots)
	}
	p.robots[r.Origin] = r
}

// takesRobots reports whether a worker's HELLO headers say it takes ROBOTS.
func takesRobots(h wire.Headers) bool {
	v, _ := h.Get(wire.RobotsHeader)
	return v == "1"
}
