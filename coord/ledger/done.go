package ledger

import (
	"time"

	"drover/coord/id"
)

// The done set is kept apart from the live records, compact: one map entry
// per key, fingerprint -> stamp (20 bytes of payload), where a stamp packs
// the done time in whole seconds since stampEpoch (31 bits, rounded up, so a
// record never expires early) with the outcome in the low bit. No key is
// kept: a done record only has to answer No.
//
// Expiry is lazy (a request checks the stamp), and memory is reclaimed by a
// sweep: each outcome with a TTL has a FIFO of (fingerprint, stamp) in the
// order keys were done, which, the TTL being fixed, is expiry order. The
// sweep pops expired entries from the front and deletes the map entry if its
// stamp is still the one queued (a key done again, or requested again after
// expiry, leaves a stale entry that is skipped).

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

type doneSet struct {
	m   map[id.Fingerprint]uint32
	ttl [2]int64    // per outcome, ns; 0 = forever
	q   [2]doneFIFO // per outcome with a TTL: keys in the order they were done
}

func (d *doneSet) init(doneTTL, failedTTL time.Duration) {
	d.m = make(map[id.Fingerprint]uint32)
	d.ttl = [2]int64{int64(doneTTL), int64(failedTTL)}
}

// expired reports whether the record with stamp v is older than its TTL at t.
func (d *doneSet) expired(v uint32, t int64) bool {
	ttl := d.ttl[v&1]
	return ttl != 0 && t >= stampNanos(v)+ttl
}

// get returns the outcome of fp if it is done and not expired at t.
func (d *doneSet) get(fp id.Fingerprint, t int64) (Outcome, bool) {
	v, ok := d.m[fp]
	if !ok || d.expired(v, t) {
		return 0, false
	}
	return stampOutcome(v), true
}

// put marks fp done at t with outcome o (replacing any earlier record).
func (d *doneSet) put(fp id.Fingerprint, t int64, o Outcome) {
	v := makeStamp(t, o)
	d.m[fp] = v
	if d.ttl[o&1] != 0 {
		d.q[o&1].push(doneEntry{fp, v})
	}
}

// sweep pops at most limit entries per outcome whose TTL has passed at t and
// deletes their records, calling gone for each record deleted.
func (d *doneSet) sweep(t int64, limit int, gone func(id.Fingerprint)) {
	for o := range d.q {
		q := &d.q[o]
		for n := 0; n < limit && q.n > 0; n++ {
			e := q.front()
			if !d.expired(e.v, t) {
				break
			}
			q.pop()
			if cur, ok := d.m[e.fp]; ok && cur == e.v {
				delete(d.m, e.fp)
				gone(e.fp)
			}
		}
	}
}

// doneFIFO is a ring buffer of done entries with a power-of-two capacity.
type doneFIFO struct {
	buf  []doneEntry
	head int
	n    int
}

func (q *doneFIFO) front() doneEntry { return q.buf[q.head] }

func (q *doneFIFO) push(e doneEntry) {
	if q.n == len(q.buf) {
		q.resize(max(16, 2*len(q.buf)))
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = e
	q.n++
}

func (q *doneFIFO) pop() {
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	if len(q.buf) > 1024 && q.n < len(q.buf)/4 {
		q.resize(len(q.buf) / 2) // give memory back after a burst
	}
}

func (q *doneFIFO) resize(size int) {
	buf := make([]doneEntry, size)
	for i := 0; i < q.n; i++ {
		buf[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
	}
	q.buf, q.head = buf, 0
}
