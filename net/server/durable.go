package server

import (
	"errors"
	"fmt"
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

// durable is the reactor's link to the store.
type durable struct {
	st *store.Store

	// Shared with the store's callbacks.
	mu      sync.Mutex
	done    uint64           // the last batch the store finished (durable or failed)
	err     error            // the first failure; the store is sticky-failed after it
	expired []id.Fingerprint // done and failed keys the sweeper deleted, for the reactor

	// Reactor only.
	applied uint64        // the last batch applied
	step    []held        // held messages of the current step
	waiting []held        // held messages of applied batches, in batch order
	failed  error         // the failure, once the reactor saw it
	look    doneLookup    // the bounded done set's marks and scratch (donelookup.go)
	ring    chan struct{} // the store got further (a buffer of one)

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
// running. Without a store every JOB leaves at once.
func (s *Server) leavesNow(a *broker.Assignment) bool {
	d := s.dur
	if d == nil || d.failed != nil {
		return true
	}
	return !a.AfterRestore && a.Job <= d.durableID && d.pend[a.Job] == 0
}

// cancelWaits reports whether a CANCEL must wait for the step's batch: a
// JOB of one of its jobs is still held, and the CANCEL must not overtake
// it (nor may a new attempt overtake the CANCEL: its job waits too).
func (s *Server) cancelWaits(m *wire.Cancel) bool {
	d := s.dur
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
func (s *Server) ack(ident []byte, m wire.Message) {
	d := s.dur
	if d == nil {
		s.send(s.peers, ident, m)
		return
	}
	if d.failed != nil {
		s.send(s.peers, ident, storeFailedError(m.RequestID(), d.failed))
		return
	}
	d.step = append(d.step, held{kind: heldAck, ident: ident, msg: m})
}

// hold keeps h for the current step's batch; false without a store (the
// caller sends at once).
func (s *Server) hold(h held) bool {
	d := s.dur
	if d == nil || d.failed != nil {
		return false
	}
	d.step = append(d.step, h)
	return true
}

// deliver sends one held message whose batch is durable.
func (s *Server) deliver(now time.Time, h *held) {
	switch h.kind {
	case heldAck:
		s.send(s.peers, h.ident, h.msg)
	case heldJob:
		s.sendJob(now, h.sid, h.msg)
	case heldOther:
		if p, ok := s.sess.peer[h.sid]; ok && s.send(s.peers, p.ident, h.msg) {
			p.lastSent = now
		}
	case heldEvent:
		s.publish(h.ev)
	}
}

func storeFailedError(req uint64, err error) *wire.Error {
	return &wire.Error{Req: req, Code: wire.CodeInternal, Msg: clipReason("not recorded: the store failed: "+err.Error(), wire.MaxText)}
}

// persist applies the step's writes as one batch; the step's held
// acknowledgements wait for it. A step without writes has its
// acknowledgements wait for the last batch applied (they may name jobs
// accepted by it); release sends them at once if that one is durable.
func (s *Server) persist(writes []coord.Record) {
	d := s.dur
	if d == nil || d.failed != nil {
		return
	}
	if len(writes) > 0 || s.pendingResults() || s.pendingCrawls() || s.pendingMemos() {
		if err := checkWrites(writes); err != nil {
			// Nothing of the step is written: fail as the store would.
			d.mu.Lock()
			if d.err == nil {
				d.err = fmt.Errorf("persist the step's writes: %w", err)
			}
			d.mu.Unlock()
			d.waiting = append(d.waiting, d.step...)
			clear(d.step)
			d.step = d.step[:0]
			return
		}
		b := d.st.NewBatch()
		for i := range writes {
			if err := addWrite(b, &writes[i]); err != nil {
				break // recorded in the batch: Apply fails it as a whole
			}
		}
		s.resultsInto(b) // results.go: durable with their jobs' states
		s.crawlsInto(b)  // crawls.go: page counts durable with the dispatches
		s.memosInto(b)   // submitmemo.go: what the step's SUBMITTEDs say
		if s.opts.BeforeCommit != nil {
			if f := s.opts.BeforeCommit(); f != nil {
				b.Before(f)
			}
		}
		d.applied++
		seq := d.applied
		s.markBatch(seq)   // donelookup.go
		s.pageMark(seq)    // paging.go
		s.markResults(seq) // results.go
		d.notePending(seq, writes)
		for i := range d.step {
			d.step[i].seq = seq
		}
		d.waiting = append(d.waiting, d.step...)
		clear(d.step)
		d.step = d.step[:0]
		d.st.Apply(b, d.callback(seq))
		return
	}
	if len(d.step) == 0 {
		return
	}
	for i := range d.step {
		d.step[i].seq = d.applied
	}
	d.waiting = append(d.waiting, d.step...)
	clear(d.step)
	d.step = d.step[:0]
}

// release sends the held acknowledgements whose batches are durable. It
// returns the store's failure, if one happened: then every held
// acknowledgement was answered ERROR 500 instead.
func (s *Server) release() error {
	d := s.dur
	if d == nil {
		return nil
	}
	if d.failed != nil {
		return d.failed
	}
	done, err := d.progress()
	if err != nil {
		d.failed = err
		s.log.Error("store failed: held acknowledgements answered with ERROR 500; the coordinator stops", "err", err, "held", len(d.waiting)+len(d.step))
		for _, hs := range [][]held{d.waiting, d.step} {
			for _, h := range hs {
				if h.kind == heldAck {
					s.send(s.peers, h.ident, storeFailedError(h.msg.RequestID(), err))
				}
			}
		}
		clear(d.waiting)
		clear(d.step)
		d.waiting, d.step = d.waiting[:0], d.step[:0]
		return err
	}
	s.durableUpTo(done)    // donelookup.go
	s.pageDurable(done)    // paging.go
	s.resultsDurable(done) // results.go
	s.storeExpired()       // donelookup.go
	n := 0
	now := s.now()
	for n < len(d.waiting) && d.waiting[n].seq <= done {
		s.deliver(now, &d.waiting[n])
		n++
	}
	if n > 0 {
		m := copy(d.waiting, d.waiting[n:])
		clear(d.waiting[m:])
		d.waiting = d.waiting[:m]
	}
	d.releasePending(done) // after the delivery: the held JOBs are out
	return nil
}

// settle waits, until deadline, for every applied batch to finish, and
// releases what they held (on shutdown).
func (s *Server) settle(deadline time.Time) error {
	d := s.dur
	if d == nil {
		return nil
	}
	s.persist(nil) // acks of a step without writes join the last batch
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		if err := s.release(); err != nil {
			return err
		}
		if done, _ := d.progress(); done >= d.applied {
			return s.release()
		}
		select {
		case <-d.ring:
		case <-timer.C:
			return errors.New("store: batches still not durable at shutdown")
		}
	}
}

// startSweeper starts the goroutine that expires the store's done and
// failed records (Options.SweepEvery) and returns the function that stops
// it and waits for it.
func (s *Server) startSweeper() (stop func()) {
	every := s.opts.SweepEvery
	if every == 0 {
		every = time.Minute
	}
	led := s.c.Config().Ledger
	if every < 0 || (led.DoneTTL == 0 && led.FailedTTL == 0) {
		return func() {}
	}
	quit, exited := make(chan struct{}), make(chan struct{})
	st, clk, log := s.dur.st, s.opts.Clock, s.log
	var onKeys func([]id.Fingerprint) // only a bounded done set counts them
	if s.bounded() {
		onKeys = s.dur.noteExpired
	}
	go func() {
		defer close(exited)
		t := clk.NewTimer(every)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C():
			}
			t.Reset(every)
			n, err := st.SweepKeys(clk.Now(), led.DoneTTL, led.FailedTTL, onKeys)
			switch {
			case err != nil:
				log.Error("store sweep", "err", err, "deleted", n)
			case n > 0:
				log.Info("store sweep: expired records deleted", "deleted", n)
			}
		}
	}()
	return func() {
		close(quit)
		<-exited
	}
}
