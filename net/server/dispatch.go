package server

import (
	"cmp"
	"time"

	"drover/coord"
	"drover/coord/id"
	"drover/net/wire"
)

// dispatcher is the Server's dispatch I/O part: it turns the jobs and
// cancels of a step into JOB and CANCEL messages, one per worker, sent at
// once or held for the step's batch (durable.go). The reactor goroutine
// owns it; its fields are scratch reused from step to step.
type dispatcher struct {
	batches map[jobBatch]*wire.Job // the step's JOB messages
	order   []jobBatch             // the order they were made in
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
	clear(s.disp.batches)
	order := s.disp.order[:0]
	for i := range out.Jobs {
		a := &out.Jobs[i]
		k := jobBatch{sid: a.Session, wait: !s.leavesNow(a)} // durable.go
		msg, ok := s.disp.batches[k]
		if !ok {
			msg = newJobMsg()
			s.disp.batches[k] = msg
			order = append(order, k)
		}
		if a.Robots != nil {
			s.sendRobots(now, a) // robots.go: before the JOB
		}
		msg.Jobs = append(msg.Jobs, wire.JobItem{
			JobID: uint64(a.Job), Attempt: uint32(a.Attempt), Key: a.Spec.Key,
			Headers: wire.HeadersOf(a.Spec.Headers), Payload: a.Spec.Payload,
		})
	}
	for _, k := range order {
		if !k.wait || !s.hold(held{kind: heldJob, sid: k.sid, msg: s.disp.batches[k]}) {
			s.sendJob(now, k.sid, s.disp.batches[k])
		}
	}
	s.disp.order = order
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
	if !s.out.toPeer(p.ident, m) {
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
	s.sess.forget(sid)
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
			s.sess.sendTo(now, cs[i].Session, msg)
		}
		i = j
	}
}
