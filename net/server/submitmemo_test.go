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

// TestMemoEncoding: a memo reads back as itself (keys in order, job runs
// split where ids do not follow), a memo stored in the format before
// (whole fingerprints and job ids) reads as the same memo, and a damaged
// one is refused.
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
	for name, v := range map[string][]byte{"format 2": encodeMemo(e), "format 1": old} {
		d, err := decodeMemo(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !d.used.Equal(e.used) || !slices.Equal(d.fps, e.fps) || !slices.Equal(d.runs, e.runs) {
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
	v := encodeMemo(e)
	for name, bad := range map[string][]byte{
		"empty":         {},
		"format 3":      append([]byte{0, 3}, v[2:]...),
		"cut":           v[:len(v)-3],
		"runs too long": append(slices.Clone(v), 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1),
		"format 1 cut":  old[:len(old)-1],
	} {
		if _, err := decodeMemo(bad); err == nil {
			t.Errorf("%s: decoded, want an error", name)
		}
	}
}

// FuzzDecodeMemo: no stored memo makes decodeMemo panic, and one it reads
// is written back as it was read (format 2).
func FuzzDecodeMemo(f *testing.F) {
	e := &memoEntry{used: time.Unix(1_700_000_000, 0)}
	e.accept(1, 10)
	e.accept(2, 11)
	e.accept(3, 40)
	f.Add(encodeMemo(e))
	f.Add([]byte{0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0})
	f.Add(binary.BigEndian.AppendUint64(nil, 1))
	f.Fuzz(func(t *testing.T, v []byte) {
		d, err := decodeMemo(v)
		if err != nil || len(v) == 0 || v[0] != 0 {
			return
		}
		if w := encodeMemo(d); !bytes.Equal(w, v) {
			t.Fatalf("read %x, wrote back %x", v, w)
		}
	})
}
