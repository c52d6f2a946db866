package server

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"drover/admin"
	"drover/coord"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/net/wire"
	"drover/store"
)

// Durability (issues 7 and 14), the transport's half. With Options.Store,
// every flush turns the step's Output.Writes into one store batch and
// Applies it; what the step says that the store must back is held and sent
// only once the step's batch is durable under the store's sync policy, in
// the order the step made it:
//
//   - acknowledgements that promise durability (SUBMITTED, VERDICTS
//     answering QUEUE and DONE, RESULT-OK);
//   - JOBs that could otherwise name a run twice across a crash: a JOB
//     leaves at once when every earlier record of its job is durable (its
//     creation included), else it waits for the step's batch (see
//     leavesNow). So a crash loses at most one dispatch per job: the store
//     shows the job at attempt K while a worker may run K+1 — never K+2,
//     which would have waited for K+1's record. A restore treats K+1 as
//     possibly running: the worker that re-announces it has it adopted,
//     else the next dispatch skips it (coord/broker/unrecorded.go), and
//     that first dispatch after a restore waits for its batch;
//   - CANCELs whose job has a JOB still held, so that a worker never gets
//     a cancel before the JOB it cancels, nor a new attempt before the
//     cancel of the old;
//   - events (the events socket and Options.OnEvent: the notifier), so
//     that nothing published is taken back by a crash: a job.done is
//     published once, when the job's done record is durable, and the
//     event sequence persisted with the batch is past every published one.
//
// The store calls back on its own goroutine, in order; the callback records
// how far the store got and rings a doorbell (a channel) that the reactor
// waits on beside its sockets' signals.

// heldKind says what a held message is.
type heldKind uint8

const (
	heldAck   heldKind = iota // an acknowledgement to ident
	heldJob                   // a JOB to session sid (dropped if it ended)
	heldOther                 // another message to session sid (CANCEL)
	heldEvent                 // an event to publish
)

// held is a message waiting for its step's batch.
type held struct {
	seq   uint64 // the batch it waits for
	kind  heldKind
	sid   id.Session
	ident []byte
	msg   wire.Message
	ev    *admin.Event
}

// durable is the Server's store I/O part (storeio.go): its link to the
// store and what waits for it (acknowledgements, JOBs and events held
// until their batch is durable), the messages parked for their done-set
// look-ups (donelookup.go) and the stored-key filter's rebuild
// (storedkeys.go). It is given the coordinator, the log, the sender and
// the parts a held message goes to once durable, and the parts that write
// in each step's batch.
type durable struct {
	c            *coord.Coordinator
	log          *slog.Logger
	now          func() time.Time // the server's clock
	out          *sender
	disp         *dispatcher
	sess         *sessions
	ev           *events
	pg           *pager        // nil: every queued job in memory
	res          *resultLog    // nil without Options.Results
	writers      []batchWriter // what else each step's batch writes, in that order
	beforeCommit func() func() // Options.BeforeCommit

	st       *store.Store
	restored coord.RestoreStats // what New restored from the store
	stats    store.Stats        // the store's figures when it was opened

	// Shared with the store's callbacks.
	mu      sync.Mutex
	done    uint64           // the last batch the store finished (durable or failed)
	err     error            // the first failure; the store is sticky-failed after it
	expired []id.Fingerprint // done and failed keys the sweeper deleted, for the reactor

	// Reactor only.
	applied uint64          // the last batch applied
	step    []held          // held messages of the current step
	waiting []held          // held messages of applied batches, in batch order
	failed  error           // the failure, once the reactor saw it
	look    doneLookup      // the bounded done set's marks and scratch (donelookup.go)
	job     store.JobRecord // addWrite's scratch
	ring    chan struct{}   // the store got further (a buffer of one)

	// The counts persisted with each batch (store.Counts, persist): the
	// job id above which every job record is queued with no retry time,
	// and whether the next step writes them even without writes of its
	// own (the first after a restore).
	plainAbove uint64
	countsDue  bool
	rebuild    keyRebuild // the stored-key filter read after the restore (storedkeys.go)

	// Which jobs' records are not yet durable (leavesNow): the latest
	// batch holding a record of each, the job ids of each batch not yet
	// released, and the highest job id created by an applied batch and by
	// a released one.
	pend      map[broker.JobID]uint64
	inflight  []batchJobs
	lastID    broker.JobID
	durableID broker.JobID
}

// batchJobs are the jobs with a record in batch seq, and the highest job id
// allocated when it was applied.
type batchJobs struct {
	seq  uint64
	ids  []broker.JobID
	last broker.JobID
}

// leavesNow reports whether the JOB of assignment a may leave before the
// step's batch is durable: every earlier record of its job is durable
// (none waits in an applied batch, and the batch that created it is
// released), and it is not the job's first dispatch since a restore. Then
// a crash before the batch can lose this dispatch only as the one attempt
// after the job's durable record, which a restore treats as possibly
// running. Without a store (d nil) every JOB leaves at once.
func (d *durable) leavesNow(a *broker.Assignment) bool {
	if d == nil || d.failed != nil {
		return true
	}
	return !a.AfterRestore && a.Job <= d.durableID && d.pend[a.Job] == 0
}

// cancelWaits reports whether a CANCEL must wait for the step's batch: a
// JOB of one of its jobs is still held, and the CANCEL must not overtake
// it (nor may a new attempt overtake the CANCEL: its job waits too).
func (d *durable) cancelWaits(m *wire.Cancel) bool {
	if d == nil {
		return false
	}
	for _, r := range m.Runs {
		if d.pend[broker.JobID(r.JobID)] != 0 {
			return true
		}
	}
	return false
}

// notePending records the jobs with a record in batch seq (writes).
func (d *durable) notePending(seq uint64, writes []coord.Record) {
	if d.pend == nil {
		d.pend = make(map[broker.JobID]uint64)
	}
	bj := batchJobs{seq: seq, last: d.lastID}
	for i := range writes {
		switch w := &writes[i]; w.Kind {
		case coord.RecordJob:
			bj.ids = append(bj.ids, w.Job.ID)
			d.pend[w.Job.ID] = seq
		case coord.RecordMeta:
			if w.Meta.Name == coord.MetaLastJob {
				bj.last = max(bj.last, broker.JobID(w.Meta.Value))
			}
		}
	}
	d.lastID = bj.last
	d.inflight = append(d.inflight, bj)
}

// releasePending forgets the records of batches up to done: they are
// durable and their held messages were delivered.
func (d *durable) releasePending(done uint64) {
	n := 0
	for ; n < len(d.inflight) && d.inflight[n].seq <= done; n++ {
		bj := &d.inflight[n]
		for _, j := range bj.ids {
			if d.pend[j] == bj.seq {
				delete(d.pend, j)
			}
		}
		d.durableID = max(d.durableID, bj.last)
	}
	if n > 0 {
		m := copy(d.inflight, d.inflight[n:])
		clear(d.inflight[m:])
		d.inflight = d.inflight[:m]
	}
}

// callback is the done function of batch seq: it runs on the store's
// goroutine, in batch order.
func (d *durable) callback(seq uint64) func(error) {
	return func(err error) {
		d.mu.Lock()
		if err != nil && d.err == nil {
			d.err = fmt.Errorf("store batch %d: %w", seq, err)
		}
		d.done = max(d.done, seq)
		d.mu.Unlock()
		select {
		case d.ring <- struct{}{}:
		default:
		}
	}
}

// progress is how far the store got and its failure, if any.
func (d *durable) progress() (uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.done, d.err
}

// ack sends m to ident on the peers socket: at once without a store, else
// once the current step's writes are durable.
func (pd *peerDialogue) ack(ident []byte, m wire.Message) {
	d := pd.dur
	if d == nil {
		pd.out.toPeer(ident, m)
		return
	}
	if d.failed != nil {
		pd.out.toPeer(ident, storeFailedError(m.RequestID(), d.failed))
		return
	}
	d.step = append(d.step, held{kind: heldAck, ident: ident, msg: m})
}

// hold keeps h for the current step's batch; false without a store (d
// nil: the caller sends at once).
func (d *durable) hold(h held) bool {
	if d == nil || d.failed != nil {
		return false
	}
	d.step = append(d.step, h)
	return true
}

// deliver sends one held message whose batch is durable.
func (d *durable) deliver(now time.Time, h *held) {
	switch h.kind {
	case heldAck:
		d.out.toPeer(h.ident, h.msg)
	case heldJob:
		d.disp.sendJob(now, h.sid, h.msg)
	case heldOther:
		d.sess.sendTo(now, h.sid, h.msg)
	case heldEvent:
		d.ev.publish(h.ev)
	}
}
