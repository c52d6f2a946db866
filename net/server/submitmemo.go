package server

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"time"

	"drover/coord/id"
	"drover/net/wire"
	"drover/store"
)

// Submit resumption (issue 14). A producer whose session ends before the
// SUBMITTED of a request arrives sends the request again on its next
// session, with the same request id (DRV/2 allows it: the first one is no
// longer outstanding). The keys its first send got accepted are now
// duplicates of the jobs it made, and a producer counting them would say
// "0 accepted, N duplicates" while it added N jobs. So the server
// remembers, per producer id and request id, which keys each SUBMIT got
// accepted (directly or when a wait ended), and answers a resent one's
// duplicate of such a key as accepted, with that job's id: the statuses a
// producer gets for one request are those of its first send, whatever
// number of times it sends it.
//
// The memory lasts while it can matter: a producer that ends its session
// with DISCONNECT has its memos dropped at once (it resends nothing), the
// others' are kept for memoTTL after their last use (a resend comes
// within liveness plus the reconnect back-off, 32 s at most), and at most
// memoMaxKeys keys in all (the oldest requests go first).
//
// With a store the memos are durable: each change goes into the step's
// batch, with the jobs the SUBMITTED names (so the memo is durable when
// the answer leaves), and New restores them. A producer that re-sends a
// request after a coordinator restart is answered as its first send was.

const (
	memoTTL     = 2 * time.Minute
	memoMaxKeys = 1 << 20
)

// memoName is the name the memo knows a peer by: its role and HELLO id
// (stable across its reconnects).
func memoName(p *peer) string { return p.role.String() + "/" + p.id }

// memoKey names one request of one producer.
type memoKey struct {
	producer string
	req      uint64
}

// memoEntry is what one request got accepted, compactly (issue 21: a
// memo of every key of a million-key submit cost the coordinator 8 bytes
// a key, 24 before that; now a few bytes a request). The job ids, in
// answer order, are runs of consecutive ids (a step submits a request's
// new jobs one after the other). The keys:
//
//   - A request whose first answer accepted every key (the common case: a
//     producer's new keys) keeps none of them, only their number (whole)
//     and a 64-bit sum of their fingerprints in order. Its resend, a whole
//     SUBMIT in the same order (a client resends what got no answer, and an
//     answer that accepted every key leaves nothing to resend), is answered
//     with the same fingerprints in that order: when they sum to the same,
//     the memo takes them from that answer (expand) and goes on as below.
//     A resend that is not the same request (another order, or keys
//     added; the protocol says a request id is never reused for another
//     SUBMIT) is still recognised for every key whose job is still held: a
//     duplicate names its job, and a job of the request's runs was made for
//     that key by this request (wholeJob; not with a shared queue, whose
//     job ids are not those duplicates name: sharedIDs).
//   - Keys accepted otherwise (in parts, or beside duplicates) are each
//     kept as the first 8 bytes of their fingerprint, in answer order. Two
//     keys of one request share them with a probability of about n²/2⁶⁵
//     (10⁻¹⁴ for a thousand keys): the prefix names the key. A resend
//     looks keys up in index, sorted, made at its first lookup.
type memoEntry struct {
	whole uint32    // the first whole accepted keys are the first answer's, every key of it; not in fps
	sum   uint64    // wholeSum of their fingerprints' prefixes, in order
	fps   []uint64  // the prefixes of the accepted keys after the first whole, in answer order
	runs  []memoRun // the jobs of every accepted key, in answer order
	used  time.Time
	index []memoItem // sorted by fp; nil until a lookup needs it
}

// memoRun is n accepted keys, in answer order, whose jobs are first,
// first+1, ...
type memoRun struct {
	first uint64
	n     uint32
}

type memoItem struct {
	fp  uint64
	job uint64
}

// fpPrefix is what a memo keeps of a fingerprint.
func fpPrefix(fp id.Fingerprint) uint64 { return binary.LittleEndian.Uint64(fp[:8]) }

// wholeSum names the items' fingerprints in order (a whole answer's): a
// resend that sums to the same lists the same keys in the same order.
func wholeSum(items []wire.SubmittedItem) uint64 {
	h := uint64(len(items))
	for i := range items {
		h = (bits.RotateLeft64(h, 27) ^ fpPrefix(items[i].Fingerprint)) * 0x9E3779B97F4A7C15
	}
	return h ^ h>>31
}

// keys is the number of keys the request got accepted.
func (e *memoEntry) keys() int { return int(e.whole) + len(e.fps) }

// accept adds an accepted key and its job.
func (e *memoEntry) accept(fp uint64, job uint64) {
	e.fps = append(e.fps, fp)
	e.acceptJob(job)
	e.index = nil
}

// acceptJob adds the job of an accepted key to the runs.
func (e *memoEntry) acceptJob(job uint64) {
	if k := len(e.runs) - 1; k >= 0 && e.runs[k].first+uint64(e.runs[k].n) == job {
		e.runs[k].n++
	} else {
		e.runs = append(e.runs, memoRun{job, 1})
	}
}

// acceptWhole makes e, new, the memo of a first answer that accepted
// every item.
func (e *memoEntry) acceptWhole(items []wire.SubmittedItem) {
	e.whole, e.sum = uint32(len(items)), wholeSum(items)
	e.runs = e.runs[:0]
	for i := range items {
		e.acceptJob(items[i].JobID)
	}
}

// expand takes the whole part's keys from items, a resend's first answer,
// when they are the same keys in the same order: from then on every key
// is looked up by its fingerprint. It reports whether it did.
func (e *memoEntry) expand(items []wire.SubmittedItem) bool {
	if e.whole == 0 || len(items) != int(e.whole) || wholeSum(items) != e.sum {
		return false
	}
	fps := make([]uint64, len(items), len(items)+len(e.fps))
	for i := range items {
		fps[i] = fpPrefix(items[i].Fingerprint)
	}
	e.fps = append(fps, e.fps...)
	e.whole, e.sum, e.index = 0, 0, nil
	return true
}

// wholeJob says whether job is the job of one of the whole part's keys.
func (e *memoEntry) wholeJob(job uint64) bool {
	left := uint64(e.whole)
	for _, r := range e.runs {
		if left == 0 {
			return false
		}
		n := min(uint64(r.n), left)
		if job >= r.first && job < r.first+n {
			return true
		}
		left -= n
	}
	return false
}

// items yields the accepted keys kept by fingerprint (those after the
// whole part) and their jobs, in answer order.
func (e *memoEntry) items(yield func(fp, job uint64)) {
	i, skip := 0, uint64(e.whole)
	for _, r := range e.runs {
		k := min(skip, uint64(r.n))
		skip -= k
		for ; k < uint64(r.n); k++ {
			yield(e.fps[i], r.first+k)
			i++
		}
	}
}

// find returns the job the request got accepted for fp, among the keys
// kept by fingerprint.
func (e *memoEntry) find(fp id.Fingerprint) (uint64, bool) {
	if len(e.fps) == 0 {
		return 0, false
	}
	if e.index == nil {
		e.index = make([]memoItem, 0, len(e.fps))
		e.items(func(fp, job uint64) { e.index = append(e.index, memoItem{fp, job}) })
		slices.SortFunc(e.index, func(a, b memoItem) int { return cmp.Compare(a.fp, b.fp) })
	}
	i, ok := slices.BinarySearchFunc(e.index, fpPrefix(fp), func(a memoItem, fp uint64) int { return cmp.Compare(a.fp, fp) })
	if !ok {
		return 0, false
	}
	return e.index[i].job, true
}

// submitMemo is the Server's submit memo part: the keys each producer's
// requests got accepted (patch answers a resent SUBMIT with them: the
// peers part's patchSubmitted), their expiry and size bound, and, with a
// store, their records in the step's batch and their restore. The reactor
// goroutine owns it.
type submitMemo struct {
	entries map[memoKey]*memoEntry
	order   []memoKey // creation order, for expiry and the size bound
	keys    int       // accepted keys held in all
	// sharedIDs: accepted jobs are named by their ids in a queue shared
	// with other coordinators (a Redis Cluster store), a duplicate by its
	// job here: another id space, so a resend is not recognised by the
	// jobs its duplicates name (wholeJob).
	sharedIDs bool
	// With a store: the requests whose memo changed since the last batch
	// (written if still held, else deleted).
	durable bool
	dirty   map[memoKey]struct{}
}

// touch notes that k's memo changed (with a store).
func (m *submitMemo) touch(k memoKey) {
	if !m.durable {
		return
	}
	if m.dirty == nil {
		m.dirty = make(map[memoKey]struct{})
	}
	m.dirty[k] = struct{}{}
}

// patchSubmitted applies the memo to a SUBMITTED for request req of p
// (patch): the items it rewrote are not duplicates (peers.go).
func (d *peerDialogue) patchSubmitted(now time.Time, p *peer, req uint64, items []wire.SubmittedItem) {
	if n := d.memo.patch(now, memoName(p), req, items); n > 0 {
		d.c.UncountDuplicates(n)
		d.log.Info("submit resent: keys its first send got accepted answered accepted again", "producer", p.id, "request", req, "keys", n)
	}
}

// patch rewrites, in a SUBMITTED for request req of producer, every
// duplicate of a key an earlier send of the request got accepted into
// accepted with that job's id (once per key: a key twice in a request
// was accepted once), then remembers what this answer accepted. It
// returns how many items it rewrote: the coordinator counted them as
// duplicates, which they are not.
func (m *submitMemo) patch(now time.Time, producer string, req uint64, items []wire.SubmittedItem) (rewritten int) {
	if producer == "" || req == 0 {
		return 0
	}
	k := memoKey{producer, req}
	e := m.entries[k]
	// The accepted items to remember: not those a resend's memo answered.
	var answered []bool
	if e != nil {
		answered = make([]bool, len(items))
		e.expand(items) // a whole part's keys, from a resend of the same request
		var seen map[id.Fingerprint]bool
		for i := range items {
			it := &items[i]
			if it.Status != wire.SubmitDuplicate {
				continue
			}
			j, ok := e.find(it.Fingerprint)
			if !ok && it.JobID != 0 && !m.sharedIDs && e.wholeJob(it.JobID) {
				j, ok = it.JobID, true // a whole part's key, its job still held
			}
			if !ok || seen[it.Fingerprint] {
				continue
			}
			if seen == nil {
				seen = make(map[id.Fingerprint]bool)
			}
			seen[it.Fingerprint] = true
			it.Status, it.JobID, it.Reason = wire.SubmitAccepted, j, ""
			answered[i] = true
			rewritten++
		}
	}
	add := 0
	for i := range items {
		it := &items[i]
		if it.Status != wire.SubmitAccepted || it.JobID == 0 || (answered != nil && answered[i]) {
			continue
		}
		if answered != nil {
			if _, ok := e.find(it.Fingerprint); ok {
				answered[i] = true
				continue
			}
		}
		add++
	}
	switch {
	case add > 0 && e == nil && add == len(items):
		// A first answer that accepted every key: kept as a whole.
		e = m.add(now, k)
		e.acceptWhole(items)
		m.keys += add
	case add > 0:
		if e == nil {
			e = m.add(now, k)
		}
		// Room for exactly what comes (most requests are answered in one
		// step), or an eighth more for a request answered in parts:
		// append's room, a quarter of a long slice, was about 2 bytes a
		// key at 1M keys (issue 21).
		if cap(e.fps)-len(e.fps) < add {
			fps := make([]uint64, len(e.fps), len(e.fps)+max(add, len(e.fps)/8))
			copy(fps, e.fps)
			e.fps = fps
		}
		for i := range items {
			it := &items[i]
			if it.Status == wire.SubmitAccepted && it.JobID != 0 && (answered == nil || !answered[i]) {
				e.accept(fpPrefix(it.Fingerprint), it.JobID)
			}
		}
		m.keys += add
	}
	if e != nil {
		e.used = now
		m.touch(k)
	}
	m.expire(now)
	return rewritten
}

func (m *submitMemo) add(now time.Time, k memoKey) *memoEntry {
	if m.entries == nil {
		m.entries = make(map[memoKey]*memoEntry)
	}
	e := &memoEntry{used: now}
	m.entries[k] = e
	m.order = append(m.order, k)
	return e
}

// expire drops the oldest requests while they are past memoTTL or the
// memo holds more than memoMaxKeys keys.
func (m *submitMemo) expire(now time.Time) {
	n := 0
	for n < len(m.order) {
		k := m.order[n]
		e, ok := m.entries[k]
		if ok && now.Sub(e.used) < memoTTL && m.keys <= memoMaxKeys {
			break
		}
		if ok {
			m.keys -= e.keys()
			delete(m.entries, k)
			m.touch(k)
		}
		n++
	}
	if n > 0 {
		c := copy(m.order, m.order[n:])
		clear(m.order[c:])
		m.order = m.order[:c]
	}
}

// drop forgets every request of producer (it said goodbye).
func (m *submitMemo) drop(producer string) {
	if len(m.entries) == 0 {
		return
	}
	kept := m.order[:0]
	for _, k := range m.order {
		if k.producer != producer {
			kept = append(kept, k)
			continue
		}
		if e, ok := m.entries[k]; ok {
			m.keys -= e.keys()
			delete(m.entries, k)
			m.touch(k)
		}
	}
	clear(m.order[len(kept):])
	m.order = kept
}

// pending reports whether memos changed since the last batch.
func (m *submitMemo) pending() bool { return len(m.dirty) > 0 }

// into writes the memos that changed into b: the step's SUBMITTEDs wait
// for b, so what they said is durable with them.
func (m *submitMemo) into(b *store.Batch) {
	for k := range m.dirty {
		if e, ok := m.entries[k]; ok {
			b.PutMemo(k.producer, k.req, encodeMemo(e)) // a refusal fails the batch
		} else {
			b.DeleteMemo(k.producer, k.req)
		}
	}
	clear(m.dirty)
}

// The stored form of a memo: a zero byte, the format (3), when it was last
// used (Unix ns), the whole part's key count (4 bytes) and sum (8 bytes),
// the number of keys kept by fingerprint n (4 bytes), their prefixes (8
// bytes each), then the job runs (first job 8 bytes, length 4 bytes) to
// the end; big-endian. Format 2 had no whole part (no count, no sum).
// Format 1 was the time then per key its whole fingerprint and job id: its
// first byte, the time's, is never zero.
const memoFormat = 3

// memoHead is the length of format 3's fixed part.
const memoHead = 26

// encodeMemo is the stored form of a memo.
func encodeMemo(e *memoEntry) []byte {
	v := make([]byte, 0, memoHead+8*len(e.fps)+12*len(e.runs))
	v = append(v, 0, memoFormat)
	v = binary.BigEndian.AppendUint64(v, uint64(e.used.UnixNano()))
	v = binary.BigEndian.AppendUint32(v, e.whole)
	v = binary.BigEndian.AppendUint64(v, e.sum)
	v = binary.BigEndian.AppendUint32(v, uint32(len(e.fps)))
	for _, fp := range e.fps {
		v = binary.BigEndian.AppendUint64(v, fp)
	}
	for _, r := range e.runs {
		v = binary.BigEndian.AppendUint64(v, r.first)
		v = binary.BigEndian.AppendUint32(v, r.n)
	}
	return v
}

// decodeMemo is encodeMemo's inverse; it reads format 1 too.
func decodeMemo(v []byte) (*memoEntry, error) {
	if len(v) > 0 && v[0] != 0 {
		return decodeMemo1(v)
	}
	if len(v) < 2 || (v[1] != memoFormat && v[1] != 2) || (v[1] == 2 && len(v) < 14) || (v[1] == memoFormat && len(v) < memoHead) {
		return nil, fmt.Errorf("submit memo of %d bytes: want a zero byte, format 2 or %d, a time and the key counts", len(v), memoFormat)
	}
	e := &memoEntry{used: time.Unix(0, int64(binary.BigEndian.Uint64(v[2:])))}
	rest := v[10:]
	if v[1] == memoFormat {
		e.whole, e.sum = binary.BigEndian.Uint32(rest), binary.BigEndian.Uint64(rest[4:])
		rest = rest[12:]
	}
	n := int(binary.BigEndian.Uint32(rest))
	rest = rest[4:]
	if len(rest) < 8*n || (len(rest)-8*n)%12 != 0 {
		return nil, fmt.Errorf("submit memo of %d keys in %d bytes: want 8 bytes a key and 12 a job run", n, len(v))
	}
	e.fps = make([]uint64, n)
	for i := range e.fps {
		e.fps[i] = binary.BigEndian.Uint64(rest[8*i:])
	}
	total := 0
	for rest = rest[8*n:]; len(rest) > 0; rest = rest[12:] {
		r := memoRun{first: binary.BigEndian.Uint64(rest), n: binary.BigEndian.Uint32(rest[8:])}
		if r.first == 0 || r.n == 0 {
			return nil, fmt.Errorf("submit memo: job run %d+%d, want a job id and a length above 0", r.first, r.n)
		}
		total += int(r.n)
		e.runs = append(e.runs, r)
	}
	if total != int(e.whole)+n {
		return nil, fmt.Errorf("submit memo: job runs of %d jobs for %d keys, want one job a key", total, int(e.whole)+n)
	}
	return e, nil
}

// decodeMemo1 reads a memo of format 1.
func decodeMemo1(v []byte) (*memoEntry, error) {
	const item = len(id.Fingerprint{}) + 8
	if len(v) < 8 || (len(v)-8)%item != 0 {
		return nil, fmt.Errorf("submit memo of %d bytes: want 8 + %d per key", len(v), item)
	}
	e := &memoEntry{used: time.Unix(0, int64(binary.BigEndian.Uint64(v)))}
	for rest := v[8:]; len(rest) > 0; rest = rest[item:] {
		var fp id.Fingerprint
		copy(fp[:], rest)
		job := binary.BigEndian.Uint64(rest[len(fp):])
		if job == 0 {
			return nil, fmt.Errorf("submit memo: key %s with job 0, want the job it was accepted as", fp)
		}
		e.accept(fpPrefix(fp), job)
	}
	return e, nil
}

// restore reads the memos in st back (New), oldest use first, and
// expires those past memoTTL at now.
func (m *submitMemo) restore(st *store.Store, now time.Time) error {
	m.durable = true
	err := st.ReadMemos(func(producer string, req uint64, v []byte) error {
		e, err := decodeMemo(v)
		if err != nil {
			return fmt.Errorf("producer %q request %d: %w", producer, req, err)
		}
		if m.entries == nil {
			m.entries = make(map[memoKey]*memoEntry)
		}
		k := memoKey{producer, req}
		m.entries[k] = e
		m.order = append(m.order, k)
		m.keys += e.keys()
		return nil
	})
	if err != nil {
		return fmt.Errorf("restore submit memos: %w", err)
	}
	slices.SortStableFunc(m.order, func(a, b memoKey) int { return m.entries[a].used.Compare(m.entries[b].used) })
	m.expire(now)
	return nil
}
