package server

import (
	"fmt"
	"testing"
	"time"

	"drover/admin"
	"drover/coord"
	"drover/coord/broker"
	"drover/net/wire"
)

// Run identity over real sockets (docs/PROTOCOL.md §6.12-6.15): a result
// names its run (job id and attempt); only the job's current run on the
// reporting worker is applied, every RESULT is answered, and the links of
// a result that is not applied are not submitted.

// runFixture is a server with a producer and one worker (slots 1) that
// holds the run of the job submitted for url.
type runFixture struct {
	s    *Server
	w, p *rawClient
	job  wire.JobItem
}

func newRunFixture(t *testing.T, url string) *runFixture {
	t.Helper()
	s := startServer(t, Options{})
	f := &runFixture{s: s, w: dial(t, s.PeersEndpoint()), p: dial(t, s.PeersEndpoint())}
	hello(t, f.w, wire.RoleWorker, "w1", 1)
	hello(t, f.p, wire.RoleProducer, "p1", 0)
	f.p.send(&wire.Submit{Req: 2, Jobs: []wire.SubmitItem{{Key: key(url)}}})
	if it := expect[*wire.Submitted](t, f.p.recv()).Items[0]; it.Status != wire.SubmitAccepted {
		t.Fatalf("submit: %+v, want accepted", it)
	}
	jobs := expect[*wire.Job](t, f.w.recv()).Jobs
	if len(jobs) != 1 || jobs[0].Attempt != 1 {
		t.Fatalf("JOB %+v: want one job, attempt 1", jobs)
	}
	f.job = jobs[0]
	return f
}

// result sends one RESULT with the given items and returns its RESULT-OK.
func (f *runFixture) result(t *testing.T, req uint64, items ...wire.ResultItem) *wire.ResultOK {
	t.Helper()
	f.w.send(&wire.Result{Req: req, Items: items})
	for {
		switch m := f.w.recv().(type) {
		case *wire.ResultOK:
			if m.Req != req {
				t.Fatalf("RESULT-OK for request %d, want %d", m.Req, req)
			}
			return m
		case *wire.Job:
			continue // a job the result made possible; not what is checked here
		default:
			t.Fatalf("got %s %+v, want RESULT-OK", m.Command(), m)
		}
	}
}

// submitted resubmits url and reports the status and job id the server
// answers: accepted means the url was never seen, duplicate that it was.
func (f *runFixture) submitted(t *testing.T, req uint64, url string) wire.SubmittedItem {
	t.Helper()
	f.p.send(&wire.Submit{Req: req, Jobs: []wire.SubmitItem{{Key: key(url)}}})
	return expect[*wire.Submitted](t, f.p.recv()).Items[0]
}

// totals asks the server for its totals over the admin socket.
func totals(t *testing.T, s *Server) admin.Totals {
	t.Helper()
	con := dial(t, s.AdminEndpoint())
	defer con.sock.Close() // callers poll: one socket at a time, not one per call until the test ends
	con.send(&wire.Hello{Req: 1, Role: wire.RoleConsole, ID: "totals", ReadOnly: true})
	expect[*wire.Welcome](t, con.recv())
	con.send(&wire.Status{Req: 2})
	for {
		if m, ok := con.recv().(*wire.Totals); ok {
			return m.Totals
		}
	}
}

func submittedJobs(t admin.Totals) int {
	return t.Queued + t.Dispatched + t.Backoff + t.Done + t.Failed
}

func okItem(job uint64, attempt uint32, links ...string) wire.ResultItem {
	it := wire.ResultItem{JobID: job, Attempt: attempt, Outcome: wire.OutcomeOK}
	for _, l := range links {
		it.Links = append(it.Links, wire.SubmitItem{Key: key(l)})
	}
	return it
}

func status(t *testing.T, ok *wire.ResultOK, want ...wire.ResultStatus) {
	t.Helper()
	if len(ok.Items) != len(want) {
		t.Fatalf("RESULT-OK %+v: %d items, want %d", ok.Items, len(ok.Items), len(want))
	}
	for i, it := range ok.Items {
		if it.Status != want[i] {
			t.Errorf("RESULT-OK item %d %+v: status %s, want %s", i, it, it.Status, want[i])
		}
	}
}

// TestStaleAttemptWithLinks: a result for an attempt that is not the
// job's current one is answered stale, counted, and its links are not
// submitted; the current attempt's result is recorded with its links.
func TestStaleAttemptWithLinks(t *testing.T) {
	f := newRunFixture(t, "http://a.test/")
	// Attempt 2 was never dispatched: stale, its link is not submitted.
	ok := f.result(t, 3, okItem(f.job.JobID, 2, "http://a.test/stale-link"))
	status(t, ok, wire.ResultStale)
	if it := ok.Items[0]; it.JobID != f.job.JobID || it.Attempt != 2 || it.Accepted != 0 || it.Duplicates != 0 {
		t.Fatalf("RESULT-OK %+v: want job %d attempt 2, no link counts", it, f.job.JobID)
	}
	if it := f.submitted(t, 4, "http://a.test/stale-link"); it.Status != wire.SubmitAccepted {
		t.Fatalf("the stale result's link was submitted: resubmitting it says %s (%s)", it.Status, it.Reason)
	}
	// The job still runs: its current attempt's result is recorded.
	ok = f.result(t, 5, okItem(f.job.JobID, 1, "http://a.test/good-link"))
	status(t, ok, wire.ResultRecorded)
	if ok.Items[0].Accepted != 1 {
		t.Fatalf("RESULT-OK %+v: want the link accepted", ok.Items[0])
	}
	if tot := totals(t, f.s); tot.StaleResults != 1 || tot.Done != 1 {
		t.Fatalf("totals stale %d done %d, want 1 stale result and the job done", tot.StaleResults, tot.Done)
	}
}

// TestResentRecordedResult: a worker that re-sends a result the server
// recorded before (its RESULT-OK was lost) gets recorded again, and the
// links are not submitted twice; a RESULT mixing runs is answered item by
// item, in order.
func TestResentRecordedResult(t *testing.T) {
	f := newRunFixture(t, "http://b.test/")
	first := okItem(f.job.JobID, 1, "http://b.test/1", "http://b.test/2")
	ok := f.result(t, 3, first)
	status(t, ok, wire.ResultRecorded)
	if ok.Items[0].Accepted != 2 {
		t.Fatalf("first RESULT-OK %+v: want 2 links accepted", ok.Items[0])
	}
	jobs := submittedJobs(totals(t, f.s))
	// The same result again, with an unknown job and a stale attempt.
	ok = f.result(t, 4, first, okItem(9999, 1, "http://b.test/3"), okItem(f.job.JobID, 7, "http://b.test/4"))
	status(t, ok, wire.ResultRecorded, wire.ResultUnknown, wire.ResultStale)
	for i, it := range ok.Items {
		if it.Accepted != 0 || it.Duplicates != 0 {
			t.Errorf("item %d %+v: want no link counts (nothing submitted)", i, it)
		}
	}
	if got := submittedJobs(totals(t, f.s)); got != jobs {
		t.Fatalf("%d jobs after the re-send, want %d: links were submitted again", got, jobs)
	}
	for _, u := range []string{"http://b.test/3", "http://b.test/4"} {
		if it := f.submitted(t, 5, u); it.Status != wire.SubmitAccepted {
			t.Fatalf("link %s of an unanswered run was submitted (%s)", u, it.Status)
		}
	}
}

// TestUnknownJobResult: a result for a job the server never gave out is
// answered unknown (not stale), counted, and its links are not submitted.
func TestUnknownJobResult(t *testing.T) {
	f := newRunFixture(t, "http://c.test/")
	ok := f.result(t, 3, okItem(f.job.JobID+100, 1, "http://c.test/x"))
	status(t, ok, wire.ResultUnknown)
	if it := f.submitted(t, 4, "http://c.test/x"); it.Status != wire.SubmitAccepted {
		t.Fatalf("the unknown job's link was submitted (%s)", it.Status)
	}
	if tot := totals(t, f.s); tot.StaleResults != 1 {
		t.Fatalf("stale results %d, want the unknown one counted", tot.StaleResults)
	}
}

// TestRequeueCancelBeforeNewAttempt: an operator requeues a job whose
// worker is the only capable one. The worker gets the CANCEL of attempt 1
// before the JOB of attempt 2; the cancelled run's result (with links) is
// answered stale and its links are not submitted; attempt 2's counts.
func TestRequeueCancelBeforeNewAttempt(t *testing.T) {
	f := newRunFixture(t, "http://d.test/")
	con := dial(t, f.s.AdminEndpoint())
	con.send(&wire.Hello{Req: 1, Role: wire.RoleConsole, ID: "ops"})
	expect[*wire.Welcome](t, con.recv())
	con.send(&wire.Action{Req: 2, Action: admin.Action{Kind: admin.ActRequeue, Targets: []string{fmt.Sprint(f.job.JobID)}}})
	for {
		if a, ok := con.recv().(*wire.Acted); ok {
			if a.Result.Affected != 1 {
				t.Fatalf("requeue: %+v", a.Result)
			}
			break
		}
	}
	c := expect[*wire.Cancel](t, f.w.recv())
	if len(c.Runs) != 1 || c.Runs[0] != (wire.Run{JobID: f.job.JobID, Attempt: 1}) {
		t.Fatalf("CANCEL %+v: want job %d attempt 1", c.Runs, f.job.JobID)
	}
	j := expect[*wire.Job](t, f.w.recv())
	if len(j.Jobs) != 1 || j.Jobs[0].JobID != f.job.JobID || j.Jobs[0].Attempt != 2 {
		t.Fatalf("JOB %+v after the CANCEL: want job %d attempt 2", j.Jobs, f.job.JobID)
	}
	// The cancelled run reports ok with a link anyway: stale, not submitted.
	ok := f.result(t, 3, okItem(f.job.JobID, 1, "http://d.test/from-cancelled"))
	status(t, ok, wire.ResultStale)
	if it := f.submitted(t, 4, "http://d.test/from-cancelled"); it.Status != wire.SubmitAccepted {
		t.Fatalf("the cancelled run's link was submitted (%s)", it.Status)
	}
	if tot := totals(t, f.s); tot.Done != 0 || tot.Dispatched != 1 {
		t.Fatalf("totals done %d dispatched %d: the cancelled run's result changed the job", tot.Done, tot.Dispatched)
	}
	status(t, f.result(t, 5, okItem(f.job.JobID, 2)), wire.ResultRecorded)
}

// TestHeldBackWorker: a worker id whose sessions take a job and go silent
// before reporting anything is, from its second such death, held back: a
// new session with that id is welcomed but given no JOB, and the admin
// rows show it held; the job was never charged for those deaths.
func TestHeldBackWorker(t *testing.T) {
	// A 1 s heartbeat: the held-back worker below waits a second for
	// nothing, which a 100 ms heartbeat's liveness (300 ms) did not outlast
	// on a loaded machine (the server declared it lost).
	s := startServer(t, Options{Coord: coord.Config{Heartbeat: time.Second, MinHeartbeat: 10 * time.Millisecond,
		Broker: broker.Config{HoldbackStart: time.Hour, HoldbackCap: time.Hour}}})
	p := dial(t, s.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p1", 0)
	p.send(&wire.Submit{Req: 2, Jobs: []wire.SubmitItem{{Key: key("http://held.test/")}}})
	expect[*wire.Submitted](t, p.recv())
	for death := 1; death <= 2; death++ {
		w := dial(t, s.PeersEndpoint())
		hello(t, w, wire.RoleWorker, "flaky", 1)
		if j := expect[*wire.Job](t, w.recv()); j.Jobs[0].Attempt != uint32(death) {
			t.Fatalf("death %d: JOB %+v, want attempt %d", death, j.Jobs, death)
		}
		w.sock.Close() // silent from now on: the server declares it lost
		deadline := time.Now().Add(10 * time.Second)
		for totals(t, s).WorkersLost < 1 || totals(t, s).Dispatched != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("death %d: the silent worker was not declared lost", death)
			}
			p.send(&wire.Heartbeat{})
			p.recvWithin(50 * time.Millisecond) // a pause between polls (the producer expects no message)
		}
	}
	w := dial(t, s.PeersEndpoint())
	hello(t, w, wire.RoleWorker, "flaky", 1)
	if m, err := w.recvWithin(time.Second); err == nil {
		t.Fatalf("held-back worker got %s %+v, want nothing", m.Command(), m)
	}
	tot := totals(t, s)
	if tot.WorkersHeld != 1 || tot.Queued != 1 || tot.Failures != 0 {
		t.Fatalf("totals held %d queued %d failures %d: want the worker held, the job queued and uncharged", tot.WorkersHeld, tot.Queued, tot.Failures)
	}
	con := dial(t, s.AdminEndpoint())
	con.send(&wire.Hello{Req: 1, Role: wire.RoleConsole, ID: "ops", ReadOnly: true})
	expect[*wire.Welcome](t, con.recv())
	con.send(&wire.Query{Req: 2, Query: admin.Query{View: admin.ViewWorkers, Filter: "flaky"}})
	for {
		if pg, ok := con.recv().(*wire.Page); ok {
			var row *admin.WorkerRow
			for i := range pg.Page.Workers {
				if pg.Page.Workers[i].State != "lost" {
					row = &pg.Page.Workers[i]
				}
			}
			if row == nil || row.State != "held" || row.HeldUntil.Before(time.Now().Add(50*time.Minute)) {
				t.Fatalf("workers %+v: want flaky held for about an hour", pg.Page.Workers)
			}
			return
		}
	}
}
