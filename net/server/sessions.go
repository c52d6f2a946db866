package server

import (
	"time"

	"drover/coord/broker"
	"drover/coord/id"
	"drover/net/wire"
)

// sessions is the Server's sessions part: who is connected on the peers
// and admin sockets, by routing id and by session, which live session
// holds each peer id, and their heartbeats. Opening and ending sessions
// is the coordinator's and the dialogues' (peers.go, admin.go); this part
// keeps the transport's record. The reactor goroutine owns it.
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

	out      *sender
	liveness time.Duration // heartbeats a session may miss (coord.Config.Liveness)
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
func (ss *sessions) heartbeats(now time.Time) {
	if now.Sub(ss.lastBeatScan) < 100*time.Millisecond {
		return
	}
	ss.lastBeatScan = now
	for _, p := range ss.peer {
		if now.Sub(p.lastSent) >= p.beat {
			if ss.out.toPeer(p.ident, &wire.Heartbeat{}) {
				p.lastSent = now
			}
		}
	}
	for k, cs := range ss.cons {
		if ss.heard.Sub(cs.lastSeen) > cs.beat*ss.liveness {
			delete(ss.cons, k)
			continue
		}
		if now.Sub(cs.lastSent) >= cs.beat {
			if ss.out.toConsole(cs.ident, &wire.Heartbeat{}) {
				cs.lastSent = now
			}
		}
	}
}

// open records the session sid the coordinator opened for HELLO h from
// routing id ident (key: the client's), with the heartbeat it was given.
func (ss *sessions) open(now time.Time, sid id.Session, ident []byte, h *wire.Hello, key string, beat time.Duration) *peer {
	p := &peer{s: sid, ident: append([]byte(nil), ident...), id: h.ID, key: key, role: h.Role, beat: beat, lastSent: now}
	if h.Role == wire.RoleWorker && takesRobots(h.Headers) {
		p.robots = make(map[string]*broker.Robots) // robots.go
	}
	ss.ident[string(ident)] = sid
	ss.peer[sid] = p
	ss.owners[ownerKey{h.Role, h.ID}] = sid
	return p
}

// sendTo sends m to session sid, if it is still there, and notes the send
// (no HEARTBEAT is due before its interval).
func (ss *sessions) sendTo(now time.Time, sid id.Session, m wire.Message) {
	if p, ok := ss.peer[sid]; ok && ss.out.toPeer(p.ident, m) {
		p.lastSent = now
	}
}

// forget drops the transport's record of a session.
func (ss *sessions) forget(sid id.Session) {
	if p, ok := ss.peer[sid]; ok {
		if ss.ident[string(p.ident)] == sid {
			delete(ss.ident, string(p.ident))
		}
		if ss.owners[ownerKey{p.role, p.id}] == sid {
			delete(ss.owners, ownerKey{p.role, p.id})
		}
		delete(ss.peer, sid)
	}
}

// ownerKey is the peers socket's binding of ids to keys: the key of the
// live session of each (role, id).
type ownerKey struct {
	role wire.Role
	id   string
}

// claim checks that a HELLO's (role, id) is not held by a live session
// with another key: an id belongs to the key that holds it.
func (ss *sessions) claim(role wire.Role, peerID, key string) (id.Session, bool) {
	sid, ok := ss.owners[ownerKey{role, peerID}]
	if !ok {
		return 0, true
	}
	p, live := ss.peer[sid]
	if !live {
		delete(ss.owners, ownerKey{role, peerID})
		return 0, true
	}
	return sid, p.key == key
}
