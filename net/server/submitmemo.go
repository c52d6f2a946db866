package server

import (
	"bytes"
	"slices"
	"time"

	"drover/coord/id"
	"drover/net/wire"
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
// memoMaxKeys keys in all (the oldest requests go first). A coordinator
// restart forgets them (see docs/PROTOCOL.md §6.11).

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
		}
	}
	clear(m.order[len(kept):])
	m.order = kept
}
