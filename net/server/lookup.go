package server

import (
	"bytes"
	"fmt"
	"slices"
	"sync"

	"drover/coord"
	"drover/coord/id"
	"drover/store"
)

// looker is the lookup goroutine of the bounded done set (donelookup.go):
// it reads the store's records of the keys parked messages need, in
// batches (everything posted since its last batch, sorted, one iterator:
// store.LookupKeys), off the reactor goroutine, and hands the messages
// back with their answers, ringing the reactor's store doorbell. With
// paging (paging.go) it also reads the records of the queued keys it found
// (paged out with their jobs), so that the reactor has their text to give
// back without reading the store itself.
type looker struct {
	st     *store.Store
	ring   chan struct{}        // the reactor's doorbell (durable.ring)
	paging bool                 // read found queued keys' records too
	hook   func()               // tests: called before each batch's reads
	qhook  func(id.Fingerprint) // tests: called before each queued key's read

	mu   sync.Mutex
	todo []*parkedMsg // posted, not yet looked up
	back []*parkedMsg // looked up, not yet collected
	wake chan struct{}
	quit chan struct{}
	done chan struct{}

	// The goroutine's own.
	batch  []*parkedMsg
	keys   []store.KeyLookup
	queued []coord.QueuedKey // of keys, the queued ones read back, in the same order
}

// startLooker starts the lookup goroutine of d's store (hook and qhook are
// the tests' hooks.look and hooks.queued); stop ends it and waits.
func startLooker(d *durable, hook func(), qhook func(id.Fingerprint)) *looker {
	lk := &looker{
		st: d.st, ring: d.ring, paging: d.pg != nil, hook: hook, qhook: qhook,
		wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
	}
	go lk.run()
	return lk
}

// post hands p's keys to the goroutine (reactor; never blocks).
func (lk *looker) post(p *parkedMsg) {
	lk.mu.Lock()
	lk.todo = append(lk.todo, p)
	lk.mu.Unlock()
	select {
	case lk.wake <- struct{}{}:
	default:
	}
}

// collect marks the messages looked up since the last call as looked
// (reactor): their keys and err are the reactor's again.
func (lk *looker) collect() {
	lk.mu.Lock()
	back := lk.back
	lk.back = nil
	lk.mu.Unlock()
	for _, p := range back {
		p.looked = true
	}
}

// stop ends the goroutine and waits for it; what it did not look up stays
// parked (the reactor is stopping).
func (lk *looker) stop() {
	close(lk.quit)
	<-lk.done
}

func (lk *looker) run() {
	defer close(lk.done)
	for {
		select {
		case <-lk.quit:
			return
		case <-lk.wake:
		}
		lk.mu.Lock()
		lk.batch = append(lk.batch[:0], lk.todo...)
		clear(lk.todo)
		lk.todo = lk.todo[:0]
		lk.mu.Unlock()
		if len(lk.batch) == 0 {
			continue
		}
		if lk.hook != nil {
			lk.hook()
		}
		lk.lookUp(lk.batch)
		lk.mu.Lock()
		lk.back = append(lk.back, lk.batch...)
		lk.mu.Unlock()
		clear(lk.batch)
		select {
		case lk.ring <- struct{}{}:
		default:
		}
	}
}

// lookUp reads the keys of a batch of messages with one sorted pass, and
// with paging the records of the queued ones.
func (lk *looker) lookUp(batch []*parkedMsg) {
	keys := lk.keys[:0]
	for _, p := range batch {
		keys = append(keys, p.keys...)
	}
	slices.SortFunc(keys, func(a, b store.KeyLookup) int { return bytes.Compare(a.FP[:], b.FP[:]) })
	keys = slices.CompactFunc(keys, func(a, b store.KeyLookup) bool { return a.FP == b.FP })
	err := lk.st.LookupKeys(keys)
	if err == nil && lk.paging {
		err = lk.readQueued(keys)
	}
	for _, p := range batch {
		p.err = err
		if err != nil {
			continue
		}
		for i := range p.keys {
			j, _ := slices.BinarySearchFunc(keys, p.keys[i].FP, func(k store.KeyLookup, fp id.Fingerprint) int {
				return bytes.Compare(k.FP[:], fp[:])
			})
			p.keys[i] = keys[j]
			if keys[j].Found && keys[j].State == store.KeyQueued {
				if q, ok := slices.BinarySearchFunc(lk.queued, keys[j].FP, func(k coord.QueuedKey, fp id.Fingerprint) int {
					return bytes.Compare(k.FP[:], fp[:])
				}); ok {
					p.queued = append(p.queued, lk.queued[q])
				}
			}
		}
	}
	lk.keys = keys[:0]
	clear(lk.queued) // drop the strings
	lk.queued = lk.queued[:0]
}

// readQueued reads the records of the queued keys among keys (sorted): a
// queued key the coordinator did not know is paged out with its job, and
// the coordinator takes it back (KnownQueued) with its text.
func (lk *looker) readQueued(keys []store.KeyLookup) error {
	for _, k := range keys {
		if !k.Found || k.State != store.KeyQueued {
			continue
		}
		if lk.qhook != nil {
			lk.qhook(k.FP)
		}
		r, ok, err := lk.st.GetKey(k.FP)
		if err != nil {
			return fmt.Errorf("look up paged-out queued key %s: %w", k.FP, err)
		}
		if ok && r.State == store.KeyQueued {
			lk.queued = append(lk.queued, coord.QueuedKey{FP: k.FP, Key: r.Key, At: r.At})
		}
	}
	return nil
}
