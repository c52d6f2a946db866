package server

import (
	"cmp"
	"log/slog"
	"time"

	"drover/coord"
	"drover/coord/id"
	"drover/net/wire"
)

// dispatcher is the Server's dispatch I/O part: it turns the jobs and
// cancels of a step into JOB and CANCEL messages, one per worker (each JOB
// after the robots.txt copy its worker lacks: robots.go), sent at once or
// held for the step's batch (durable.go). The reactor goroutine owns it.
type dispatcher struct {
	batches map[jobBatch]*wire.Job // the step's JOB messages (scratch)
	order   []jobBatch             // the order they were made in (scratch)

	c    *coord.Coordinator // ends the session of a worker a JOB cannot reach
	sess *sessions
	out  *sender
	dur  *durable // nil without a store
	log  *slog.Logger
}

// dispatch sends the jobs of this step, one JOB message per worker (two
// when some of its jobs must wait for the step's batch: durable.go). A JOB
// that cannot be delivered (the worker vanished, or its queue is full) ends
// the worker's session, which puts its jobs back in the queue uncharged:
// a job is never lost in the transport.
func (d *dispatcher) dispatch(now time.Time, out *coord.Output) {
	if len(out.Jobs) == 0 {
		return
	}
	clear(d.batches)
	order := d.order[:0]
	for i := range out.Jobs {
		a := &out.Jobs[i]
		k := jobBatch{sid: a.Session, wait: !d.dur.leavesNow(a)} // durable.go
		msg, ok := d.batches[k]
		if !ok {
			msg = newJobMsg()
			d.batches[k] = msg
			order = append(order, k)
		}
		if a.Robots != nil {
			d.sendRobots(now, a) // robots.go: before the JOB
		}
		msg.Jobs = append(msg.Jobs, wire.JobItem{
			JobID: uint64(a.Job), Attempt: uint32(a.Attempt), Key: a.Spec.Key,
			Headers: wire.HeadersOf(a.Spec.Headers), Payload: a.Spec.Payload,
		})
	}
	for _, k := range order {
		if !k.wait || !d.dur.hold(held{kind: heldJob, sid: k.sid, msg: d.batches[k]}) {
			d.sendJob(now, k.sid, d.batches[k])
		}
	}
	d.order = order
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
func (d *dispatcher) sendJob(now time.Time, sid id.Session, m wire.Message) {
	p, ok := d.sess.peer[sid]
	if !ok {
		if d.dur == nil {
			d.undeliverable(now, sid)
		}
		return
	}
	if !d.out.toPeer(p.ident, m) {
		d.undeliverable(now, sid)
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
func (d *dispatcher) undeliverable(now time.Time, sid id.Session) {
	d.log.Warn("job undeliverable: ending the worker's session, its jobs go back to the queue", "session", sid)
	d.c.Disconnect(now, sid)
	d.sess.forget(sid)
}

// cancel tells each worker to stop the runs an operator took from it, one
// CANCEL per worker. Their RESULTs, when they come, are answered stale.
func (d *dispatcher) cancel(now time.Time, cs []coord.Cancel) {
	for i := 0; i < len(cs); {
		j := i + 1
		for j < len(cs) && cs[j].Session == cs[i].Session {
			j++
		}
		msg := &wire.Cancel{Reason: cmp.Or(cs[i].Reason, "requeued by an operator")}
		for _, c := range cs[i:j] {
			msg.Runs = append(msg.Runs, toWireRun(c.Run))
		}
		if !d.dur.cancelWaits(msg) || !d.dur.hold(held{kind: heldOther, sid: cs[i].Session, msg: msg}) {
			d.sess.sendTo(now, cs[i].Session, msg)
		}
		i = j
	}
}
