package store

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"drover/coord/id"
)

// Batch is a set of changes that Apply writes atomically: after a crash
// either all of them are in the store or none. Build one with NewBatch; a
// Batch is not safe for concurrent use and belongs to the store after
// Apply.
//
// A method given an invalid record returns an error and changes nothing;
// the batch remembers the first such error and Apply then fails with it,
// writing nothing, so callers may check once at Apply.
type Batch struct {
	s      *Store
	pb     *pebble.Batch
	n      int
	err    error
	buf    []byte
	used   bool
	groups []expiryGroup // the expiry entries to write at Apply
	// groupAt indexes groups by class and time once there are two (a
	// batch mostly finishes its records at one time: the last group).
	groupAt map[groupKey]int
	floor   *expiryFloor // the smallest expiry entries written, nil if none
	before  func()       // see Before
}

// expiryFloor holds, per expiry class, the smallest expiry index key of a
// batch (or, in the writer, the key below which the index is empty); nil
// means none (in the writer: the start of the class).
type expiryFloor [nClasses][]byte

// expiryGroup gathers the idents of the records of one expiry class done
// at one time in a batch: Apply writes them as one index entry (a step
// that finishes many jobs at once writes a few entries, not two per job).
type expiryGroup struct {
	class  byte
	at     int64
	idents []byte // concatenated, identLen(class) bytes each
}

// groupKey names the expiry group of a class and time.
type groupKey struct {
	class byte
	at    int64
}

// maxGroupIdents bounds the idents of one grouped expiry entry, so that a
// sweep step (which examines whole entries) stays short.
const maxGroupIdents = 128

// expire notes the expiry index entry of a done or failed record; Apply
// writes it (finishExpiry).
func (b *Batch) expire(class byte, at int64, ident []byte) error {
	k := groupKey{class, at}
	if n := len(b.groups); n > 0 {
		i, ok := n-1, b.groups[n-1].class == class && b.groups[n-1].at == at
		if !ok && b.groupAt != nil {
			i, ok = b.groupAt[k]
		}
		if ok {
			b.groups[i].idents = append(b.groups[i].idents, ident...)
			return nil
		}
		if b.groupAt == nil { // the second group: index the first
			b.groupAt = map[groupKey]int{{b.groups[0].class, b.groups[0].at}: 0}
		}
		b.groupAt[k] = n
	}
	b.groups = append(b.groups, expiryGroup{class: class, at: at, idents: append([]byte(nil), ident...)})
	return nil
}

// finishExpiry writes the expiry entries the batch gathered: one record's
// alone as a plain entry (its ident in the key), several records' of one
// class and time as grouped entries of up to maxGroupIdents idents each.
func (b *Batch) finishExpiry() {
	for i := range b.groups {
		g := &b.groups[i]
		n := identLen(g.class)
		for rest := g.idents; len(rest) > 0; {
			chunk := rest[:min(len(rest), maxGroupIdents*n)]
			rest = rest[len(chunk):]
			var k, v []byte
			if len(chunk) == n {
				k = expiryKey(g.class, g.at, chunk)
			} else {
				k, v = expiryKey(g.class, g.at, b.s.groupIdent()), chunk
			}
			if b.floor == nil {
				b.floor = new(expiryFloor)
			}
			if f := b.floor[g.class]; f == nil || bytes.Compare(k, f) < 0 {
				b.floor[g.class] = k
			}
			if b.set(k, v) != nil {
				return
			}
		}
	}
	b.groups, b.groupAt = nil, nil
}

// errBatchUsed is the error of a batch used after Apply.
var errBatchUsed = errors.New("store: batch used after Apply; want a new batch")

// NewBatch returns an empty batch for this store.
func (s *Store) NewBatch() *Batch {
	return &Batch{s: s, pb: s.db.NewBatch()}
}

// Before sets a function the writer goroutine runs before it writes the
// batch (and so before any batch applied after it): it may block, holding
// the batch and everything behind it back, until what the batch records
// may be written (drover crawl: until the results file has the records
// of the pages the batch marks done, so that a crash never leaves a page
// done without its record). It must not call the store.
func (b *Batch) Before(f func()) { b.before = f }

// Len is the number of changes in the batch.
func (b *Batch) Len() int { return b.n }

// Err is the first error a method of the batch returned, nil if none.
func (b *Batch) Err() error { return b.err }

func (b *Batch) check(err error) error {
	if b.used {
		err = errBatchUsed
	}
	if err != nil && b.err == nil {
		b.err = err
	}
	return err
}

func (b *Batch) set(k, v []byte) error {
	if err := b.pb.Set(k, v, nil); err != nil {
		return b.check(fmt.Errorf("store: batch set: %w", err))
	}
	b.n++
	return nil
}

func (b *Batch) del(k []byte) error {
	if err := b.pb.Delete(k, nil); err != nil {
		return b.check(fmt.Errorf("store: batch delete: %w", err))
	}
	b.n++
	return nil
}

// PutKey writes the ledger record of r.FP, replacing any previous one. The
// state must be queued, done or failed and At must be set.
func (b *Batch) PutKey(r *KeyRecord) error {
	var err error
	switch {
	case r.State == 0 || r.State >= nKeyStates:
		err = fmt.Errorf("store: key record %s: state %d, want queued, done or failed", r.FP, r.State)
	case r.At.IsZero():
		err = fmt.Errorf("store: key record %s: At is zero, want when it was %s", r.FP, r.State)
	}
	if err := b.check(err); err != nil {
		return err
	}
	b.buf = encodeKey(b.buf[:0], r)
	if err := b.set(keyKey(r.FP), b.buf); err != nil {
		return err
	}
	switch r.State {
	case KeyDone:
		return b.expire(classKeyDone, stamp(r.At), r.FP[:])
	case KeyFailed:
		return b.expire(classKeyFailed, stamp(r.At), r.FP[:])
	}
	return nil
}

// DeleteKey forgets the ledger record of fp (absent or not).
func (b *Batch) DeleteKey(fp id.Fingerprint) error {
	if err := b.check(nil); err != nil {
		return err
	}
	return b.del(keyKey(fp))
}

// PutJob writes the record of job r.ID, replacing any previous one. The ID
// must not be 0, the state must be one of the job states, and a done or
// failed job must have Updated set (its TTL runs from it).
func (b *Batch) PutJob(r *JobRecord) error {
	var err error
	switch {
	case r.ID == 0:
		err = errors.New("store: job record: ID is 0, want the broker's job id")
	case r.State == 0 || r.State >= nJobStates:
		err = fmt.Errorf("store: job record %d: state %d, want queued, dispatched, backoff, done or failed", r.ID, r.State)
	case (r.State == JobDone || r.State == JobFailed) && r.Updated.IsZero():
		err = fmt.Errorf("store: job record %d: %s with a zero Updated, want when it ended", r.ID, r.State)
	}
	if err := b.check(err); err != nil {
		return err
	}
	b.buf = encodeJob(b.buf[:0], r)
	k := jobKey(r.ID)
	if err := b.set(k, b.buf); err != nil {
		return err
	}
	switch r.State {
	case JobDone:
		return b.expire(classJobDone, stamp(r.Updated), k[1:])
	case JobFailed:
		return b.expire(classJobFailed, stamp(r.Updated), k[1:])
	}
	return nil
}

// DeleteJob forgets the record of job j (absent or not).
func (b *Batch) DeleteJob(j uint64) error {
	if err := b.check(nil); err != nil {
		return err
	}
	return b.del(jobKey(j))
}

// PutMeta sets the named counter. The name must not be empty.
func (b *Batch) PutMeta(name string, v uint64) error {
	var err error
	if name == "" {
		err = errors.New("store: meta record: empty name, want one")
	}
	if err := b.check(err); err != nil {
		return err
	}
	return b.set(metaKey(name), be64(v))
}

// DeleteMeta forgets the named counter.
func (b *Batch) DeleteMeta(name string) error {
	if err := b.check(nil); err != nil {
		return err
	}
	return b.del(metaKey(name))
}
