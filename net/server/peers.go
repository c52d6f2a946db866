package server

import (
	"errors"
	"log/slog"
	"slices"
	"time"

	"drover/auth"
	"drover/coord"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"
	"drover/net/internal/pipe"
	"drover/net/wire"
)

// peerDialogue is the Server's peers part: the messages of live sessions
// of workers and producers into the coordinator (HELLO, REQUEST, QUEUE,
// DONE, SUBMIT, RESULT, PROGRESS, ROBOTS), and the answers out, held for
// the store when they promise durability. It is given the coordinator, the
// sessions, the sender, the store I/O (nil without a store), the reactor's
// scratch, and the parts a message writes to (crawls, submit memos,
// robots.txt copies). Server decodes, checks rights and routes to it.
type peerDialogue struct {
	c      *coord.Coordinator
	log    *slog.Logger
	name   string // Options.Server, in WELCOME
	sess   *sessions
	out    *sender
	dur    *durable // nil without a store
	r      *reactor // the step's scratch and interner
	crawls *crawlSet
	memo   *submitMemo
	rob    *robotsWrites
	// workerHello is told of each worker registered, after its WELCOME
	// (the cluster drains one it keeps drained: clusterworkers.go).
	workerHello func(now time.Time, worker string)
}

// decode splits the routing id off and decodes the rest, answering ERROR for
// a message that does not decode (still a sign of life from its session:
// stillAlive). user is the sender's key.
func (s *Server) decode(w sockWriter, frames [][]byte, user string) ([]byte, wire.Message, bool) {
	if len(frames) < 2 {
		s.out.countMalformed()
		return nil, nil, false // no routing id or no content: nobody to answer
	}
	ident := frames[0]
	m, err := s.r.dec.Decode(frames[1:])
	if err != nil {
		var we *wire.Error
		switch {
		case errors.As(err, &we) && we.Code == wire.CodeVersion:
			s.out.refuseVersion(w, ident, frames[1], we)
		case we != nil:
			s.out.reject(w, ident, we.Req, we.Code, "%s", we.Msg)
		default:
			s.out.reject(w, ident, 0, wire.CodeMalformed, "%v", err)
		}
		s.stillAlive(w, ident, user)
		return ident, nil, false
	}
	return ident, m, true
}

// stillAlive notes that the session behind ident, whose message was
// refused, is there: any message is a sign of life (docs/PROTOCOL.md §9),
// and a refused one must not end the session (§7).
func (s *Server) stillAlive(w sockWriter, ident []byte, user string) {
	if _, listed := s.auth.entryOf(user); !listed {
		return // a revoked key's messages keep nothing alive
	}
	now := s.now()
	if w == onAdmin {
		if cs, ok := s.sess.cons[string(ident)]; ok {
			cs.lastSeen = now
		}
		return
	}
	if sid, ok := s.sess.ident[string(ident)]; ok && !s.c.Touch(now, sid) {
		s.sess.forget(sid)
	}
}

// onPeer handles one message from the peers socket.
func (s *Server) onPeer(frames [][]byte, user string) {
	ident, m, ok := s.decode(onPeers, frames, user)
	if !ok {
		return
	}
	s.onPeerValue(ident, m, user)
}

// onPeerValue handles one message from the peer with routing id ident:
// decoded from the peers socket, or handed over by a pipe client. user is
// the sender's key (the message's User-Id; "" in-process or without
// CURVE).
func (s *Server) onPeerValue(ident []byte, m wire.Message, user string) {
	now := s.now()
	sid, known := s.sess.ident[string(ident)]
	e, listed := s.auth.entryOf(user)
	if !listed {
		if known {
			// The keys changed and this message came before
			// recheck: the session ends the same way.
			s.auth.endPeer(now, sid)
		}
		s.revokedMessage(onPeers, ident, m.RequestID(), user)
		return
	}
	if h, isHello := m.(*wire.Hello); isHello {
		if !e.Role.MayHello(auth.Peers, h.Role) {
			s.forbid(onPeers, ident, h.Req, e, "HELLO as %s refused: this key's role is %s", h.Role, e.Role)
			return
		}
		s.pd.hello(now, ident, h, user)
		return
	}
	if !e.Role.May(auth.Peers, m.Command()) {
		s.forbid(onPeers, ident, m.RequestID(), e, "%s refused: this key's role is %s", m.Command(), e.Role)
		return
	}
	if !known {
		if _, isDisc := m.(*wire.Disconnect); isDisc {
			return
		}
		s.out.reject(onPeers, ident, m.RequestID(), wire.CodeHelloRequired, "%s before HELLO: send HELLO first", m.Command())
		return
	}
	if !s.c.Touch(now, sid) {
		s.sess.forget(sid)
		s.out.reject(onPeers, ident, m.RequestID(), wire.CodeHelloRequired, "session expired: send HELLO again")
		return
	}
	// Taken in now, parked or not: the step's budget counts it.
	s.r.stepItems += itemsOf(m)
	// donelookup.go: evicted done keys back from the store first
	if s.dur != nil && s.dur.failed == nil && s.dur.look.park(ident, sid, m, s.stats.Steps) {
		return
	}
	s.pd.message(now, ident, sid, m)
}

// message hands a message of live session sid to the coordinator (at
// once, or once the lookups it waited for are done: donelookup.go).
func (d *peerDialogue) message(now time.Time, ident []byte, sid id.Session, m wire.Message) {
	p := d.sess.peer[sid]
	switch m := m.(type) {
	case *wire.Heartbeat:
	case *wire.Disconnect:
		d.c.Disconnect(now, sid)
		d.sess.forget(sid)
		if p != nil {
			d.memo.drop(memoName(p)) // it said goodbye: it resends nothing
		}
	case *wire.Request:
		vs, err := d.c.Request(now, sid, m.Req, m.Keys, d.r.scratch.keyVerdicts[:0])
		d.verdicts(p, m.Req, vs, err, false)
		d.r.scratch.keyVerdicts = reuse(vs)
	case *wire.Queue:
		vs, err := d.c.Queue(now, sid, m.Keys, d.r.scratch.keyVerdicts[:0])
		d.verdicts(p, m.Req, vs, err, true)
		d.r.scratch.keyVerdicts = reuse(vs)
	case *wire.Done:
		items := make([]coord.DoneItem, len(m.Items))
		for i, it := range m.Items {
			items[i] = coord.DoneItem{Key: it.Key, Failed: it.Outcome == wire.DoneFailed}
		}
		vs, err := d.c.Done(now, sid, items, nil)
		d.verdicts(p, m.Req, vs, err, true)
	case *wire.Submit:
		d.submit(now, p, m)
	case *wire.Result:
		d.result(now, p, m)
	case *wire.Progress:
		d.c.Progress(now, sid, broker.Run{Job: broker.JobID(m.JobID), Attempt: int(m.Attempt)}, m.Text)
	case *wire.Robots:
		d.robots(now, p, m) // robots.go
	default:
		d.out.reject(onPeers, ident, m.RequestID(), wire.CodeForbidden, "%s is not accepted on the peers socket", m.Command())
	}
}

// hello opens a session (or replaces the one this routing id had); key is
// the client's.
func (d *peerDialogue) hello(now time.Time, ident []byte, h *wire.Hello, key string) {
	var role coord.Role
	switch h.Role {
	case wire.RoleWorker:
		role = coord.RoleWorker
	case wire.RoleProducer:
		role = coord.RoleProducer
	default:
		d.out.reject(onPeers, ident, h.Req, wire.CodeForbidden, "role %s on the peers socket: consoles use the admin socket", h.Role)
		return
	}
	if holder, ok := d.sess.claim(h.Role, h.ID, key); !ok {
		// The id belongs to the key that holds it: another key may not
		// take it over (supersede it) while that session lives.
		d.log.Warn("HELLO refused: the id is held by another key", "role", h.Role, "id", h.ID, "holder", holder, "key", key)
		d.out.reject(onPeers, ident, h.Req, wire.CodeConflict, "%s id %q is held by a live session of another key", h.Role, h.ID)
		return
	}
	if old, ok := d.sess.ident[string(ident)]; ok {
		// The same connection says HELLO again: the old session ends
		// cleanly; a worker's held jobs are reconciled by the new HELLO.
		d.c.Disconnect(now, old)
		d.sess.forget(old)
	}
	d.sess.next++
	sid := d.sess.next
	held := make([]broker.Run, len(h.Held))
	for i, r := range h.Held {
		held[i] = broker.Run{Job: broker.JobID(r.JobID), Attempt: int(r.Attempt)}
	}
	wel, err := d.c.Hello(now, sid, coord.Hello{
		Role: role, ID: h.ID, Host: h.Host, Headers: h.Headers.Map(),
		Slots: int(h.Slots), Beat: h.Heartbeat, Held: held,
	})
	if err != nil {
		d.out.reject(onPeers, ident, h.Req, errorCode(err), "%v", err)
		return
	}
	p := d.sess.open(now, sid, ident, h, key, wel.Heartbeat)
	d.out.toPeer(p.ident, &wire.Welcome{
		Req: h.Req, Session: uint64(sid), Heartbeat: wel.Heartbeat, Liveness: uint16(wel.Liveness),
		Slots: h.Slots, Server: d.name, Cancel: toWireRuns(wel.Cancel),
		Limits: wire.Limits{MaxBody: wire.MaxBody, MaxBatch: wire.MaxBatch, MaxPayload: wire.MaxPayload},
	})
	d.log.Info("session opened", "session", sid, "role", h.Role, "id", h.ID, "host", h.Host, "slots", h.Slots, "held", len(h.Held))
	if role == coord.RoleWorker && d.workerHello != nil {
		d.workerHello(now, h.ID)
	}
}

func toWireRuns(rs []broker.Run) []wire.Run {
	if len(rs) == 0 {
		return nil
	}
	out := make([]wire.Run, len(rs))
	for i, r := range rs {
		out[i] = toWireRun(r)
	}
	return out
}

func toWireRun(r broker.Run) wire.Run {
	return wire.Run{JobID: uint64(r.Job), Attempt: uint32(r.Attempt)}
}

func wireVerdict(v ledger.Verdict) wire.Verdict {
	switch v {
	case ledger.OK:
		return wire.VerdictOK
	case ledger.No:
		return wire.VerdictNo
	case ledger.Wait:
		return wire.VerdictWait
	}
	return wire.VerdictError
}

func reasonText(r ledger.Reason, detail string) string {
	if detail == "" {
		return string(r)
	}
	return wire.Clip(string(r)+": "+detail, wire.MaxReason)
}

// verdicts answers REQUEST, QUEUE or DONE with VERDICTS; durable says the
// answer promises durability (QUEUE, DONE) and waits for the step's batch.
func (d *peerDialogue) verdicts(p *peer, req uint64, vs []coord.Verdict, err error, durable bool) {
	if err != nil {
		d.out.reject(onPeers, p.ident, req, errorCode(err), "%v", err)
		return
	}
	// The items are encoded and sent at once, unless the answer waits for
	// the store (ack) or goes to a pipe client as a value: only then are
	// they the message's own.
	kept := durable && d.dur != nil || d.out.isPipe(p.ident)
	var items []wire.VerdictItem
	if kept {
		items = make([]wire.VerdictItem, len(vs))
	} else {
		items = slices.Grow(d.r.scratch.items[:0], len(vs))[:len(vs)]
	}
	for i, v := range vs {
		items[i] = wire.VerdictItem{Fingerprint: v.FP, Verdict: wireVerdict(v.Verdict), Reason: reasonText(v.Reason, v.Detail)}
	}
	if durable {
		d.ack(p.ident, &wire.Verdicts{Req: req, Items: items})
	} else {
		d.out.toPeer(p.ident, &wire.Verdicts{Req: req, Items: items})
	}
	if !kept {
		d.r.scratch.items = reuse(items)
	}
}

// answers sends deferred ledger answers: ANSWER for a REQUEST that waited,
// a later SUBMITTED for a SUBMIT that waited. Answers to the same request
// go in one message.
func (d *peerDialogue) answers(now time.Time, as []coord.Answer) {
	for i := 0; i < len(as); {
		j := i + 1
		for j < len(as) && as[j].Session == as[i].Session && as[j].ReqID == as[i].ReqID && as[j].Submit == as[i].Submit {
			j++
		}
		d.answerGroup(now, as[i:j])
		i = j
	}
}

func (d *peerDialogue) answerGroup(now time.Time, as []coord.Answer) {
	a0 := as[0]
	p, ok := d.sess.peer[a0.Session]
	if !ok || a0.ReqID == 0 {
		return // the session is gone, or nobody asked (links of a result)
	}
	if a0.Submit {
		items := make([]wire.SubmittedItem, len(as))
		for i, a := range as {
			it := wire.SubmittedItem{JobID: uint64(a.Job), Fingerprint: a.FP, Reason: string(a.Reason), Status: wire.SubmitDuplicate}
			switch {
			case a.Job != 0:
				it.Status = wire.SubmitAccepted
			case wireVerdict(a.Verdict) == wire.VerdictError:
				it.Status = wire.SubmitError
			}
			items[i] = it
		}
		d.patchSubmitted(now, p, a0.ReqID, items) // submitmemo.go
		d.ack(p.ident, &wire.Submitted{Req: a0.ReqID, Items: items})
		return
	}
	items := make([]wire.VerdictItem, len(as))
	for i, a := range as {
		items[i] = wire.VerdictItem{Fingerprint: a.FP, Verdict: wireVerdict(a.Verdict), Reason: string(a.Reason)}
	}
	d.out.toPeer(p.ident, &wire.Answer{Req: a0.ReqID, Items: items})
}

// reuse empties a scratch slice for the next use, dropping what its
// elements referred to.
func reuse[T any](v []T) []T {
	clear(v)
	return v[:0]
}

func (d *peerDialogue) submit(now time.Time, p *peer, m *wire.Submit) {
	specs := make([]coord.JobSpec, len(m.Jobs))
	for i := range m.Jobs {
		specs[i] = d.r.strs.spec(&m.Jobs[i], true) // compact.go
		d.crawls.seedPayload(&specs[i])            // crawls.go
	}
	vs, err := d.c.Submit(now, p.s, m.Req, specs, nil)
	if err != nil {
		d.out.reject(onPeers, p.ident, m.Req, errorCode(err), "%v", err)
		return
	}
	items := make([]wire.SubmittedItem, len(vs))
	for i, v := range vs {
		it := wire.SubmittedItem{JobID: uint64(v.Job), Fingerprint: v.FP, Reason: reasonText(v.Reason, v.Detail)}
		switch v.Status {
		case coord.Accepted:
			it.Status = wire.SubmitAccepted
		case coord.Duplicate:
			it.Status = wire.SubmitDuplicate
		case coord.Waiting:
			it.Status = wire.SubmitWait
		default:
			it.Status = wire.SubmitError
		}
		items[i] = it
	}
	d.patchSubmitted(now, p, m.Req, items) // submitmemo.go: a resent request's statuses are its first send's
	d.ack(p.ident, &wire.Submitted{Req: m.Req, Items: items})
}

func (d *peerDialogue) result(now time.Time, p *peer, m *wire.Result) {
	// Scratch reused across results: the core copies what it keeps.
	rs := slices.Grow(d.r.scratch.results[:0], len(m.Items))[:len(m.Items)]
	specs := d.r.scratch.specs[:0]
	defer func() {
		clear(rs)
		clear(specs)
		d.r.scratch.results, d.r.scratch.specs = rs[:0], specs[:0]
	}()
	for i := range m.Items {
		it := &m.Items[i]
		r := coord.Result{Run: broker.Run{Job: broker.JobID(it.JobID), Attempt: int(it.Attempt)}, Outcome: broker.Outcome{RetryAfter: it.RetryAfter, Error: it.Error, Output: it.Output}}
		switch it.Outcome {
		case wire.OutcomeOK:
			r.Outcome.Kind = broker.OK
		case wire.OutcomeInternal:
			r.Outcome.Kind = broker.Internal
		case wire.OutcomeExternal:
			r.Outcome.Kind = broker.External
		case wire.OutcomeThrottled:
			r.Outcome.Kind = broker.Throttled
		}
		if len(it.Links) > 0 {
			start := len(specs)
			wired := !pipe.IsClient(p.ident) // an in-process worker's links alias no message
			for j := range it.Links {
				specs = append(specs, d.r.strs.spec(&it.Links[j], wired)) // compact.go
			}
			r.Discovered = specs[start:len(specs):len(specs)]
		}
		rs[i] = r
	}
	vs, err := d.c.Results(now, p.s, rs, d.r.scratch.verdicts[:0])
	d.r.scratch.verdicts = vs[:0]
	if err != nil {
		d.out.reject(onPeers, p.ident, m.Req, errorCode(err), "%v", err)
		return
	}
	reply := newResultOK(m.Req, len(vs))
	items := reply.Items
	for i, v := range vs {
		it := wire.ResultOKItem{JobID: uint64(v.Run.Job), Attempt: uint32(v.Run.Attempt), Status: wire.ResultRecorded}
		switch v.Status {
		case broker.Recorded:
			it.Accepted, it.Duplicates = uint32(v.Accepted), uint32(v.Duplicates)
		case broker.Again:
		case broker.Unknown:
			it.Status = wire.ResultUnknown
		default:
			it.Status = wire.ResultStale
		}
		items[i] = it
	}
	d.ack(p.ident, reply)
}

// newResultOK makes a RESULT-OK for n results. Each message goes to its
// peer as it is (package pipe), so it cannot be reused; one result, the
// usual case, takes one allocation with its item.
func newResultOK(req uint64, n int) *wire.ResultOK {
	if n == 1 {
		b := &struct {
			m   wire.ResultOK
			one [1]wire.ResultOKItem
		}{}
		b.m = wire.ResultOK{Req: req, Items: b.one[:]}
		return &b.m
	}
	return &wire.ResultOK{Req: req, Items: make([]wire.ResultOKItem, n)}
}
