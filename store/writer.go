package store

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// A group commit takes at most this many batches, or about this many
// bytes, before writing them; what is left waits for the next group.
const (
	maxGroupBatches = 1024
	maxGroupBytes   = 8 << 20
)

// request is one unit of work for the writer goroutine: a batch to write
// and its done function, or a function to run between groups (a sweep
// step), serialised with the writes.
type request struct {
	b      *pebble.Batch
	n      int
	floor  *expiryFloor
	before func() // Batch.Before
	done   func(error)
	fn     func(*writer)
}

// writeCounters back WriteStats.
type writeCounters struct {
	batches, records, commits, syncs atomic.Uint64
}

// WriteStats counts the writer's work since Open.
type WriteStats struct {
	Batches uint64 // batches acknowledged (successfully or not)
	Records uint64 // changes in the batches written
	Commits uint64 // Pebble commits: groups of batches written together
	Syncs   uint64 // fsyncs of the write-ahead log the store asked for
}

// WriteStats returns the writer's counters.
func (s *Store) WriteStats() WriteStats {
	return WriteStats{
		Batches: s.stats.batches.Load(),
		Records: s.stats.records.Load(),
		Commits: s.stats.commits.Load(),
		Syncs:   s.stats.syncs.Load(),
	}
}

// Apply hands b to the writer goroutine and returns; done(nil) is called
// once b is durable under the sync policy, done(err) if it could not be
// written (then none of it is). Batches are written, and their done
// functions called, in the order Apply was called. Apply blocks only when
// the writer is more than 1024 batches behind.
//
// done runs on the writer goroutine (or, when Apply fails at once, on the
// caller's): it must be quick and must not call Apply, Commit, Sweep or
// Close. A nil done is allowed. After Apply the batch belongs to the store.
func (s *Store) Apply(b *Batch, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	switch {
	case b == nil:
		done(errors.New("store: Apply of a nil batch; want one from NewBatch"))
		return
	case b.s != s:
		done(errors.New("store: Apply of a batch from another store; want one from this store's NewBatch"))
		return
	case b.used:
		done(errBatchUsed)
		return
	}
	b.finishExpiry()
	b.used = true
	if b.err != nil {
		_ = b.pb.Close()
		done(fmt.Errorf("store: batch not applied: %w", b.err))
		return
	}
	if err := s.enter(); err != nil {
		_ = b.pb.Close()
		done(err)
		return
	}
	defer s.leave()
	s.reqs <- request{b: b.pb, n: b.n, floor: b.floor, before: b.before, done: done}
}

// Commit applies b and waits until it is durable (see Apply).
func (s *Store) Commit(b *Batch) error {
	ch := make(chan error, 1)
	s.Apply(b, func(err error) { ch <- err })
	return <-ch
}

// run is the writer goroutine.
func (s *Store) run() {
	defer close(s.exited)
	w := writer{s: s, timer: time.NewTimer(time.Hour)}
	w.timer.Stop()
	w.loop()
}

// writer is the state of the writer goroutine.
type writer struct {
	s       *Store
	group   []request     // gathered, not yet written
	size    int           // bytes in group
	pending []func(error) // SyncBatch: written, waiting for the next fsync
	dirty   bool          // written since the last fsync
	timer   *time.Timer   // SyncBatch: the next fsync
	armed   bool          // timer is running
	scratch []func(error) // reused by commit
	// floor: per expiry class, the index is empty below this key (nil: no
	// such key known, sweep from the class start). Batches lower it, sweep
	// steps raise it, so a sweep never walks the tombstones of the last.
	floor expiryFloor
}

func (w *writer) loop() {
	for {
		var tick <-chan time.Time
		if w.armed {
			tick = w.timer.C
		}
		select {
		case r, ok := <-w.s.reqs:
			if !ok {
				w.shutdown()
				return
			}
			w.add(r)
			if !w.drain() {
				w.commit()
				w.shutdown()
				return
			}
			w.commit()
		case <-tick:
			w.armed = false
			w.sync()
		}
	}
}

// drain gathers what is already queued, up to the group limits. It
// returns false when the queue was closed.
func (w *writer) drain() bool {
	for len(w.group) < maxGroupBatches && w.size < maxGroupBytes {
		select {
		case r, ok := <-w.s.reqs:
			if !ok {
				return false
			}
			w.add(r)
		default:
			return true
		}
	}
	return true
}

func (w *writer) add(r request) {
	if r.fn != nil {
		w.commit() // the function sees every batch applied before it
		r.fn(w)
		return
	}
	w.group = append(w.group, r)
	w.size += len(r.b.Repr())
}

// commit writes the gathered group as one Pebble batch and acknowledges it
// (or queues its acknowledgements for the next fsync).
func (w *writer) commit() {
	if len(w.group) == 0 {
		return
	}
	s := w.s
	for i := range w.group {
		if f := w.group[i].before; f != nil {
			f() // Batch.Before: before anything of the group is written
		}
	}
	dones := w.scratch[:0]
	var merged *pebble.Batch
	var records int
	err := s.sticky()
	if err == nil && len(w.group) > 1 {
		merged = s.db.NewBatchWithSize(w.size) // one allocation for the group
	}
	for i := range w.group {
		r := &w.group[i]
		dones = append(dones, r.done)
		w.lowerFloor(r.floor)
		switch {
		case err != nil || r.b.Empty():
			_ = r.b.Close()
		case merged == nil:
			merged, records = r.b, r.n
		default:
			if aerr := merged.Apply(r.b, nil); aerr != nil {
				err = fmt.Errorf("store: merge a batch into its group: %w", aerr)
			}
			records += r.n
			_ = r.b.Close()
		}
		*r = request{}
	}
	w.group, w.size = w.group[:0], 0
	if merged != nil {
		if err == nil {
			opts := pebble.NoSync
			if s.opts.Sync == SyncAlways {
				opts = pebble.Sync
			}
			err = s.pebbleApply(merged, opts)
			if err == nil {
				_ = merged.Close()
				s.stats.commits.Add(1)
				s.stats.records.Add(uint64(records))
				if s.opts.Sync == SyncAlways {
					s.stats.syncs.Add(1)
				} else if !s.opts.Memory {
					w.dirty = true
				}
			}
		} else {
			_ = merged.Close()
		}
	}
	switch {
	case err != nil:
		w.fail(err)
		w.ack(dones, s.sticky())
	case s.opts.Sync == SyncBatch && (w.dirty || len(w.pending) > 0):
		w.pending = append(w.pending, dones...)
		if !w.armed {
			w.timer.Reset(s.opts.SyncInterval)
			w.armed = true
		}
	default:
		w.ack(dones, nil)
	}
	clear(dones)
	w.scratch = dones[:0]
}

// lowerFloor takes the expiry entries of a batch into account.
func (w *writer) lowerFloor(f *expiryFloor) {
	if f == nil {
		return
	}
	for c, k := range f {
		if k != nil && w.floor[c] != nil && bytes.Compare(k, w.floor[c]) < 0 {
			w.floor[c] = k
		}
	}
}

// sync fsyncs the write-ahead log and acknowledges what waited for it.
func (w *writer) sync() {
	if !w.dirty && len(w.pending) == 0 {
		return
	}
	err := w.s.sticky()
	if err == nil && w.dirty {
		err = w.s.syncWAL()
	}
	w.dirty = false
	if err != nil {
		w.fail(err)
	}
	pending := w.pending
	w.pending = nil
	w.ack(pending, err)
}

// shutdown makes every write durable and acknowledges it.
func (w *writer) shutdown() {
	if w.armed {
		w.timer.Stop()
		w.armed = false
	}
	w.sync()
}

func (w *writer) ack(dones []func(error), err error) {
	w.s.stats.batches.Add(uint64(len(dones)))
	for _, d := range dones {
		d(err)
	}
}

// fail makes err the store's sticky write error and fails what waits.
func (w *writer) fail(err error) {
	if w.s.failed.Load() == nil {
		werr := fmt.Errorf("store %s: a write failed; the store takes no more writes: %w", w.s.path, err)
		w.s.failed.CompareAndSwap(nil, &werr)
	}
	if len(w.pending) > 0 {
		pending := w.pending
		w.pending = nil
		w.ack(pending, w.s.sticky())
	}
}

// sticky is the store's write failure, nil while it is healthy.
func (s *Store) sticky() error {
	if p := s.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// pebbleApply commits b, turning Pebble's fatal errors into an error.
func (s *Store) pebbleApply(b *pebble.Batch, opts *pebble.WriteOptions) (err error) {
	defer recoverFatal(&err)
	return corrupt(s.db.Apply(b, opts))
}

// syncWAL fsyncs the write-ahead log (everything written before it).
func (s *Store) syncWAL() (err error) {
	defer recoverFatal(&err)
	s.stats.syncs.Add(1)
	return s.db.LogData(nil, pebble.Sync)
}

// do runs fn on the writer goroutine, after every batch applied before it
// is written, and waits for it.
func (s *Store) do(fn func(*writer)) error {
	if err := s.enter(); err != nil {
		return err
	}
	ch := make(chan struct{})
	s.reqs <- request{fn: func(w *writer) { fn(w); close(ch) }}
	s.leave()
	<-ch
	return nil
}
