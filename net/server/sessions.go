package server

import (
	"time"

	"drover/coord/broker"
	"drover/coord/id"
	"drover/net/wire"
)

// sessions is the Server's sessions part: who is connected on the peers
// and admin sockets, by routing id and by session, which live session
// holds each peer id, and their heartbeats. The reactor goroutine owns it.
type sessions struct {
	ident  map[string]id.Session // peers routing id -> session
	peer   map[id.Session]*peer
	cons   map[string]*console // admin routing id -> console session
	next   id.Session
	owners map[ownerKey]id.Session // the live session holding each peer id (auth.go)
	// lastBeatScan is when heartbeats last looked for sessions to beat
	// or drop.
	lastBeatScan time.Time
	// heard is the time up to which every message sent to the server has
	// been read (heardUntil, each step): a session is silent only if it
	// sent nothing since before then (see coord.TickHeard).
	heard time.Time
}

// peer is one session on the peers socket.
type peer struct {
	s        id.Session
	ident    []byte
	id       string // HELLO's id
	key      string // the client's public key ("" in-process or without CURVE)
	role     wire.Role
	beat     time.Duration
	lastSent time.Time
	// robots: the robots.txt copies a worker that takes them (HELLO
	// header drv.robots=1) has, by origin (robots.go); nil for others.
	robots map[string]*broker.Robots
}

// heartbeats sends HEARTBEAT to sessions the server has not sent anything
// to for an interval, and drops consoles that went silent (as of
// sess.heard, as coord.TickHeard does for peers). It scans at most
// ten times a second.
func (s *Server) heartbeats(now time.Time) {
	if now.Sub(s.sess.lastBeatScan) < 100*time.Millisecond {
		return
	}
	s.sess.lastBeatScan = now
	for _, p := range s.sess.peer {
		if now.Sub(p.lastSent) >= p.beat {
			if s.send(s.peers, p.ident, &wire.Heartbeat{}) {
				p.lastSent = now
			}
		}
	}
	liveness := time.Duration(s.c.Config().Liveness)
	for k, cs := range s.sess.cons {
		if s.sess.heard.Sub(cs.lastSeen) > cs.beat*liveness {
			delete(s.sess.cons, k)
			continue
		}
		if now.Sub(cs.lastSent) >= cs.beat {
			if s.send(s.adm.sock, cs.ident, &wire.Heartbeat{}) {
				cs.lastSent = now
			}
		}
	}
}
