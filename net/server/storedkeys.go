package server

import (
	"bytes"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"drover/coord/id"
	"drover/store"
)

// The stored-key filter rebuilt after a restart (issue 21). A restore
// that takes its counts from the store (store.Counts: restoreResident)
// reads no key record: the coordinator answers at once, with the exact
// totals, and its filter of keys only the store holds is empty. Until a
// reader goroutine has passed every key record of the store to it
// (NoteStoredKeys, in slices, between steps), the coordinator looks up in
// the store every key memory does not know (coord.RestoreUnfiltered), so
// dedup stays exact while the filter fills; then StoredKeysNoted makes the
// filter rule keys out again, and corrects the counts by what the read
// found beyond the counts of the same moment (done keys the sweeper of a
// run before deleted after its last counts). The sweeper waits meanwhile,
// so that no deletion is counted twice.

// keyRebuild is the rebuild's state, shared between the reader and the
// reactor.
type keyRebuild struct {
	active atomic.Bool // from the restore until the reactor took the end
	began  time.Time

	// restored are the keys the restore took from the records of the jobs
	// it kept, sorted: one the store holds in another state than queued
	// is taken back (ForgetRestoredKey).
	restored []id.Fingerprint
	forgot   int // how many (reactor only)

	mu   sync.Mutex
	fps  []scanned // read, not yet noted
	done bool      // the read ended (err, scan)
	scan store.KeyScan
	err  error
	n    int // keys noted so far (reactor only)

	hold chan struct{} // tests: the reader starts once it is closed
}

// scanned is a slice of key records read, fingerprints and states.
type scanned struct {
	fps    []id.Fingerprint
	states []store.KeyState
}

// rebuildBatch is how many fingerprints the reader hands over at a time.
const rebuildBatch = 1 << 14

// startRebuild starts the reader when the restore left the filter to
// rebuild; the function it returns stops it and waits for it.
func (d *durable) startRebuild() (stop func()) {
	if d == nil || !d.rebuild.active.Load() {
		return func() {}
	}
	rb, st, ring := &d.rebuild, d.st, d.ring
	rb.began = time.Now()
	quit, exited := make(chan struct{}), make(chan struct{})
	wake := func() {
		select {
		case ring <- struct{}{}:
		default:
		}
	}
	go func() {
		defer close(exited)
		if rb.hold != nil {
			select {
			case <-rb.hold:
			case <-quit:
			}
		}
		scan, err := st.ScanKeys(quit, rebuildBatch, func(fps []id.Fingerprint, states []store.KeyState) error {
			rb.mu.Lock()
			rb.fps = append(rb.fps, scanned{fps, states})
			rb.mu.Unlock()
			wake()
			return nil
		})
		rb.mu.Lock()
		rb.done, rb.scan, rb.err = true, scan, err
		rb.mu.Unlock()
		wake()
	}()
	return func() { close(quit); <-exited }
}

// takeStoredKeys passes what the reader read to the coordinator, and ends
// the rebuild once it has read everything (called between steps).
func (d *durable) takeStoredKeys() {
	if d == nil || !d.rebuild.active.Load() {
		return
	}
	rb := &d.rebuild
	rb.mu.Lock()
	batches, done, scan, err := rb.fps, rb.done, rb.scan, rb.err
	rb.fps = nil
	rb.mu.Unlock()
	now := d.now()
	for _, b := range batches {
		d.c.NoteStoredKeys(b.fps)
		rb.n += len(b.fps)
		for i, fp := range b.fps {
			if b.states[i] == store.KeyQueued {
				continue
			}
			if _, ok := slices.BinarySearchFunc(rb.restored, fp, func(a, b id.Fingerprint) int { return bytes.Compare(a[:], b[:]) }); ok && d.c.ForgetRestoredKey(now, fp) {
				rb.forgot++
			}
		}
	}
	if !done {
		return
	}
	if err != nil {
		// Every unknown key is still looked up: exact, only slower.
		d.log.Error("read the store's keys for the stored-key filter: every new key is looked up in the store until a restart", "err", err, "keys", rb.n)
		rb.active.Store(false)
		rb.restored = nil
		return
	}
	var dq, dd int
	if scan.CountsOK {
		dq = scan.Queued - int(scan.Counts.KeysQueued)
		dd = scan.Done - int(scan.Counts.KeysDone)
	}
	d.c.StoredKeysNoted(dq, dd)
	rb.active.Store(false)
	rb.restored = nil
	log := d.log.Info
	if dq != 0 {
		log = d.log.Warn // the counts kept with the batches were wrong
	}
	log("stored-key filter rebuilt", "keys", rb.n, "queued", scan.Queued, "done", scan.Done,
		"queued_corrected", dq, "done_corrected", dd, "restored_keys_done", rb.forgot, "elapsed", time.Since(rb.began).Round(time.Millisecond))
}
