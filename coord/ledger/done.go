package ledger

import (
	"time"

	"drover/coord/id"
)

// The done set is kept apart from the live records, compact: one map entry
// per key, 16 bytes of payload: the first 96 bits of the fingerprint (a
// false match needs two of the keys ever done to share 96 bits: about one
// chance in 10^17 with a billion keys) -> a stamp, which packs the done time
// in whole seconds since stampEpoch (31 bits, rounded up, so a record never
// expires early) with the outcome in the low bit. No key is kept: a done
// record only has to answer No.
//
// Expiry is lazy (a request checks the stamp), and memory is reclaimed by a
// sweep: each outcome with a TTL has a FIFO of (fingerprint, stamp) in the
// order keys were done, which, the TTL being fixed, is expiry order. The
// sweep pops expired entries from the front and deletes the map entry if its
// stamp is still the one queued (a key done again, or requested again after
// expiry, leaves a stale entry that is skipped). The FIFO keeps the whole
// fingerprint so that the deletion can be persisted. At 1M keys the set
// costs about 36 bytes per key without a TTL and 56 with one (see
// BenchmarkDoneSetMemory).
//
// With Config.DoneCache the set is bounded instead: the store behind the
// ledger holds every record, memory only the newest (donecache.go).

// stampEpoch is 2020-01-01T00:00:00Z: stamps cover it to early 2088.
const stampEpoch = int64(1577836800) * int64(time.Second)

const maxStampSecs = 1<<31 - 1

// makeStamp packs done time t (ns since 1970) and outcome o.
func makeStamp(t int64, o Outcome) uint32 {
	d := t - stampEpoch
	var secs int64
	if d > 0 {
		secs = (d + int64(time.Second) - 1) / int64(time.Second)
	}
	secs = min(secs, maxStampSecs)
	return uint32(secs)<<1 | uint32(o&1)
}

// stampOutcome is the outcome packed in v.
func stampOutcome(v uint32) Outcome { return Outcome(v & 1) }

// stampNanos is the done time packed in v, in ns since 1970.
func stampNanos(v uint32) int64 { return stampEpoch + int64(v>>1)*int64(time.Second) }

type doneEntry struct {
	fp id.Fingerprint
	v  uint32
}

// doneKey is the part of a fingerprint the done set keys on.
type doneKey [12]byte

func dkey(fp id.Fingerprint) doneKey { return doneKey(fp[:12]) }

type doneSet struct {
	// m maps a key to its stamp; in a bounded set (c != nil) to the
	// position of its newest entry in c's FIFO, which holds the stamp.
	m   map[doneKey]uint32
	ttl [2]int64    // per outcome, ns; 0 = forever
	q   [2]doneFIFO // unbounded, per outcome with a TTL: keys in the order they were done
	c   *doneCache  // the bound (Config.DoneCache); nil: unbounded
}

// init makes an empty set; limit > 0 bounds it (see doneCache).
func (d *doneSet) init(doneTTL, failedTTL time.Duration, limit int) {
	d.m = make(map[doneKey]uint32)
	d.ttl = [2]int64{int64(doneTTL), int64(failedTTL)}
	if limit > 0 {
		d.c = &doneCache{limit: limit, inAir: make(map[id.Fingerprint]uint64)}
	}
}

// size is the number of done records held, expired ones not yet swept
// included.
func (d *doneSet) size() int { return len(d.m) }

// lookup returns the stamp of fp, expired or not.
func (d *doneSet) lookup(fp id.Fingerprint) (uint32, bool) {
	v, ok := d.m[dkey(fp)]
	if ok && d.c != nil {
		v = d.c.stamp(v)
	}
	return v, ok
}

// remove forgets fp; its FIFO entry, if any, goes stale (a bounded set
// drops stale entries from its front at once).
func (d *doneSet) remove(fp id.Fingerprint) {
	delete(d.m, dkey(fp))
	if d.c != nil {
		d.c.evict(d.m)
	}
}

// expired reports whether the record with stamp v is older than its TTL at t.
func (d *doneSet) expired(v uint32, t int64) bool {
	ttl := d.ttl[v&1]
	return ttl != 0 && t >= stampNanos(v)+ttl
}

// get returns the outcome of fp if it is done and not expired at t.
func (d *doneSet) get(fp id.Fingerprint, t int64) (Outcome, bool) {
	v, ok := d.lookup(fp)
	if !ok || d.expired(v, t) {
		return 0, false
	}
	return stampOutcome(v), true
}

// put marks fp done at t with outcome o (replacing any earlier record);
// its write goes in write batch batch (0: durable already). A bounded set
// then evicts what it may.
func (d *doneSet) put(fp id.Fingerprint, t int64, o Outcome, batch uint64) {
	v := makeStamp(t, o)
	if d.c != nil {
		d.m[dkey(fp)] = d.c.push(fp, v, batch)
		d.c.evict(d.m)
		return
	}
	d.m[dkey(fp)] = v
	if d.ttl[o&1] != 0 {
		d.q[o&1].push(doneEntry{fp, v})
	}
}

// sweep pops at most limit entries per outcome whose TTL has passed at t and
// deletes their records, calling gone for each record deleted. A bounded
// set keeps no sweep queues: its expired records are answered as absent,
// deleted by a request (as in an unbounded set) or evicted, and the store
// expires its own copies.
func (d *doneSet) sweep(t int64, limit int, gone func(id.Fingerprint)) {
	for o := range d.q {
		q := &d.q[o]
		for n := 0; n < limit && q.n > 0; n++ {
			e := q.front()
			if !d.expired(e.v, t) {
				break
			}
			q.pop()
			k := dkey(e.fp)
			if cur, ok := d.m[k]; ok && cur == e.v {
				delete(d.m, k)
				gone(e.fp)
			}
		}
	}
}

// doneFIFO is the sweep queue of an unbounded set.
type doneFIFO = fifo[doneEntry]

// fifo is a queue in fixed-size chunks: it costs the size of its entries
// plus at most two chunks, and never copies them.
type fifo[T any] struct {
	chunks [][]T // the front is chunks[0][head], the back chunks[last][tail-1]
	head   int
	tail   int
	n      int
	spare  []T // a drained chunk kept for the next push
}

const fifoChunk = 1024

func (q *fifo[T]) front() T { return q.chunks[0][q.head] }

// at returns the i-th entry from the front.
func (q *fifo[T]) at(i int) T {
	i += q.head
	return q.chunks[i/fifoChunk][i%fifoChunk]
}

func (q *fifo[T]) push(e T) {
	if len(q.chunks) == 0 || q.tail == fifoChunk {
		c := q.spare
		if c == nil {
			c = make([]T, fifoChunk)
		}
		q.spare = nil
		q.chunks = append(q.chunks, c)
		q.tail = 0
	}
	q.chunks[len(q.chunks)-1][q.tail] = e
	q.tail++
	q.n++
}

func (q *fifo[T]) pop() {
	q.head++
	q.n--
	switch {
	case q.n == 0: // one chunk left, now empty: reuse it from its start
		q.head, q.tail = 0, 0
	case q.head == fifoChunk:
		q.spare = q.chunks[0]
		q.chunks[0] = nil
		q.chunks = q.chunks[1:]
		q.head = 0
	}
}
