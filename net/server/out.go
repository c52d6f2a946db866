package server

import (
	"cmp"
	"time"

	"drover/admin"
	"drover/coord"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/net/wire"

	"github.com/pebbe/zmq4"
)

// flush carries out what the coordinator returned: deferred answers, jobs
// into free slots (one JOB batch per worker), cancels, disconnects, events.
// With a store, the JOBs, CANCELs and events wait with the step's
// acknowledgements for the step's batch (durable.go).
func (s *Server) flush(now time.Time) {
	out := s.c.Ready(now)
	s.answers(out.Answers)
	s.finished(out.Finished)    // before the batch: see Options.BeforeCommit
	s.keepResults(out.Finished) // results.go: into the step's batch
	s.countDone(out.Finished)   // crawls.go: into the step's batch
	s.countPages()              // crawls.go: page budgets spent by this step's dispatches
	s.cancel(now, out.Cancels)  // before the JOBs: a new attempt never overtakes the CANCEL of the old one
	s.dispatch(now, out)
	for i := range out.Events {
		if s.opts.OnEvent == nil && (s.ev.pub == nil || !s.ev.subscribed(string(out.Events[i].Kind))) {
			continue // nobody wants it
		}
		s.noteCursor(&out.Events[i]) // results.go
		if ev := &out.Events[i]; !s.hold(held{kind: heldEvent, ev: new(*ev)}) {
			s.publish(ev)
		}
	}
	s.persist(out.Writes) // the step's held messages wait for it
	for _, cl := range out.Closes {
		p, ok := s.sess.peer[cl.Session]
		if !ok {
			continue
		}
		s.send(s.peers, p.ident, disconnect(cl.Reason))
		s.log.Info("session closed", "session", cl.Session, "reason", cl.Reason)
		s.forget(cl.Session)
	}
	if out.Changed {
		s.dirty = true
		if s.opts.OnSettled != nil {
			if s.c.Settled() {
				s.opts.OnSettled(s.c.Totals(now))
			}
		}
	}
	s.notifyConsoles(now)
}

// closeCodes is the code of the DISCONNECT the server sends for each way a
// session ends; the reason is the close reason's token.
var closeCodes = map[coord.CloseReason]wire.Code{
	coord.CloseDisconnected: wire.CodeOK,
	coord.CloseLost:         wire.CodeTimeout,
	coord.CloseSuperseded:   wire.CodeConflict,
	coord.CloseEvicted:      wire.CodeEvicted,
	coord.CloseDrained:      wire.CodeOK,
	coord.CloseShutdown:     wire.CodeUnavailable,
}

// disconnect is the DISCONNECT telling a peer its session ended for reason r.
func disconnect(r coord.CloseReason) *wire.Disconnect {
	code, ok := closeCodes[r]
	if !ok {
		code = wire.CodeInternal // a reason added to coord but not here: TestCloseCodes fails
	}
	return &wire.Disconnect{Code: code, Reason: r.String()}
}

// publish sends ev on the events socket (if anyone subscribed to its kind)
// and hands it to OnEvent.
func (s *Server) publish(ev *admin.Event) {
	if s.ev.pub != nil && s.ev.subscribed(string(ev.Kind)) {
		if frames, err := wire.EncodeEvent(*ev); err == nil {
			s.ev.published.Add(1) // first: a test may read it as soon as the event arrives
			s.sent(s.ev.pub)
			s.io.Send(s.ev.pub, zmq4.DONTWAIT, frames...) // best effort: PUB drops for slow subscribers
		}
	}
	if s.opts.OnEvent != nil {
		s.opts.OnEvent(*ev)
	}
}

// finished hands the step's finished jobs to OnFinished.
func (s *Server) finished(fs []broker.Finished) {
	if s.opts.OnFinished == nil {
		return
	}
	for _, f := range fs {
		s.opts.OnFinished(f)
	}
}

// answers sends deferred ledger answers: ANSWER for a REQUEST that waited,
// a later SUBMITTED for a SUBMIT that waited. Answers to the same request
// go in one message.
func (s *Server) answers(as []coord.Answer) {
	for i := 0; i < len(as); {
		j := i + 1
		for j < len(as) && as[j].Session == as[i].Session && as[j].ReqID == as[i].ReqID && as[j].Submit == as[i].Submit {
			j++
		}
		s.answerGroup(as[i:j])
		i = j
	}
}

func (s *Server) answerGroup(as []coord.Answer) {
	a0 := as[0]
	p, ok := s.sess.peer[a0.Session]
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
		s.patchSubmitted(s.now(), p, a0.ReqID, items) // submitmemo.go
		s.ack(p.ident, &wire.Submitted{Req: a0.ReqID, Items: items})
		return
	}
	items := make([]wire.VerdictItem, len(as))
	for i, a := range as {
		items[i] = wire.VerdictItem{Fingerprint: a.FP, Verdict: wireVerdict(a.Verdict), Reason: string(a.Reason)}
	}
	s.send(s.peers, p.ident, &wire.Answer{Req: a0.ReqID, Items: items})
}

// dispatch sends the jobs of this step, one JOB message per worker (two
// when some of its jobs must wait for the step's batch: durable.go). A JOB
// that cannot be delivered (the worker vanished, or its queue is full) ends
// the worker's session, which puts its jobs back in the queue uncharged:
// a job is never lost in the transport.
func (s *Server) dispatch(now time.Time, out *coord.Output) {
	if len(out.Jobs) == 0 {
		return
	}
	clear(s.batches)
	order := s.order[:0]
	for i := range out.Jobs {
		a := &out.Jobs[i]
		k := jobBatch{sid: a.Session, wait: !s.leavesNow(a)} // durable.go
		msg, ok := s.batches[k]
		if !ok {
			msg = newJobMsg()
			s.batches[k] = msg
			order = append(order, k)
		}
		msg.Jobs = append(msg.Jobs, wire.JobItem{
			JobID: uint64(a.Job), Attempt: uint32(a.Attempt), Key: a.Spec.Key,
			Headers: toWireHeaders(a.Spec.Headers), Payload: a.Spec.Payload,
		})
	}
	for _, k := range order {
		if !k.wait || !s.hold(held{kind: heldJob, sid: k.sid, msg: s.batches[k]}) {
			s.sendJob(now, k.sid, s.batches[k])
		}
	}
	s.order = order
}

// jobBatch is one JOB message of a step: to session sid, sent at once or
// held for the step's batch (wait).
type jobBatch struct {
	sid  id.Session
	wait bool
}

// sendJob sends a JOB to session sid. A session that ended meanwhile (its
// JOB held for the store) is not sent anything: its jobs went back to the
// queue when it ended, and this attempt never left.
func (s *Server) sendJob(now time.Time, sid id.Session, m wire.Message) {
	p, ok := s.sess.peer[sid]
	if !ok {
		if s.dur == nil {
			s.undeliverable(now, sid)
		}
		return
	}
	if !s.send(s.peers, p.ident, m) {
		s.undeliverable(now, sid)
		return
	}
	p.lastSent = now
}

// newJobMsg makes an empty JOB with room for one job in the same
// allocation: a JOB goes to its worker as it is (package pipe), so it
// cannot be reused, and most carry one job.
func newJobMsg() *wire.Job {
	b := &struct {
		m   wire.Job
		one [1]wire.JobItem
	}{}
	b.m.Jobs = b.one[:0]
	return &b.m
}

// undeliverable ends a worker session whose JOB could not be sent.
func (s *Server) undeliverable(now time.Time, sid id.Session) {
	s.log.Warn("job undeliverable: ending the worker's session, its jobs go back to the queue", "session", sid)
	s.c.Disconnect(now, sid)
	s.forget(sid)
}

func toWireHeaders(h map[string]string) wire.Headers {
	if len(h) == 0 {
		return nil
	}
	out := make(wire.Headers, 0, len(h))
	for k, v := range h {
		out = append(out, wire.Header{Name: k, Value: v})
	}
	return out
}

// heartbeats sends HEARTBEAT to sessions the server has not sent anything
// to for an interval, and drops consoles that went silent. It scans at most
// ten times a second.
func (s *Server) heartbeats(now time.Time) {
	if now.Sub(s.lastBeatScan) < 100*time.Millisecond {
		return
	}
	s.lastBeatScan = now
	for _, p := range s.sess.peer {
		if now.Sub(p.lastSent) >= p.beat {
			if s.send(s.peers, p.ident, &wire.Heartbeat{}) {
				p.lastSent = now
			}
		}
	}
	liveness := time.Duration(s.c.Config().Liveness)
	for k, cs := range s.sess.cons {
		if now.Sub(cs.lastSeen) > cs.beat*liveness {
			delete(s.sess.cons, k)
			continue
		}
		if now.Sub(cs.lastSent) >= cs.beat {
			if s.send(s.admin, cs.ident, &wire.Heartbeat{}) {
				cs.lastSent = now
			}
		}
	}
}

// cancel tells each worker to stop the runs an operator took from it, one
// CANCEL per worker. Their RESULTs, when they come, are answered stale.
func (s *Server) cancel(now time.Time, cs []coord.Cancel) {
	for i := 0; i < len(cs); {
		j := i + 1
		for j < len(cs) && cs[j].Session == cs[i].Session {
			j++
		}
		msg := &wire.Cancel{Reason: cmp.Or(cs[i].Reason, "requeued by an operator")}
		for _, c := range cs[i:j] {
			msg.Runs = append(msg.Runs, toWireRun(c.Run))
		}
		if !s.cancelWaits(msg) || !s.hold(held{kind: heldOther, sid: cs[i].Session, msg: msg}) {
			if p, ok := s.sess.peer[cs[i].Session]; ok && s.send(s.peers, p.ident, msg) {
				p.lastSent = now
			}
		}
		i = j
	}
}
