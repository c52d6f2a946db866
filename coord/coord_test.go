package coord

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"drover/admin"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newCoord(t *testing.T, cfg Config) *Coordinator {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func hello(t *testing.T, c *Coordinator, s id.Session, h Hello) Welcome {
	t.Helper()
	w, err := c.Hello(t0, s, h)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func specs(urls ...string) []JobSpec {
	out := make([]JobSpec, len(urls))
	for i, u := range urls {
		out[i] = JobSpec{Key: id.Key{Crawler: "c", Processor: "p", URL: u}}
	}
	return out
}

func TestConfigValidation(t *testing.T) {
	for _, cfg := range []Config{
		{Liveness: -1},
		{Heartbeat: time.Hour, MaxHeartbeat: time.Minute},
		{MaxJobs: -5},
		{EventBuffer: -1},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted an invalid config", cfg)
		}
	}
}

func TestMaxJobsCapsSubmits(t *testing.T) {
	c := newCoord(t, Config{MaxJobs: 2})
	hello(t, c, 1, Hello{Role: RoleProducer, ID: "p"})
	vs, err := c.Submit(t0, 1, 1, specs("http://a.test/1", "http://a.test/2", "http://a.test/3", "http://a.test/1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, vs, Accepted, Accepted, Rejected, Duplicate)
	if vs[2].Reason != ReasonMaxJobs {
		t.Errorf("reason %q, want %q", vs[2].Reason, ReasonMaxJobs)
	}
}

// A SUBMIT for a key another session holds in requested waits; when the
// holder dies the key passes to the submitter and its job is enqueued.
func TestWaitingSubmitEnqueuedOnHandover(t *testing.T) {
	c := newCoord(t, Config{})
	hello(t, c, 1, Hello{Role: RoleProducer, ID: "holder"})
	hello(t, c, 2, Hello{Role: RoleProducer, ID: "submitter"})
	hello(t, c, 3, Hello{Role: RoleWorker, ID: "w", Slots: 1})
	if vs, _ := c.Request(t0, 1, 1, []id.Key{specs("http://a.test/")[0].Key}, nil); vs[0].Verdict != ledger.OK {
		t.Fatalf("request: %+v", vs)
	}
	vs, _ := c.Submit(t0, 2, 7, specs("http://a.test/"), nil)
	if vs[0].Status != Waiting {
		t.Fatalf("submit: %v, want waiting", vs[0].Status)
	}
	c.Ready(t0)
	c.Disconnect(t0, 1)
	out := c.Ready(t0)
	if len(out.Answers) != 1 || !out.Answers[0].Submit || out.Answers[0].ReqID != 7 || out.Answers[0].Job == 0 {
		t.Fatalf("answers %+v: want one submit answer for request 7 with a job", out.Answers)
	}
	if len(out.Jobs) != 1 || out.Jobs[0].Job != out.Answers[0].Job || out.Jobs[0].Session != 3 {
		t.Fatalf("jobs %+v: want the new job dispatched to the worker", out.Jobs)
	}
}

func TestProgressBecomesEvent(t *testing.T) {
	c := newCoord(t, Config{})
	hello(t, c, 1, Hello{Role: RoleWorker, ID: "w"})
	if _, err := c.Submit(t0, 1, 1, specs("http://a.test/"), nil); err != nil {
		t.Fatal(err)
	}
	jobs := c.Ready(t0).Jobs
	if len(jobs) != 1 {
		t.Fatalf("dispatched %+v, want one job", jobs)
	}
	run := broker.Run{Job: jobs[0].Job, Attempt: jobs[0].Attempt}
	c.Progress(t0, 1, broker.Run{Job: run.Job, Attempt: run.Attempt + 1}, "not this run") // dropped
	c.Progress(t0, 1, run, "fetched 10 kB")
	out := c.Ready(t0)
	found := false
	for _, e := range out.Events {
		if e.Kind == "job.progress" && e.Detail == "not this run" {
			t.Fatalf("progress of another attempt became an event: %+v", e)
		}
		if e.Kind == "job.progress" && e.JobID == uint64(run.Job) && e.Worker == "w" && e.Seq > 0 {
			found = true
		}
	}
	if !found {
		t.Fatalf("events %+v: want a numbered job.progress event", out.Events)
	}
	p, err := c.Query(t0, admin.Query{View: admin.ViewEvents, Filter: "progress", Limit: 10})
	if err != nil || p.Total != 1 {
		t.Fatalf("events view: %+v, %v: want the progress event", p, err)
	}
}

func TestNextDeadlineFollowsLiveness(t *testing.T) {
	c := newCoord(t, Config{Heartbeat: time.Second, Liveness: 3})
	if _, ok := c.NextDeadline(); ok {
		t.Fatal("a coordinator with nothing to do has a deadline")
	}
	hello(t, c, 1, Hello{Role: RoleProducer, ID: "p"})
	d, ok := c.NextDeadline()
	if !ok || !d.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("deadline %v %v, want %v", d, ok, t0.Add(3*time.Second))
	}
	c.Touch(t0.Add(2*time.Second), 1)
	c.Tick(t0.Add(3 * time.Second))
	if !c.Known(1) {
		t.Fatal("a session that beat at 2s died at 3s")
	}
	c.Tick(t0.Add(5 * time.Second))
	if c.Known(1) {
		t.Fatal("a session silent for 3s after its last beat is still alive")
	}
}

func TestHelloRejectsBadInput(t *testing.T) {
	c := newCoord(t, Config{})
	for _, tc := range []struct {
		s id.Session
		h Hello
	}{
		{0, Hello{Role: RoleProducer, ID: "x"}},
		{1, Hello{Role: 9, ID: "x"}},
		{1, Hello{Role: RoleProducer}},
		{1, Hello{Role: RoleWorker, ID: "w", Slots: -1}},
	} {
		if _, err := c.Hello(t0, tc.s, tc.h); err == nil {
			t.Errorf("Hello(%d, %+v) accepted", tc.s, tc.h)
		}
	}
	hello(t, c, 1, Hello{Role: RoleProducer, ID: "x"})
	if _, err := c.Hello(t0, 1, Hello{Role: RoleProducer, ID: "y"}); err == nil {
		t.Error("a second HELLO on one session was accepted")
	}
	if _, err := c.Results(t0, 1, []Result{{Run: broker.Run{Job: 1, Attempt: 1}, Outcome: broker.Outcome{Kind: broker.OK}}}, nil); err == nil {
		t.Error("a producer reported a result")
	}
	if _, err := c.Request(t0, 99, 1, nil, nil); err != ErrUnknownSession {
		t.Errorf("request from an unknown session: %v, want ErrUnknownSession", err)
	}
}

func TestEventsFilter(t *testing.T) {
	c := newCoord(t, Config{})
	hello(t, c, 1, Hello{Role: RoleProducer, ID: "p"})
	hello(t, c, 2, Hello{Role: RoleWorker, ID: "W-One", Slots: 1})
	if _, err := c.Submit(t0, 1, 1, specs("http://a.test/x", "http://b.test/y"), nil); err != nil {
		t.Fatal(err)
	}
	c.Ready(t0)
	for _, tc := range []struct {
		filter string
		want   int
	}{
		{"kind=job.submitted", 2},
		{"kind=JOB.SUBMITTED host=b.test", 1},
		{"kind=job.dispatched worker=w-one", 1},
		{"A.TEST", 2}, // submitted and dispatched, case-insensitive
		{"kind=worker.lost", 0},
	} {
		p, err := c.Query(t0, admin.Query{View: admin.ViewEvents, Filter: tc.filter, Limit: 50})
		if err != nil || p.Total != tc.want {
			t.Errorf("filter %q: %d events (%v), want %d: %+v", tc.filter, p.Total, err, tc.want, p.Events)
		}
	}
}

// An operator who requeues a running job takes it from its worker, which
// the transport is asked to tell CANCEL; a queued job needs no CANCEL.
func TestRequeueOfRunningJobCancelsIt(t *testing.T) {
	c := newCoord(t, Config{})
	hello(t, c, 1, Hello{Role: RoleProducer, ID: "p"})
	hello(t, c, 2, Hello{Role: RoleWorker, ID: "w", Slots: 1})
	vs, _ := c.Submit(t0, 1, 1, specs("http://a.test/1", "http://a.test/2"), nil)
	out := c.Ready(t0)
	if len(out.Jobs) != 1 || out.Jobs[0].Job != vs[0].Job {
		t.Fatalf("jobs %+v: want job %d dispatched", out.Jobs, vs[0].Job)
	}
	res, err := c.Act(t0, admin.Action{Kind: admin.ActRequeue, Targets: []string{fmt.Sprint(vs[0].Job), fmt.Sprint(vs[1].Job)}})
	if err != nil || res.Affected != 2 {
		t.Fatalf("requeue: %+v %v", res, err)
	}
	out = c.Ready(t0)
	if len(out.Cancels) != 1 || out.Cancels[0] != (Cancel{Session: 2, Run: broker.Run{Job: vs[0].Job, Attempt: 1}}) {
		t.Fatalf("cancels %+v: want job %d on session 2 only", out.Cancels, vs[0].Job)
	}
	if out = c.Ready(t0); len(out.Cancels) != 0 {
		t.Fatalf("cancels repeated: %+v", out.Cancels)
	}
}

// The Waiters view orders a key's waiters by position (the FIFO), session
// or waiting time, either way round; the Events view newest first, or
// oldest first reversed.
func TestWaitersAndEventsOrders(t *testing.T) {
	c := newCoord(t, Config{})
	k := []id.Key{specs("http://a.test/")[0].Key}
	names := map[id.Session]string{1: "holder", 2: "zed", 3: "amy"}
	for s := id.Session(1); s <= 3; s++ {
		hello(t, c, s, Hello{Role: RoleProducer, ID: names[s]})
		if _, err := c.Request(t0.Add(time.Duration(s)*time.Second), s, 1, k, nil); err != nil {
			t.Fatal(err)
		}
	}
	c.Ready(t0)
	sessions := func(q admin.Query) []string {
		q.View, q.Limit = admin.ViewWaiters, 10
		p, err := c.Query(t0.Add(5*time.Second), q)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, w := range p.Waiters {
			got = append(got, w.Session)
		}
		return got
	}
	fifo := sessions(admin.Query{})
	if len(fifo) != 2 || !strings.Contains(fifo[0], "zed") || !strings.Contains(fifo[1], "amy") {
		t.Fatalf("waiters in FIFO order: %v, want zed then amy", fifo)
	}
	for _, tc := range []struct {
		q     admin.Query
		first string
	}{
		{admin.Query{Sort: "position", Desc: true}, "amy"},
		{admin.Query{Sort: "session"}, "zed"}, // by the session's label: s2 (zed), s3 (amy)
		{admin.Query{Sort: "session", Desc: true}, "amy"},
		{admin.Query{Sort: "since", Desc: true}, "amy"},
		{admin.Query{Sort: "since"}, "zed"},
	} {
		if got := sessions(tc.q); len(got) != 2 || !strings.Contains(got[0], tc.first) {
			t.Errorf("waiters %+v: %v, want %s first", tc.q, got, tc.first)
		}
	}
	newest, err := c.Query(t0, admin.Query{View: admin.ViewEvents, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	oldest, err := c.Query(t0, admin.Query{View: admin.ViewEvents, Limit: 100, Desc: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(newest.Events) < 2 || len(oldest.Events) != len(newest.Events) ||
		newest.Events[0].Seq <= newest.Events[1].Seq || oldest.Events[0].Seq != newest.Events[len(newest.Events)-1].Seq {
		t.Fatalf("events newest first %v, reversed %v", seqs(newest.Events), seqs(oldest.Events))
	}
}

func seqs(evs []admin.Event) []uint64 {
	var out []uint64
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

// TestRobotsErrorKinds: a ROBOTS report whose origin is not one is invalid
// (the transport answers it malformed); one for a host the worker holds no
// job of is the wrong state, not invalid.
func TestRobotsErrorKinds(t *testing.T) {
	c := newCoord(t, Config{})
	hello(t, c, 1, Hello{Role: RoleWorker, ID: "w", Slots: 1})
	exp := t0.Add(time.Hour)
	_, err := c.Robots(t0, 1, broker.Robots{Origin: "http://a.test/robots.txt", Expires: exp})
	if !errors.Is(err, ErrInvalid) || !errors.Is(err, broker.ErrBadOrigin) {
		t.Fatalf("robots.txt for an origin with a path: %v, want invalid (a bad origin)", err)
	}
	_, err = c.Robots(t0, 1, broker.Robots{Origin: "http://a.test", Expires: exp})
	if !errors.Is(err, broker.ErrWrongState) || errors.Is(err, ErrInvalid) {
		t.Fatalf("robots.txt for a host the worker holds no job of: %v, want the wrong state, not invalid", err)
	}
}

// Once every job ID is given (broker.Config.LastJobID, set low here), a
// SUBMIT's new keys are refused one by one with reason job-ids-exhausted
// before the ledger sees them (a duplicate still says duplicate), counted;
// the jobs accepted before stay queued. A wait handed over then is
// answered with the same refusal.
func TestSubmitRefusedWhenJobIDsExhausted(t *testing.T) {
	c := newCoord(t, Config{Broker: broker.Config{LastJobID: 2}})
	hello(t, c, 1, Hello{Role: RoleProducer, ID: "p"})
	hello(t, c, 2, Hello{Role: RoleProducer, ID: "holder"})
	held := specs("http://b.test/held")[0]
	if vs, _ := c.Request(t0, 2, 1, []id.Key{held.Key}, nil); vs[0].Verdict != ledger.OK {
		t.Fatalf("request: %+v", vs)
	}
	if vs, _ := c.Submit(t0, 1, 1, []JobSpec{held}, nil); vs[0].Status != Waiting {
		t.Fatalf("submit of a held key: %+v, want waiting", vs[0])
	}
	vs, err := c.Submit(t0, 1, 2, specs("http://a.test/1", "http://a.test/2", "http://a.test/3", "http://a.test/1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, vs, Accepted, Accepted, Rejected, Duplicate)
	if vs[2].Reason != ReasonJobIDs || !strings.Contains(vs[2].Detail, broker.ErrJobIDsExhausted.Error()) {
		t.Errorf("refusal %q %q, want reason %q naming %q", vs[2].Reason, vs[2].Detail, ReasonJobIDs, broker.ErrJobIDsExhausted)
	}
	if _, ok := c.led.Lookup(t0, vs[2].FP); ok {
		t.Error("the refused key is in the ledger")
	}
	// The wait ends with the holder's session: the key passes to p, whose
	// job cannot be made.
	c.Ready(t0)
	c.Disconnect(t0, 2)
	out := c.Ready(t0)
	if len(out.Answers) != 1 || !out.Answers[0].Submit || out.Answers[0].Verdict != ledger.Error || out.Answers[0].Reason != ReasonJobIDs || out.Answers[0].Job != 0 {
		t.Fatalf("answers %+v: want request 1's handed-over key refused with %q", out.Answers, ReasonJobIDs)
	}
	if rec, ok := c.led.Lookup(t0, vs[2].FP); ok {
		t.Errorf("the refused key is in the ledger: %+v", rec)
	}
	if n := c.IDRefusals(); n != 2 {
		t.Errorf("%d refusals counted, want 2", n)
	}
	// Each refusing input made one event (the SUBMIT, the handover).
	c.Ready(t0)
	p, err := c.Query(t0, admin.Query{View: admin.ViewEvents, Filter: "job-ids-exhausted", Limit: 10})
	if err != nil || p.Total != 2 {
		t.Errorf("events view: %+v, %v: want 2 %s events", p, err, admin.EventCoordJobIDs)
	}
	tot := c.Totals(t0)
	if tot.Queued != 2 || tot.KeysQueued != 2 {
		t.Errorf("queued jobs %d, keys %d: want the 2 accepted", tot.Queued, tot.KeysQueued)
	}
}

// wantStatuses checks the statuses of a SUBMIT's verdicts, in order.
func wantStatuses(t *testing.T, vs []SubmitVerdict, want ...SubmitStatus) {
	t.Helper()
	if len(vs) != len(want) {
		t.Fatalf("%d verdicts %+v, want %d", len(vs), vs, len(want))
	}
	for i, v := range vs {
		if v.Status != want[i] {
			t.Errorf("job %d: %v (%s), want %v", i, v.Status, v.Reason, want[i])
		}
	}
}
