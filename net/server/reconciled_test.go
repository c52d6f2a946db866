package server

import (
	"testing"

	"drover/admin"
	"drover/net/wire"
)

// TestReconnectKeepsHeldJobReconciled: a worker that reconnects (a new
// connection, the same HELLO id) listing its running job in held keeps the
// job, uncharged and as the same attempt: WELCOME cancels nothing, the old
// session gets DISCONNECT 409, the event job.reconciled names the job and
// the worker (docs/PROTOCOL.md §14), and the new session's RESULT is
// recorded. A job the new HELLO does not list goes back to the queue
// (job.requeued), without job.reconciled.
func TestReconnectKeepsHeldJobReconciled(t *testing.T) {
	g := &gatedStore{}
	s := startServer(t, Options{OnEvent: g.onEvent})
	w1 := dial(t, s.PeersEndpoint())
	hello(t, w1, wire.RoleWorker, "w1", 2)
	p := dial(t, s.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p1", 0)
	p.send(&wire.Submit{Req: 2, Jobs: []wire.SubmitItem{{Key: key("http://a.test/kept")}, {Key: key("http://a.test/dropped")}}})
	expect[*wire.Submitted](t, p.recv())
	var jobs []wire.JobItem
	for len(jobs) < 2 {
		jobs = append(jobs, expect[*wire.Job](t, w1.recv()).Jobs...)
	}
	kept, dropped := jobs[0], jobs[1]
	if kept.Key.URL != "http://a.test/kept" {
		kept, dropped = dropped, kept
	}

	w2 := dial(t, s.PeersEndpoint())
	w2.send(&wire.Hello{Req: 1, Role: wire.RoleWorker, ID: "w1", Host: "test", Slots: 1,
		Held: []wire.Run{{JobID: kept.JobID, Attempt: kept.Attempt}}})
	if wel := expect[*wire.Welcome](t, w2.recv()); len(wel.Cancel) != 0 {
		t.Fatalf("WELCOME cancels %v, want nothing: the held run is the job's current one", wel.Cancel)
	}
	if d := expect[*wire.Disconnect](t, w1.recv()); d.Code != wire.CodeConflict {
		t.Fatalf("old session: DISCONNECT %d %q, want 409 superseded", d.Code, d.Reason)
	}
	g.waitCount(t, "worker.registered", 2)
	g.mu.Lock()
	var reconciled, requeued []admin.Event
	for _, ev := range g.events {
		switch ev.Kind {
		case admin.EventJobReconciled:
			reconciled = append(reconciled, ev)
		case admin.EventJobRequeued:
			requeued = append(requeued, ev)
		}
	}
	g.mu.Unlock()
	if len(reconciled) != 1 || reconciled[0].JobID != kept.JobID || reconciled[0].Worker != "w1" {
		t.Errorf("job.reconciled events %+v, want one for job %d, worker w1", reconciled, kept.JobID)
	}
	if len(requeued) != 1 || requeued[0].JobID != dropped.JobID {
		t.Errorf("job.requeued events %+v, want one for job %d (not listed in held)", requeued, dropped.JobID)
	}

	w2.send(&wire.Result{Req: 2, Items: []wire.ResultItem{{JobID: kept.JobID, Attempt: kept.Attempt, Outcome: wire.OutcomeOK}}})
	if ok := expect[*wire.ResultOK](t, w2.recv()); ok.Items[0].Status != wire.ResultRecorded {
		t.Fatalf("RESULT-OK %+v, want recorded: the kept run is still the job's current one", ok.Items)
	}
}
