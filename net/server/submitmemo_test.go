package server

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"drover/coord/id"
	"drover/net/wire"
)

// TestSubmitResentAfterReconnect: a producer whose session ended sends a
// SUBMIT again under the same request id on a new session (its first
// answer never reached it): the keys the first send got accepted are
// answered accepted again with the same job ids, a key twice in the request
// once, and only that producer's resend of that request is recognised; a
// producer that said goodbye is forgotten.
func TestSubmitResentAfterReconnect(t *testing.T) {
	s := startServer(t, Options{})
	a, b, c := key("http://memo.test/a"), key("http://memo.test/b"), key("http://memo.test/c")
	p1 := dial(t, s.PeersEndpoint())
	hello(t, p1, wire.RoleProducer, "p1", 0)
	p1.send(&wire.Submit{Req: 5, Jobs: []wire.SubmitItem{{Key: a}, {Key: b}}})
	first := expect[*wire.Submitted](t, p1.recv())
	ja, jb := first.Items[0].JobID, first.Items[1].JobID
	if first.Items[0].Status != wire.SubmitAccepted || first.Items[1].Status != wire.SubmitAccepted {
		t.Fatalf("first send: %+v, want both accepted", first.Items)
	}

	// The same producer on a new connection (its first one is gone).
	p1b := dial(t, s.PeersEndpoint())
	hello(t, p1b, wire.RoleProducer, "p1", 0)
	p1b.send(&wire.Submit{Req: 5, Jobs: []wire.SubmitItem{{Key: a}, {Key: b}, {Key: a}, {Key: c}}})
	again := expect[*wire.Submitted](t, p1b.recv())
	want := []struct {
		st  wire.SubmitStatus
		job uint64
	}{{wire.SubmitAccepted, ja}, {wire.SubmitAccepted, jb}, {wire.SubmitDuplicate, ja}, {wire.SubmitAccepted, 0}}
	for i, w := range want {
		it := again.Items[i]
		if it.Status != w.st || (w.job != 0 && it.JobID != w.job) {
			t.Fatalf("resent item %d: %s job %d, want %s job %d (all: %+v)", i, it.Status, it.JobID, w.st, w.job, again.Items)
		}
	}
	// The resend's copies of a and b are not duplicates (the second a is):
	// the totals count one.
	con := dial(t, s.InprocAdmin())
	con.send(&wire.Hello{Req: 1, Role: wire.RoleConsole, ID: "console"})
	expect[*wire.Welcome](t, con.recv())
	con.send(&wire.Status{Req: 2})
	var tot *wire.Totals
	for tot == nil {
		if m, ok := con.recv().(*wire.Totals); ok {
			tot = m
		}
	}
	if tot.Totals.DedupHits != 1 {
		t.Fatalf("dedup hits after the resend: %d, want 1 (the key twice in the request)", tot.Totals.DedupHits)
	}
	// Another request of the same producer is not its resend.
	p1b.send(&wire.Submit{Req: 6, Jobs: []wire.SubmitItem{{Key: a}}})
	if it := expect[*wire.Submitted](t, p1b.recv()).Items[0]; it.Status != wire.SubmitDuplicate || it.JobID != ja {
		t.Fatalf("another request: %+v, want duplicate of job %d", it, ja)
	}
	// Another producer's request 5 is not either.
	p2 := dial(t, s.PeersEndpoint())
	hello(t, p2, wire.RoleProducer, "p2", 0)
	p2.send(&wire.Submit{Req: 5, Jobs: []wire.SubmitItem{{Key: b}}})
	if it := expect[*wire.Submitted](t, p2.recv()).Items[0]; it.Status != wire.SubmitDuplicate {
		t.Fatalf("another producer: %+v, want duplicate", it)
	}
	// A producer that said goodbye resends nothing: forgotten.
	p1b.send(&wire.Disconnect{Code: wire.CodeOK})
	p1c := dial(t, s.PeersEndpoint())
	hello(t, p1c, wire.RoleProducer, "p1", 0)
	p1c.send(&wire.Submit{Req: 5, Jobs: []wire.SubmitItem{{Key: a}}})
	if it := expect[*wire.Submitted](t, p1c.recv()).Items[0]; it.Status != wire.SubmitDuplicate {
		t.Fatalf("after goodbye: %+v, want duplicate", it)
	}
}

// TestSubmitMemoSurvivesKill: the memo is durable. A producer's SUBMIT is
// answered, the coordinator process is SIGKILLed and restarted on its
// store, and the producer sends the request again (its answer, say, never
// arrived): the keys the first send got accepted are answered accepted with
// their job ids, a new key in it is accepted, and nothing counts as a
// duplicate.
func TestSubmitMemoSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := filepath.Join(t.TempDir(), "store")
	a, b, c := key("http://memo.test/a"), key("http://memo.test/b"), key("http://memo.test/c")
	c1 := startUnrecChild(t, dir)
	p := dial(t, c1.peers)
	hello(t, p, wire.RoleProducer, "p1", 0)
	p.send(&wire.Submit{Req: 5, Jobs: []wire.SubmitItem{{Key: a}, {Key: b}}})
	first := expect[*wire.Submitted](t, p.recv())
	c1.kill()

	c2 := startUnrecChild(t, dir)
	p2 := dial(t, c2.peers)
	hello(t, p2, wire.RoleProducer, "p1", 0)
	p2.send(&wire.Submit{Req: 5, Jobs: []wire.SubmitItem{{Key: a}, {Key: b}, {Key: c}}})
	again := expect[*wire.Submitted](t, p2.recv())
	for i, it := range again.Items {
		if it.Status != wire.SubmitAccepted || (i < 2 && it.JobID != first.Items[i].JobID) {
			t.Fatalf("resent item %d after the restart: %+v, want accepted as its first send (%+v)", i, it, first.Items)
		}
	}
	con := dial(t, c2.admin)
	con.send(&wire.Hello{Req: 1, Role: wire.RoleConsole, ID: "console"})
	expect[*wire.Welcome](t, con.recv())
	con.send(&wire.Status{Req: 2})
	var tot *wire.Totals
	for tot == nil {
		if m, ok := con.recv().(*wire.Totals); ok {
			tot = m
		}
	}
	if tot.Totals.DedupHits != 0 || tot.Totals.Queued != 3 {
		t.Fatalf("totals after the resend: %d dedup hits, %d queued; want 0 and 3", tot.Totals.DedupHits, tot.Totals.Queued)
	}
}

// TestMemoEncoding: a memo reads back as itself (its whole part, keys in
// order, job runs split where ids do not follow), memos stored in the
// formats before (2: no whole part; 1: whole fingerprints and job ids)
// read as the same memo, and a damaged one is refused.
func TestMemoEncoding(t *testing.T) {
	fp := func(i int) id.Fingerprint { return key(fmt.Sprintf("http://memo.test/%d", i)).Fingerprint() }
	jobs := []uint64{7, 8, 9, 20, 21, 5}
	e := &memoEntry{used: time.Unix(1_700_000_000, 123)}
	for i, j := range jobs {
		e.accept(fpPrefix(fp(i)), j)
	}
	if len(e.runs) != 3 {
		t.Fatalf("runs %+v, want 3", e.runs)
	}
	old := binary.BigEndian.AppendUint64(nil, uint64(e.used.UnixNano()))
	for i, j := range jobs {
		f := fp(i)
		old = append(old, f[:]...)
		old = binary.BigEndian.AppendUint64(old, j)
	}
	v := encodeMemo(e)
	format2 := append([]byte{0, 2}, v[2:10]...)
	format2 = append(format2, v[22:]...) // no whole count, no sum
	for name, v := range map[string][]byte{"format 3": v, "format 2": format2, "format 1": old} {
		d, err := decodeMemo(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !d.used.Equal(e.used) || d.whole != 0 || !slices.Equal(d.fps, e.fps) || !slices.Equal(d.runs, e.runs) {
			t.Fatalf("%s: read back %+v, want %+v", name, d, e)
		}
		for i, j := range jobs {
			if got, ok := d.find(fp(i)); !ok || got != j {
				t.Fatalf("%s: key %d: job %d %v, want %d", name, i, got, ok, j)
			}
		}
		if _, ok := d.find(fp(len(jobs))); ok {
			t.Fatalf("%s: a key the request did not get accepted is found", name)
		}
	}
	// A whole part (a first answer that accepted every key) and a key after.
	w := &memoEntry{used: e.used}
	w.acceptWhole(submitted(fp, 0, 3, 40))
	w.accept(fpPrefix(fp(3)), 90)
	d, err := decodeMemo(encodeMemo(w))
	if err != nil || d.whole != 3 || d.sum != w.sum || !slices.Equal(d.fps, w.fps) || !slices.Equal(d.runs, w.runs) {
		t.Fatalf("whole part: read back %+v (%v), want %+v", d, err, w)
	}
	for name, bad := range map[string][]byte{
		"empty":           {},
		"format 4":        append([]byte{0, 4}, v[2:]...),
		"format 3 short":  v[:memoHead-1],
		"format 2 short":  format2[:13],
		"cut":             v[:len(v)-3],
		"runs too long":   append(slices.Clone(v), 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1),
		"whole too long":  append(append(slices.Clone(v[:10]), 0, 0, 0, 1), v[14:]...),
		"format 1 cut":    old[:len(old)-1],
		"format 2 as 3":   append([]byte{0, 3}, format2[2:]...),
		"format 3 runs 0": append(slices.Clone(v[:memoHead]), make([]byte, 12)...),
	} {
		if _, err := decodeMemo(bad); err == nil {
			t.Errorf("%s: decoded, want an error", name)
		}
	}
}

// submitted is a first answer accepting keys fp(from) to fp(from+n-1) as
// jobs job, job+1, ...
func submitted(fp func(int) id.Fingerprint, from, n int, job uint64) []wire.SubmittedItem {
	items := make([]wire.SubmittedItem, n)
	for i := range items {
		items[i] = wire.SubmittedItem{Status: wire.SubmitAccepted, JobID: job + uint64(i), Fingerprint: fp(from + i)}
	}
	return items
}

// TestMemoWhole: a request whose first answer accepted every key is kept
// without its keys' fingerprints (a few bytes a request, not 8 a key).
// Its resend, the same keys in the same order, is answered as the first
// send was, whether a key's job is still held (the duplicate names it) or
// not (done: job 0); the memo then holds the keys by fingerprint, so a
// later answer of the request (a wait resolved) is patched too. A resend
// in another order is still answered accepted for the keys whose job is
// held; a request that did not accept every key keeps its keys.
func TestMemoWhole(t *testing.T) {
	fp := func(i int) id.Fingerprint { return key(fmt.Sprintf("http://memo.test/%d", i)).Fingerprint() }
	now := time.Unix(1_700_000_000, 0)
	var m submitMemo
	first := submitted(fp, 0, 1000, 100)
	first[500].JobID = 5000 // a second run
	m.patch(now, "p", 1, first)
	e := m.entries[memoKey{"p", 1}]
	if e == nil || e.whole != 1000 || e.fps != nil || len(e.runs) != 3 || m.keys != 1000 {
		t.Fatalf("memo of a whole first answer: %+v (%d keys), want 1000 keys in the whole part, no fingerprints, 3 runs", e, m.keys)
	}
	resend := func(order []int, job func(i int) uint64) []wire.SubmittedItem {
		items := make([]wire.SubmittedItem, len(order))
		for k, i := range order {
			items[k] = wire.SubmittedItem{Status: wire.SubmitDuplicate, JobID: job(i), Fingerprint: fp(i), Reason: "queued"}
		}
		return items
	}
	want := func(i int) uint64 { return first[i].JobID }
	check := func(name string, items []wire.SubmittedItem, order []int, acceptedFor func(i int) bool) {
		t.Helper()
		for k, i := range order {
			it := items[k]
			switch {
			case acceptedFor(i) && (it.Status != wire.SubmitAccepted || it.JobID != want(i)):
				t.Fatalf("%s: key %d: %+v, want accepted as job %d", name, i, it, want(i))
			case !acceptedFor(i) && it.Status == wire.SubmitAccepted:
				t.Fatalf("%s: key %d: %+v, want it as the coordinator answered", name, i, it)
			}
		}
	}
	all := func(int) bool { return true }

	// Another order, jobs held: recognised by job, the memo not expanded.
	rev := make([]int, 1000)
	for k := range rev {
		rev[k] = 999 - k
	}
	items := resend(rev, want)
	if n := m.patch(now, "p", 1, items); n != 1000 {
		t.Fatalf("resend in another order: %d rewritten, want 1000", n)
	}
	check("another order", items, rev, all)
	if e.whole != 1000 || m.keys != 1000 {
		t.Fatalf("after a resend in another order: whole %d, %d keys; want 1000 and 1000", e.whole, m.keys)
	}
	// With a shared queue its job ids are not those duplicates name: not
	// recognised by job.
	m.sharedIDs = true
	items = resend(rev[:10], want)
	if n := m.patch(now, "p", 1, items); n != 0 {
		t.Fatalf("resend in another order, a shared queue's ids: %d rewritten, want 0", n)
	}
	m.sharedIDs = false
	// Another order, jobs gone (done keys: job 0): not recognised.
	items = resend(rev[:10], func(int) uint64 { return 0 })
	if n := m.patch(now, "p", 1, items); n != 0 {
		t.Fatalf("resend in another order, jobs gone: %d rewritten, want 0", n)
	}
	// The same request: recognised whatever the jobs, and expanded.
	same := make([]int, 1000)
	for k := range same {
		same[k] = k
	}
	items = resend(same, func(i int) uint64 { return uint64(i % 2 * 77777) }) // half done (0), half held by some job
	items[3] = wire.SubmittedItem{Status: wire.SubmitWait, Fingerprint: fp(3), Reason: "requested"}
	if n := m.patch(now, "p", 1, items); n != 999 {
		t.Fatalf("the same request resent: %d rewritten, want 999", n)
	}
	check("the same request", items, same, func(i int) bool { return i != 3 })
	if e.whole != 0 || len(e.fps) != 1000 || m.keys != 1000 {
		t.Fatalf("after the same request resent: whole %d, %d fingerprints, %d keys; want 0, 1000, 1000", e.whole, len(e.fps), m.keys)
	}
	// The wait resolved: a later answer with that key alone.
	later := []wire.SubmittedItem{{Status: wire.SubmitDuplicate, Fingerprint: fp(3), Reason: "queued"}}
	if n := m.patch(now, "p", 1, later); n != 1 || later[0].JobID != want(3) {
		t.Fatalf("the wait's answer: %d rewritten, %+v; want 1, job %d", n, later[0], want(3))
	}

	// A first answer with a duplicate keeps its accepted keys' fingerprints.
	mixed := submitted(fp, 2000, 10, 900)
	mixed[4] = wire.SubmittedItem{Status: wire.SubmitDuplicate, JobID: 100, Fingerprint: fp(0), Reason: "queued"}
	m.patch(now, "p", 2, mixed)
	if e := m.entries[memoKey{"p", 2}]; e.whole != 0 || len(e.fps) != 9 {
		t.Fatalf("memo of a first answer with a duplicate: %+v, want 9 fingerprints", e)
	}
	if m.keys != 1009 {
		t.Fatalf("keys held %d, want 1009", m.keys)
	}
}

// FuzzDecodeMemo: no stored memo makes decodeMemo panic, and one it reads
// in the current format is written back as it was read.
func FuzzDecodeMemo(f *testing.F) {
	e := &memoEntry{used: time.Unix(1_700_000_000, 0)}
	e.accept(1, 10)
	e.accept(2, 11)
	e.accept(3, 40)
	f.Add(encodeMemo(e))
	w := &memoEntry{used: e.used}
	w.acceptWhole([]wire.SubmittedItem{{Status: wire.SubmitAccepted, JobID: 3}, {Status: wire.SubmitAccepted, JobID: 4}})
	w.accept(9, 70)
	f.Add(encodeMemo(w))
	f.Add([]byte{0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0})
	f.Add(binary.BigEndian.AppendUint64(nil, 1))
	f.Fuzz(func(t *testing.T, v []byte) {
		d, err := decodeMemo(v)
		if err != nil || len(v) < 2 || v[0] != 0 || v[1] != memoFormat {
			return
		}
		if w := encodeMemo(d); !bytes.Equal(w, v) {
			t.Fatalf("read %x, wrote back %x", v, w)
		}
	})
}
