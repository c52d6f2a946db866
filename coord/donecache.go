package coord

import (
	"errors"
	"time"

	"drover/coord/id"
	"drover/coord/ledger"
)

// The bounded done set (issue 7), the core's half. With
// Config.Ledger.DoneCache > 0 (and Persist) the ledger keeps at most that
// many done and failed keys in memory; it evicts the oldest, but only once
// the edge has said their writes are durable (WritesDurable, numbering
// batches as WriteBatch does). An evicted key is still done: before it
// hands a message to the core, the edge asks Unknown which of its keys the
// ledger has no record of, looks those up in the store, and gives back the
// done and failed ones with KnownDone; the operation then answers exactly
// as if the record had stayed in memory. coord itself does no I/O.

// embedded is what only the in-memory ledger offers: the bounded done
// set, paged-out keys, the durable write numbering (the embedded store's
// extras). A ledger.Backend kept elsewhere holds every record itself.
type embedded interface {
	Known(fp id.Fingerprint) bool
	KnownDone(fp id.Fingerprint, at time.Time, o ledger.Outcome) bool
	WriteBatch() uint64
	WritesDurable(n uint64)
	DoneCache() (ledger.DoneCacheStats, bool)
	StoredExpired(fps []id.Fingerprint) int
	RestoreStored(n int) error
	AdjustStored(n int)
	NoteStored(fp id.Fingerprint)
	MaybeStored(fp id.Fingerprint) bool
	StoredFilter() ledger.StoredFilterStats
	Lend(fp id.Fingerprint) bool
	LentJob(fp id.Fingerprint) (uint32, bool)
	LendQueued() int
}

var _ embedded = (*ledger.Ledger)(nil)

// errBackend refuses an embedded store's operation on a coordinator whose
// ledger is a Config.Backend.
var errBackend = errors.New("the ledger is a backend kept outside this coordinator (Config.Backend): want the in-memory ledger for the embedded store's operations")

// KnownKey is a done or failed key record the store holds, given back to
// the core with KnownDone.
type KnownKey struct {
	FP     id.Fingerprint // the key's fingerprint
	At     time.Time      // when it was done (its TTL runs from here)
	Failed bool           // done with outcome failed
}

// Unknown appends to dst the fingerprints of keys the ledger has no record
// of (see ledger.Ledger.Known) and its stored-key filter does not rule out
// (ledger.Ledger.MaybeStored: Config.Ledger.StoredFilter): with a bounded
// done set they may be done keys it evicted, to look up in the store. Keys whose URL does not
// normalise are left out (the operation rejects them). With an unbounded
// done set every record is in memory and Unknown appends nothing.
//
// Unknown works out the keys' normal forms and fingerprints once, for the
// operation on the same keys that follows (or, if the message waits for
// its lookups, for the one TakeNormals and UseNormals carry them to).
func (c *Coordinator) Unknown(keys []id.Key, dst []id.Fingerprint) []id.Fingerprint {
	if c.mem == nil || c.cfg.Ledger.DoneCache == 0 && c.pagedKeys == 0 && !c.unfiltered {
		return dst // every record is in memory (page.go: queued keys may not be)
	}
	// The operation that follows names the same keys: it takes their
	// normal forms from the memo (Coordinator.normalize, normals.go)
	// instead of working them out again.
	c.resetNorms(len(keys))
	for _, k := range keys {
		nk, fp, err := normalize(k)
		if len(c.norms.ns) < maxNorms {
			c.norms.ns = append(c.norms.ns, normal{raw: k, key: nk, fp: fp, err: err})
		}
		if err != nil {
			continue
		}
		if !c.mem.Known(fp) && (c.unfiltered || c.mem.MaybeStored(fp)) { // the filter: a new key costs no read (page.go: once it is complete)
			dst = append(dst, fp)
		}
	}
	return dst
}

// maxNorms bounds Unknown's memo: a batch of SUBMITs fits (DRV/2 allows
// 10,000); the links past it of a RESULT that carries more are worked out
// again.
const maxNorms = 1 << 14

// KnownDone gives the ledger back done and failed records the store holds
// for keys Unknown named, before the operation on them; a record of a key
// the ledger knows meanwhile is ignored. It returns how many were taken.
// Records past their TTL are taken too, and answer as absent, as in memory.
func (c *Coordinator) KnownDone(recs []KnownKey) int {
	n := 0
	if c.mem == nil {
		return 0 // Unknown named none
	}
	for _, r := range recs {
		o := ledger.DoneOK
		if r.Failed {
			o = ledger.DoneFailed
		}
		if c.mem.KnownDone(r.FP, r.At, o) {
			n++
		}
	}
	return n
}

// WriteBatch is the number of the last Ready's Output.Writes, counting
// every Ready from 1, with writes or without: tell WritesDurable once they
// are durable.
func (c *Coordinator) WriteBatch() uint64 {
	if c.mem == nil {
		return 0
	}
	return c.mem.WriteBatch()
}

// WritesDurable says the Output.Writes of every Ready up to number n (see
// WriteBatch) are durable, so the bounded done set may evict what they
// put. Without a bounded done set it does nothing.
func (c *Coordinator) WritesDurable(n uint64) {
	if c.mem != nil {
		c.mem.WritesDurable(n)
	}
}

// DoneCache describes the bounded done set; ok is false when it is
// unbounded.
func (c *Coordinator) DoneCache() (ledger.DoneCacheStats, bool) {
	if c.mem == nil {
		return ledger.DoneCacheStats{}, false
	}
	return c.mem.DoneCache()
}

// StoredExpired tells the core the store deleted these done and failed key
// records (expired by TTL; the store's sweeper reports them): keys the
// ledger had left in the store stop counting as done. It returns how many.
func (c *Coordinator) StoredExpired(fps []id.Fingerprint) int {
	if c.mem == nil {
		return 0
	}
	return c.mem.StoredExpired(fps)
}
