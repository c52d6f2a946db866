package server

import (
	"errors"
	"fmt"
	"time"

	"drover/clock"
	"drover/coord"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/net/wire"
	"drover/store"
)

// The Server's store I/O part, durable: opening the store (the coordinator
// restored from it), each step's writes applied as one batch, the held
// messages released as batches become durable, the last batches awaited at
// shutdown, and the sweeper of expired records. Its state is in durable.go,
// which says what waits for the store and why; the done set's look-ups
// (donelookup.go, lookup.go) and the paging of queued jobs (paging.go)
// ride on the same batches. A nil *durable (no store) does nothing.

// batchWriter is a part with records of its own to write in each step's
// batch: results, crawls, submit memos, robots.txt copies.
type batchWriter interface {
	pending() bool       // it has something to write
	into(b *store.Batch) // adds it to b
}

// openDurable restores the coordinator c from opts.Store (through the
// pager pg when jobs beyond memory stay in the store; nil: all in memory)
// and returns the Server's link to the store. Called by New before any
// socket is bound: no session may say HELLO mid-restore.
func openDurable(c *coord.Coordinator, opts Options, pg *pager) (*durable, error) {
	d := &durable{st: opts.Store, ring: make(chan struct{}, 1), c: c, log: opts.Log, now: opts.Clock.Now, pg: pg, beforeCommit: opts.BeforeCommit,
		look: doneLookup{c: c, bounded: c.Config().Ledger.DoneCache > 0, pg: pg}}
	if opts.Store.TakeClean() {
		// The last run stopped cleanly (shutdown marked it): every
		// dispatch it made is recorded, so no attempt is skipped.
		if err := c.RestoreClean(); err != nil {
			return nil, err
		}
	}
	var err error
	if pg != nil {
		d.restored, d.stats, err = restoreResident(c, opts.Store, opts.Clock.Now, pg, &d.rebuild) // paging.go
	} else {
		d.restored, d.stats, err = restore(c, opts.Store, opts.Clock.Now) // records.go
	}
	if err != nil {
		return nil, err
	}
	d.lastID, d.durableID = d.restored.LastJob, d.restored.LastJob
	d.plainAbove, d.countsDue = d.stats.PlainAbove, true
	return d, nil
}

func storeFailedError(req uint64, err error) *wire.Error {
	return &wire.Error{Req: req, Code: wire.CodeInternal, Msg: wire.Clip("not recorded: the store failed: "+err.Error(), wire.MaxText)}
}

// persist applies the step's writes as one batch; the step's held
// acknowledgements wait for it. A step without writes has its
// acknowledgements wait for the last batch applied (they may name jobs
// accepted by it); release sends them at once if that one is durable.
func (d *durable) persist(writes []coord.Record) {
	if d == nil || d.failed != nil {
		return
	}
	if len(writes) > 0 || d.countsDue || d.writersPending() {
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
			if err := addWrite(b, &writes[i], &d.job); err != nil {
				break // recorded in the batch: Apply fails it as a whole
			}
		}
		// The batch has copied the records: the scratch keeps none of the
		// last job's headers, payload or error texts alive until the next.
		d.job = store.JobRecord{History: reuse(d.job.History)}
		d.countsInto(b, writes)
		for _, w := range d.writers {
			w.into(b)
		}
		if d.beforeCommit != nil {
			if f := d.beforeCommit(); f != nil {
				b.Before(f)
			}
		}
		d.applied++
		seq := d.applied
		d.look.mark(seq) // donelookup.go
		d.pg.mark(seq)   // paging.go
		d.res.mark(seq)  // results.go
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

// writersPending reports whether a part has records of its own to write.
func (d *durable) writersPending() bool {
	for _, w := range d.writers {
		if w.pending() {
			return true
		}
	}
	return false
}

// countsInto adds the counts of the records the store holds after batch
// b, writes being the step's records in it (store.Counts): a restart
// takes them instead of reading every record.
func (d *durable) countsInto(b *store.Batch, writes []coord.Record) {
	for i := range writes {
		if w := &writes[i]; w.Kind == coord.RecordJob && (w.Job.State != broker.Queued || !w.Job.RetryAt.IsZero()) {
			d.plainAbove = max(d.plainAbove, uint64(w.Job.ID))
		}
	}
	q, done := d.c.StoreCounts()
	last := uint64(d.c.LastJob())
	// PlainAbove at the last job claims nothing (a restore reads every job
	// record): never more than that, which the store would refuse.
	_ = b.PutCounts(store.Counts{KeysQueued: uint64(q), KeysDone: uint64(done), LastJob: last, PlainAbove: min(d.plainAbove, last)})
	d.countsDue = false
}

// release sends the held acknowledgements whose batches are durable. It
// returns the store's failure, if one happened: then every held
// acknowledgement was answered ERROR 500 instead.
func (d *durable) release() error {
	if d == nil {
		return nil
	}
	if d.failed != nil {
		return d.failed
	}
	done, err := d.progress()
	if err != nil {
		d.failed = err
		d.log.Error("store failed: held acknowledgements answered with ERROR 500; the coordinator stops", "err", err, "held", len(d.waiting)+len(d.step))
		for _, hs := range [][]held{d.waiting, d.step} {
			for _, h := range hs {
				if h.kind == heldAck {
					d.out.toPeer(h.ident, storeFailedError(h.msg.RequestID(), err))
				}
			}
		}
		clear(d.waiting)
		clear(d.step)
		d.waiting, d.step = d.waiting[:0], d.step[:0]
		return err
	}
	d.look.durableUpTo(done) // donelookup.go
	d.pg.durableUpTo(done)   // paging.go
	d.res.durableUpTo(done)  // results.go
	d.storeExpired()         // donelookup.go
	n := 0
	now := d.now()
	for n < len(d.waiting) && d.waiting[n].seq <= done {
		d.deliver(now, &d.waiting[n])
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
func (d *durable) settle(deadline time.Time) error {
	if d == nil {
		return nil
	}
	d.persist(nil) // acks of a step without writes join the last batch
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		if err := d.release(); err != nil {
			return err
		}
		if done, _ := d.progress(); done >= d.applied {
			return d.release()
		}
		select {
		case <-d.ring:
		case <-timer.C:
			return errors.New("store: batches still not durable at shutdown")
		}
	}
}

// startSweeper starts the goroutine that expires the store's done and
// failed records every `every` of clk (Options.SweepEvery) and returns
// the function that stops it and waits for it.
func (d *durable) startSweeper(every time.Duration, clk clock.Clock) (stop func()) {
	if every == 0 {
		every = time.Minute
	}
	led := d.c.Config().Ledger
	if every < 0 || (led.DoneTTL == 0 && led.FailedTTL == 0) {
		return func() {}
	}
	st, log := d.st, d.log
	var onKeys func([]id.Fingerprint) // only a bounded done set counts them
	if d.look.bounded {
		onKeys = d.noteExpired
	}
	rebuilding := &d.rebuild.active
	return repeat(clk, every, false, func() {
		if rebuilding.Load() {
			return // storedkeys.go: its counts must not see a deletion twice
		}
		n, err := st.SweepKeys(clk.Now(), led.DoneTTL, led.FailedTTL, onKeys)
		switch {
		case err != nil:
			log.Error("store sweep", "err", err, "deleted", n)
		case n > 0:
			log.Info("store sweep: expired records deleted", "deleted", n)
		}
	})
}

// repeat starts a goroutine that calls fn every `every` of clk (the
// server's clock; first at once when atStart, else after one interval)
// and returns the function that stops it and waits for it. The
// housekeeping that does store or network I/O (sweeps, trims) runs so,
// off the reactor.
func repeat(clk clock.Clock, every time.Duration, atStart bool, fn func()) (stop func()) {
	quit, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := clk.NewTimer(every)
		defer t.Stop()
		if atStart {
			fn()
		}
		for {
			select {
			case <-quit:
				return
			case <-t.C():
			}
			t.Reset(every)
			fn()
		}
	}()
	return func() {
		close(quit)
		<-exited
	}
}
