package server

import (
	"bytes"
	"encoding/binary"
	"fmt"
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

// memoEntry is what one request got accepted, key and job id, in the
// order the answers said it (sorted by key when a resend needs it).
type memoEntry struct {
	accepted []memoItem
	sorted   bool
	used     time.Time
}

type memoItem struct {
	fp  id.Fingerprint
	job uint64
}

// find returns the job the request got accepted for fp.
func (e *memoEntry) find(fp id.Fingerprint) (uint64, bool) {
	if !e.sorted {
		slices.SortFunc(e.accepted, func(a, b memoItem) int { return bytes.Compare(a.fp[:], b.fp[:]) })
		e.sorted = true
	}
	i, ok := slices.BinarySearchFunc(e.accepted, fp, func(a memoItem, fp id.Fingerprint) int { return bytes.Compare(a.fp[:], fp[:]) })
	if !ok {
		return 0, false
	}
	return e.accepted[i].job, true
}

// submitMemo is the server's memory of accepted submits (reactor only).
type submitMemo struct {
	entries map[memoKey]*memoEntry
	order   []memoKey // creation order, for expiry and the size bound
	keys    int       // accepted keys held in all
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
// (patch): the items it rewrote are not duplicates.
func (s *Server) patchSubmitted(now time.Time, p *peer, req uint64, items []wire.SubmittedItem) {
	if n := s.memo.patch(now, memoName(p), req, items); n > 0 {
		s.c.UncountDuplicates(n)
		s.log.Info("submit resent: keys its first send got accepted answered accepted again", "producer", p.id, "request", req, "keys", n)
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
	if e != nil {
		var seen map[id.Fingerprint]bool
		for i := range items {
			it := &items[i]
			if it.Status != wire.SubmitDuplicate {
				continue
			}
			j, ok := e.find(it.Fingerprint)
			if !ok || seen[it.Fingerprint] {
				continue
			}
			if seen == nil {
				seen = make(map[id.Fingerprint]bool)
			}
			seen[it.Fingerprint] = true
			it.Status, it.JobID, it.Reason = wire.SubmitAccepted, j, ""
			rewritten++
		}
	}
	existed := e != nil
	var add []memoItem
	for i := range items {
		it := &items[i]
		if it.Status != wire.SubmitAccepted || it.JobID == 0 {
			continue
		}
		if existed {
			if _, ok := e.find(it.Fingerprint); ok {
				continue // a resend's item answered from the memo
			}
		}
		add = append(add, memoItem{it.Fingerprint, it.JobID})
	}
	if len(add) > 0 {
		if e == nil {
			e = m.add(now, k)
		}
		e.accepted = append(e.accepted, add...)
		e.sorted = false
		m.keys += len(add)
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
			m.keys -= len(e.accepted)
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
			m.keys -= len(e.accepted)
			delete(m.entries, k)
			m.touch(k)
		}
	}
	clear(m.order[len(kept):])
	m.order = kept
}

// pendingMemos reports whether memos changed since the last batch.
func (s *Server) pendingMemos() bool { return len(s.memo.dirty) > 0 }

// memosInto writes the memos that changed into b: the step's SUBMITTEDs
// wait for b, so what they said is durable with them.
func (s *Server) memosInto(b *store.Batch) {
	m := &s.memo
	for k := range m.dirty {
		if e, ok := m.entries[k]; ok {
			b.PutMemo(k.producer, k.req, encodeMemo(e)) // a refusal fails the batch
		} else {
			b.DeleteMemo(k.producer, k.req)
		}
	}
	clear(m.dirty)
}

// encodeMemo is the stored form of a memo: when it was last used (Unix
// ns), then per accepted key its fingerprint and job id.
func encodeMemo(e *memoEntry) []byte {
	v := make([]byte, 0, 8+len(e.accepted)*(len(id.Fingerprint{})+8))
	v = binary.BigEndian.AppendUint64(v, uint64(e.used.UnixNano()))
	for _, it := range e.accepted {
		v = append(v, it.fp[:]...)
		v = binary.BigEndian.AppendUint64(v, it.job)
	}
	return v
}

// decodeMemo is encodeMemo's inverse.
func decodeMemo(v []byte) (*memoEntry, error) {
	const item = len(id.Fingerprint{}) + 8
	if len(v) < 8 || (len(v)-8)%item != 0 {
		return nil, fmt.Errorf("submit memo of %d bytes: want 8 + %d per key", len(v), item)
	}
	e := &memoEntry{used: time.Unix(0, int64(binary.BigEndian.Uint64(v)))}
	for rest := v[8:]; len(rest) > 0; rest = rest[item:] {
		var it memoItem
		copy(it.fp[:], rest)
		it.job = binary.BigEndian.Uint64(rest[len(it.fp):])
		if it.job == 0 {
			return nil, fmt.Errorf("submit memo: key %s with job 0, want the job it was accepted as", it.fp)
		}
		e.accepted = append(e.accepted, it)
	}
	return e, nil
}

// restoreMemos reads the store's memos back (New), oldest use first, and
// expires those past memoTTL.
func (s *Server) restoreMemos() error {
	m := &s.memo
	m.durable = true
	err := s.dur.st.ReadMemos(func(producer string, req uint64, v []byte) error {
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
		m.keys += len(e.accepted)
		return nil
	})
	if err != nil {
		return fmt.Errorf("restore submit memos: %w", err)
	}
	slices.SortStableFunc(m.order, func(a, b memoKey) int { return m.entries[a].used.Compare(m.entries[b].used) })
	m.expire(s.now())
	return nil
}
