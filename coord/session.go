package coord

import (
	"container/heap"
	"fmt"
	"time"

	"drover/coord/broker"
	"drover/coord/id"
)

// Hello is what a session announces when it connects (the wire HELLO).
type Hello struct {
	Role Role
	// ID is the stable worker or producer id; a worker that reconnects with
	// the same ID replaces its old registration.
	ID      string
	Host    string
	Headers map[string]string
	Slots   int           // workers: concurrent jobs accepted (default 1)
	Beat    time.Duration // proposed heartbeat interval; 0 = the coordinator's
	// Held lists the runs (job and attempt) a reconnecting worker still
	// holds: running, or finished with the result not yet acknowledged.
	Held []broker.Run
}

// Welcome is the coordinator's answer to a Hello.
type Welcome struct {
	Heartbeat time.Duration // the interval both sides use from now on
	Liveness  int
	// Cancel lists runs a reconnecting worker announced as held that are
	// no longer its own (another attempt, reassigned, finished or unknown):
	// it must drop them.
	Cancel []broker.Run
}

// session is one connected peer.
type session struct {
	id       id.Session
	role     Role
	name     string // stable id from HELLO
	detail   string // "session sN", the Detail of its keys' events (made once)
	beat     time.Duration
	deadline time.Time // silent past this: dead
	pushed   bool      // has an entry in the liveness heap
	since    time.Time
}

// Hello registers session s. It must be the session's first message; a
// second Hello from the same session is an error. A worker is registered in
// the broker with its headers and slots, and reconciled with the jobs it says
// it still holds.
func (c *Coordinator) Hello(now time.Time, s id.Session, h Hello) (Welcome, error) {
	if s == 0 {
		return Welcome{}, errorf(ErrInvalid, "hello: session 0 is not a valid session")
	}
	if _, dup := c.sessions[s]; dup {
		return Welcome{}, errorf(ErrConflict, "hello: session %d already said hello", s)
	}
	switch h.Role {
	case RoleProducer, RoleWorker, RoleConsole:
	default:
		return Welcome{}, errorf(ErrInvalid, "hello: role %v: want producer, worker or console", h.Role)
	}
	if h.ID == "" {
		return Welcome{}, errorf(ErrInvalid, "hello: empty id: want a stable worker or producer id")
	}
	// At most one live session per (role, id): a newer HELLO supersedes
	// the older session. For a worker the broker's Register below moves the
	// jobs the new HELLO lists as held to the new session and requeues the
	// others uncharged (the worker is alive: it reconnected).
	nk := nameKey{h.Role, h.ID}
	if old, ok := c.byName[nk]; ok {
		c.supersede(now, old)
	}
	beat := h.Beat
	if beat == 0 {
		beat = c.cfg.Heartbeat
	}
	beat = min(max(beat, c.cfg.MinHeartbeat), c.cfg.MaxHeartbeat)
	if h.Role == RoleWorker {
		slots := h.Slots
		if slots == 0 {
			slots = 1
		}
		if slots < 0 {
			return Welcome{}, errorf(ErrInvalid, "hello: slots %d: want >= 1", h.Slots)
		}
		err := c.brk.Register(now, s, broker.WorkerInfo{ID: h.ID, Host: h.Host, Headers: h.Headers, Slots: slots}, h.Held)
		if err != nil {
			return Welcome{}, fmt.Errorf("hello: %w", err)
		}
		// Runs of other workers an adopted unrecorded attempt superseded.
		for _, sr := range c.brk.TakeSuperseded(nil) {
			c.cancels = append(c.cancels, Cancel{Session: sr.Session, Run: sr.Run, Reason: "superseded by a later attempt dispatched before the coordinator restarted"})
		}
	}
	ss := &session{id: s, role: h.Role, name: h.ID, detail: "session " + sessionName(s), beat: beat, since: now}
	c.sessions[s] = ss
	c.byName[nk] = s
	c.touch(now, ss)
	w := Welcome{Heartbeat: beat, Liveness: c.cfg.Liveness}
	for _, r := range h.Held {
		if h.Role != RoleWorker || !c.brk.Holds(s, r) {
			w.Cancel = append(w.Cancel, r)
		}
	}
	return w, nil
}

// nameKey is a session's stable identity: role and id from its HELLO.
type nameKey struct {
	role Role
	name string
}

// supersede ends session old because a newer session took its identity.
// Its ledger keys are released; its broker registration is left for the
// new HELLO's Register to replace.
func (c *Coordinator) supersede(now time.Time, old id.Session) {
	if _, ok := c.endSession(now, old); ok {
		c.closes = append(c.closes, Close{Session: old, Reason: CloseSuperseded})
	}
}

// endSession forgets session s, releases its ledger keys and drops what
// it had pending; it returns the session, ok false when s is unknown.
func (c *Coordinator) endSession(now time.Time, s id.Session) (*session, bool) {
	ss, ok := c.sessions[s]
	if !ok {
		return nil, false
	}
	c.forgetSession(ss)
	c.led.Release(now, s)
	c.dropPending(s)
	return ss, true
}

// forgetSession removes ss from the session tables.
func (c *Coordinator) forgetSession(ss *session) {
	delete(c.sessions, ss.id)
	c.grants.drop(ss.id)
	nk := nameKey{ss.role, ss.name}
	if c.byName[nk] == ss.id {
		delete(c.byName, nk)
	}
}

// Known reports whether session s said hello and is still alive.
func (c *Coordinator) Known(s id.Session) bool {
	_, ok := c.sessions[s]
	return ok
}

// RoleOf returns the role session s announced, or 0 if it is unknown.
func (c *Coordinator) RoleOf(s id.Session) Role {
	if ss, ok := c.sessions[s]; ok {
		return ss.role
	}
	return 0
}

// Touch records traffic from session s: any message counts as a heartbeat.
// It reports whether the session is known.
func (c *Coordinator) Touch(now time.Time, s id.Session) bool {
	ss, ok := c.sessions[s]
	if ok {
		c.touch(now, ss)
	}
	return ok
}

func (c *Coordinator) touch(now time.Time, ss *session) {
	if ss.role == RoleWorker {
		c.brk.Seen(now, ss.id) // the console's heartbeat age
	}
	d := now.Add(ss.beat * time.Duration(c.cfg.Liveness))
	if d.After(ss.deadline) {
		ss.deadline = d
		c.live.note(ss)
	}
}

// Disconnect ends session s cleanly (it said DISCONNECT): requested keys pass
// to their next waiters, and a worker's jobs go back to the queue uncharged.
func (c *Coordinator) Disconnect(now time.Time, s id.Session) {
	if _, ok := c.sessions[s]; ok {
		c.dropSession(now, s, CloseDisconnected)
	}
}

// dropSession forgets s. A session that died (CloseLost) has its jobs
// charged.
func (c *Coordinator) dropSession(now time.Time, s id.Session, why CloseReason) {
	lost := why == CloseLost
	ss, ok := c.endSession(now, s)
	if !ok {
		return
	}
	if ss.role == RoleWorker {
		if lost {
			c.brk.Lost(now, s)
		} else {
			c.brk.Left(now, s)
		}
	}
	c.closes = append(c.closes, Close{Session: s, Reason: why})
}

// workerSession returns the live session of the worker with stable id name.
func (c *Coordinator) workerSession(name string) (id.Session, bool) {
	s, ok := c.byName[nameKey{RoleWorker, name}]
	return s, ok
}

// Sessions returns how many sessions are alive.
func (c *Coordinator) Sessions() int { return len(c.sessions) }

// livenessHeap orders sessions by deadline. Touch only moves a session's
// deadline later, so entries go stale instead of being fixed up: popExpired
// re-checks the session's real deadline and re-pushes it when it moved.
type livenessHeap []liveEntry

type liveEntry struct {
	s        id.Session
	deadline time.Time
}

func (h livenessHeap) Len() int           { return len(h) }
func (h livenessHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h livenessHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *livenessHeap) Push(x any)        { *h = append(*h, x.(liveEntry)) }
func (h *livenessHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// note records ss's deadline. To keep the heap small it only pushes when the
// session has no entry at or before its new deadline; the lazy check in
// popExpired handles moved deadlines.
func (h *livenessHeap) note(ss *session) {
	if ss.pushed {
		return
	}
	ss.pushed = true
	heap.Push(h, liveEntry{s: ss.id, deadline: ss.deadline})
}

func (h *livenessHeap) next() (time.Time, bool) {
	if len(*h) == 0 {
		return time.Time{}, false
	}
	return (*h)[0].deadline, true
}

// popExpired returns a session whose deadline has passed, if any.
func (h *livenessHeap) popExpired(now time.Time, sessions map[id.Session]*session) (id.Session, bool) {
	for len(*h) > 0 && !(*h)[0].deadline.After(now) {
		e := heap.Pop(h).(liveEntry)
		ss, ok := sessions[e.s]
		if !ok {
			continue // gone already
		}
		if ss.deadline.After(now) {
			heap.Push(h, liveEntry{s: ss.id, deadline: ss.deadline}) // touched since: re-arm
			continue
		}
		ss.pushed = false
		return e.s, true
	}
	return 0, false
}
