package server

import (
	"bytes"
	"slices"
	"sync"

	"drover/coord/id"
	"drover/store"
)

// looker is the lookup goroutine of the bounded done set (donelookup.go):
// it reads the store's records of the keys parked messages need, in
// batches (everything posted since its last batch, sorted, one iterator:
// store.LookupKeys), off the reactor goroutine, and hands the messages
// back with their answers, ringing the reactor's store doorbell.
type looker struct {
	st   *store.Store
	ring chan struct{} // the reactor's doorbell (durable.ring)
	hook func()        // tests: called before each batch's reads

	mu   sync.Mutex
	todo []*parkedMsg // posted, not yet looked up
	back []*parkedMsg // looked up, not yet collected
	wake chan struct{}
	quit chan struct{}
	done chan struct{}

	// The goroutine's own.
	batch []*parkedMsg
	keys  []store.KeyLookup
}

// startLooker starts the lookup goroutine; stop ends it and waits.
func startLooker(st *store.Store, ring chan struct{}, hook func()) *looker {
	lk := &looker{st: st, ring: ring, hook: hook, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
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

// lookUp reads the keys of a batch of messages with one sorted pass.
func (lk *looker) lookUp(batch []*parkedMsg) {
	keys := lk.keys[:0]
	for _, p := range batch {
		keys = append(keys, p.keys...)
	}
	slices.SortFunc(keys, func(a, b store.KeyLookup) int { return bytes.Compare(a.FP[:], b.FP[:]) })
	keys = slices.CompactFunc(keys, func(a, b store.KeyLookup) bool { return a.FP == b.FP })
	err := lk.st.LookupKeys(keys)
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
		}
	}
	lk.keys = keys[:0]
}
