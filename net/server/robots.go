package server

import (
	"bytes"
	"time"

	"drover/coord/broker"
	"drover/net/wire"
)

// robots.txt for the fleet (PROTOCOL.md §6.18): a worker's ROBOTS report
// goes to the coordinator, which keeps it in the host's record; a JOB of
// that origin is preceded by the copy, for a worker that announced it
// takes them (HELLO header drv.robots=1) and was not sent this copy yet.

// maxRobotsSent bounds the copies remembered as sent to one worker: past
// it the memory starts over, and a copy may be sent to it again.
const maxRobotsSent = 1024

// robotsReport hands a worker's ROBOTS to the coordinator; a report the
// coordinator refuses (an origin the worker holds no job of, a bad origin)
// is answered ERROR and counted.
func (s *Server) robotsReport(now time.Time, p *peer, m *wire.Robots) {
	r := broker.Robots{Origin: m.Origin, Body: bytes.Clone(m.Content), CrawlDelay: m.CrawlDelay, Expires: now.Add(m.TTL)}
	kept, err := s.c.Robots(now, p.s, r)
	if err != nil {
		s.reject(onPeers, p.ident, m.Req, errorCode(err), "ROBOTS: %v", err)
		return
	}
	if p.robots != nil && kept != nil {
		p.keepSent(kept) // it has the file: no need to send it back
	}
}

// sendRobots sends session a.Session the robots.txt copy its job carries,
// before its JOB, unless the worker does not take copies or has this one.
func (s *Server) sendRobots(now time.Time, a *broker.Assignment) {
	p, ok := s.sess.peer[a.Session]
	if !ok || p.robots == nil {
		return
	}
	r := a.Robots
	if p.robots[r.Origin] == r {
		return
	}
	ttl := max(r.TTL(now), time.Millisecond)
	if s.send(s.peers, p.ident, &wire.Robots{Origin: r.Origin, TTL: ttl, CrawlDelay: r.CrawlDelay, Content: r.Body}) {
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
