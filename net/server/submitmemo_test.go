package server

import (
	"path/filepath"
	"testing"

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
