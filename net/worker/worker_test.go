package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"drover/admin"
	"drover/net/client"
	"drover/net/internal/testsrv"
	"drover/net/wire"
	"drover/net/zsock"
)

// TestJobsRunInSlots: jobs run with their payload, at most Slots at once,
// and their outputs reach the coordinator.
func TestJobsRunInSlots(t *testing.T) {
	s := testsrv.Start(t, testsrv.Options{})
	var cur, peak atomic.Int32
	runWorker(t, s.PeersEndpoint(), Options{ID: "w", Slots: 4, Headers: map[string]string{"lang": "en"}},
		func(ctx context.Context, j Job) Result {
			n := cur.Add(1)
			defer cur.Add(-1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			return OK(bytes.ToUpper(j.Payload))
		})
	p := dialProducer(t, s)
	const n = 40
	items := make([]wire.SubmitItem, n)
	for i := range items {
		items[i] = wire.SubmitItem{Key: key(fmt.Sprintf("http://run.test/%d", i)), Payload: []byte(fmt.Sprintf("page %d", i)),
			Headers: wire.Headers{{Name: "lang", Value: "en"}}}
	}
	submit(t, p, items...)
	s.WaitFor(t, wait, "all jobs finished", func(r *testsrv.Records) bool { return len(r.Finished) == n })
	for _, f := range s.Snapshot().Finished {
		var i int
		fmt.Sscanf(f.Key.URL, "http://run.test/%d", &i)
		if f.Failed || string(f.Output) != fmt.Sprintf("PAGE %d", i) {
			t.Fatalf("job %s: failed %v, output %q; want ok with the upper-cased payload", f.Key.URL, f.Failed, f.Output)
		}
	}
	if pk := peak.Load(); pk > 4 {
		t.Fatalf("%d jobs ran at once, want at most 4 slots", pk)
	}
}

// TestKilledWorkerJobRedispatched: a worker process killed with SIGKILL
// mid-job; the job completes on another worker, re-dispatched as its
// second attempt once the coordinator notices the silence (heartbeat ×
// liveness: when is the coordinator's tests' business, on their fake
// clock; here the time is logged, never judged).
func TestKilledWorkerJobRedispatched(t *testing.T) {
	const beat = time.Second // a child busy on a loaded machine must not miss its liveness (3 s)
	s := testsrv.Start(t, testsrv.Options{Heartbeat: beat})
	adm := dialAdmin(t, s, client.AdminOptions{})
	doomed := testsrv.StartChild(t, "worker", "DROVER_TEST_CONNECT="+s.PeersEndpoint())
	totals(t, adm, "child worker registered", func(t admin.Totals) bool { return t.WorkersIdle == 1 })
	p := dialProducer(t, s)
	ids := submit(t, p, wire.SubmitItem{Key: key("http://kill.test/")})
	if got, want := doomed.Line(t, "job", wait), fmt.Sprintf("%d 1", ids[0]); got != want {
		t.Fatalf("child started job %q, want %q", got, want)
	}
	started := make(chan Job, 1)
	runWorker(t, s.PeersEndpoint(), Options{ID: "survivor"}, func(ctx context.Context, j Job) Result {
		started <- j
		return OK(nil)
	})
	totals(t, adm, "survivor registered", func(t admin.Totals) bool { return t.WorkersIdle == 1 && t.WorkersBusy == 1 })

	killed := doomed.Kill(t)
	j := recvT(t, started, "re-dispatched job")
	took := time.Since(killed)
	if j.ID != ids[0] || j.Attempt != 2 {
		t.Fatalf("survivor got job %d attempt %d, want job %d attempt 2", j.ID, j.Attempt, ids[0])
	}
	t.Logf("kill to re-dispatch: %v (heartbeat × liveness + one interval = %v)", took, 3*beat+beat)
	s.WaitFor(t, wait, "job done", func(r *testsrv.Records) bool { return len(r.Finished) == 1 })
	if f := s.Snapshot().Finished[0]; f.Failed {
		t.Fatalf("job finished failed (%s), want ok", f.Error)
	}
}

// TestOutcomes: internal failures are retried up to the budget and then
// fail; an external failure fails at once; a throttled job is not
// re-dispatched before its Retry-After.
func TestOutcomes(t *testing.T) {
	const retryAfter = 300 * time.Millisecond
	cases := []struct {
		name     string
		result   func(attempt int) Result
		attempts int
		failed   bool
	}{
		{"internal up to the limit", func(int) Result { return Internal(errors.New("fetch timeout")) }, 3, true},
		{"external", func(int) Result { return External(errors.New("malformed job")) }, 1, true},
		{"throttled then ok", func(a int) Result {
			if a == 1 {
				return Throttled(retryAfter, errors.New("HTTP 429"))
			}
			return OK([]byte("fine"))
		}, 2, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := testsrv.Start(t, testsrv.Options{MaxRequestFailures: 3})
			type attempt struct {
				n          int
				start, end time.Time
			}
			var mu sync.Mutex
			var seen []attempt
			runWorker(t, s.PeersEndpoint(), Options{ID: "w"}, func(ctx context.Context, j Job) Result {
				a := attempt{n: j.Attempt, start: time.Now()}
				r := tc.result(j.Attempt)
				a.end = time.Now()
				mu.Lock()
				seen = append(seen, a)
				mu.Unlock()
				return r
			})
			p := dialProducer(t, s)
			submit(t, p, wire.SubmitItem{Key: key("http://outcome.test/")})
			s.WaitFor(t, wait, "job finished", func(r *testsrv.Records) bool { return len(r.Finished) == 1 })
			f := s.Snapshot().Finished[0]
			mu.Lock()
			defer mu.Unlock()
			if f.Failed != tc.failed || len(seen) != tc.attempts {
				t.Fatalf("failed %v (%s) after %d attempts, want failed %v after %d", f.Failed, f.Error, len(seen), tc.failed, tc.attempts)
			}
			for i, a := range seen {
				if a.n != i+1 {
					t.Fatalf("attempt %d numbered %d, want %d", i+1, a.n, i+1)
				}
			}
			if tc.name == "throttled then ok" {
				gap := seen[1].start.Sub(seen[0].end)
				t.Logf("throttled with Retry-After %v: re-dispatched after %v", retryAfter, gap)
				if gap < retryAfter {
					t.Fatalf("re-dispatched %v after the throttle, want no sooner than its Retry-After %v", gap, retryAfter)
				}
			}
		})
	}
}

// TestEvict: an evicted worker's running job has its context cancelled
// (ErrEvicted) and goes back to the queue uncharged; another worker does it.
func TestEvict(t *testing.T) {
	s := testsrv.Start(t, testsrv.Options{})
	adm := dialAdmin(t, s, client.AdminOptions{})
	cause := make(chan error, 1)
	started := make(chan Job, 1)
	runWorker(t, s.PeersEndpoint(), Options{ID: "victim"}, func(ctx context.Context, j Job) Result {
		started <- j
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return Internal(context.Cause(ctx))
	})
	totals(t, adm, "victim registered", func(t admin.Totals) bool { return t.WorkersIdle == 1 })
	p := dialProducer(t, s)
	u := "http://evict.test/"
	submit(t, p, wire.SubmitItem{Key: key(u)})
	recvT(t, started, "job on the victim")
	res, err := adm.Act(ctxT(t), admin.Action{Kind: admin.ActEvict, Targets: []string{"victim"}})
	if err != nil || res.Affected != 1 {
		t.Fatalf("evict: %+v, %v; want 1 affected", res, err)
	}
	if err := recvT(t, cause, "cancellation"); !errors.Is(err, ErrEvicted) {
		t.Fatalf("job context cause %v, want ErrEvicted", err)
	}
	if row := jobRow(t, adm, u); row.State != "queued" || row.Failures != 0 {
		t.Fatalf("job after eviction: state %s, failures %d; want queued, uncharged", row.State, row.Failures)
	}
	runWorker(t, s.PeersEndpoint(), Options{ID: "rescuer"}, func(ctx context.Context, j Job) Result { return OK(nil) })
	s.WaitFor(t, wait, "job done by the rescuer", func(r *testsrv.Records) bool { return len(r.Finished) == 1 })
	if row := jobRow(t, adm, u); row.State != "done" || row.Attempts != 2 || row.Failures != 0 {
		t.Fatalf("job row %+v: want done at the second attempt with no failure", row)
	}
}

// TestDrain: a drained worker gets no new job, finishes the one it runs,
// and is let go: Run returns ErrDrained.
func TestDrain(t *testing.T) {
	s := testsrv.Start(t, testsrv.Options{})
	adm := dialAdmin(t, s, client.AdminOptions{})
	release := make(chan struct{})
	started := make(chan Job, 2)
	w := runWorker(t, s.PeersEndpoint(), Options{ID: "drained", Slots: 2}, func(ctx context.Context, j Job) Result {
		started <- j
		<-release
		return OK(nil)
	})
	totals(t, adm, "worker registered", func(t admin.Totals) bool { return t.WorkersIdle == 1 })
	p := dialProducer(t, s)
	submit(t, p, wire.SubmitItem{Key: key("http://drain.test/1")})
	recvT(t, started, "first job")
	if _, err := adm.Act(ctxT(t), admin.Action{Kind: admin.ActDrain, Targets: []string{"drained"}}); err != nil {
		t.Fatal(err)
	}
	submit(t, p, wire.SubmitItem{Key: key("http://drain.test/2")})
	// The dispatch a submit causes happens before the server reads its next
	// request, so these totals already show whether it went to the worker.
	if tot, err := adm.Totals(ctxT(t)); err != nil || tot.Queued != 1 || tot.Dispatched != 1 {
		t.Fatalf("totals %+v, %v: want the second job queued, not given to the draining worker", tot, err)
	}
	close(release)
	select {
	case err := <-w.done:
		w.done <- err
		if !errors.Is(err, ErrDrained) {
			t.Fatalf("Run returned %v, want ErrDrained", err)
		}
	case <-time.After(wait):
		t.Fatal("drained worker still running")
	}
	s.WaitFor(t, wait, "first job done", func(r *testsrv.Records) bool { return len(r.Finished) == 1 })
}

// TestRequeueAndPause: a failed job requeued by the operator runs again; a
// paused broker dispatches nothing until resumed.
func TestRequeueAndPause(t *testing.T) {
	s := testsrv.Start(t, testsrv.Options{})
	adm := dialAdmin(t, s, client.AdminOptions{})
	var calls atomic.Int32
	runWorker(t, s.PeersEndpoint(), Options{ID: "w"}, func(ctx context.Context, j Job) Result {
		calls.Add(1)
		if j.Attempt == 1 {
			return External(errors.New("bad the first time"))
		}
		return OK(nil)
	})
	totals(t, adm, "worker registered", func(t admin.Totals) bool { return t.WorkersIdle == 1 })
	p := dialProducer(t, s)
	ids := submit(t, p, wire.SubmitItem{Key: key("http://rq.test/")})
	s.WaitFor(t, wait, "job failed", func(r *testsrv.Records) bool { return len(r.Finished) == 1 })
	if res, err := adm.Act(ctxT(t), admin.Action{Kind: admin.ActRequeue, Targets: []string{fmt.Sprint(ids[0])}}); err != nil || res.Affected != 1 {
		t.Fatalf("requeue: %+v, %v; want 1 affected", res, err)
	}
	s.WaitFor(t, wait, "requeued job done", func(r *testsrv.Records) bool { return len(r.Finished) == 2 })
	if f := s.Snapshot().Finished[1]; f.Failed {
		t.Fatalf("requeued job failed again: %s", f.Error)
	}

	if _, err := adm.Act(ctxT(t), admin.Action{Kind: admin.ActPause}); err != nil {
		t.Fatal(err)
	}
	submit(t, p, wire.SubmitItem{Key: key("http://pause.test/")})
	if tot, err := adm.Totals(ctxT(t)); err != nil || !tot.Paused || tot.Queued != 1 || tot.Dispatched != 0 {
		t.Fatalf("totals while paused %+v, %v: want paused with the job queued", tot, err)
	}
	if _, err := adm.Act(ctxT(t), admin.Action{Kind: admin.ActResume}); err != nil {
		t.Fatal(err)
	}
	s.WaitFor(t, wait, "job done after resume", func(r *testsrv.Records) bool { return len(r.Finished) == 3 })
	if n := calls.Load(); n != 3 {
		t.Fatalf("handler ran %d times, want 3", n)
	}
}

// TestReconnectAfterServerRestart: a fresh server on the same port; the
// worker reconnects by itself and re-announces the job it holds (HELLO
// held), the new server, which does not know the job, has it abandoned
// (WELCOME cancel), and the admin client recovers.
func TestReconnectAfterServerRestart(t *testing.T) {
	s1 := testsrv.Start(t, testsrv.Options{})
	adm := dialAdmin(t, s1, client.AdminOptions{ReconnectMin: 50 * time.Millisecond, ReconnectMax: 200 * time.Millisecond})
	started := make(chan Job, 1)
	cause := make(chan error, 1)
	runWorker(t, s1.PeersEndpoint(), Options{ID: "survivor", ReconnectMin: 50 * time.Millisecond, ReconnectMax: 200 * time.Millisecond},
		func(ctx context.Context, j Job) Result {
			started <- j
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return Internal(context.Cause(ctx))
		})
	p := dialProducer(t, s1)
	submit(t, p, wire.SubmitItem{Key: key("http://restart.test/")})
	recvT(t, started, "job")
	if err := s1.Stop(); err != nil {
		t.Fatal(err)
	}
	s2 := testsrv.Start(t, testsrv.Options{Peers: s1.PeersEndpoint(), Admin: s1.AdminEndpoint()})
	s2.WaitFor(t, wait, "worker HELLO listing its held job", func(r *testsrv.Records) bool {
		for _, l := range r.Logs {
			if l.Message != "session opened" {
				continue
			}
			id, _ := testsrv.Attr(l, "id")
			held, _ := testsrv.Attr(l, "held")
			if id.String() == "survivor" && held.Int64() == 1 {
				return true
			}
		}
		return false
	})
	if err := recvT(t, cause, "cancellation of the unknown job"); !errors.Is(err, ErrCancelled) {
		t.Fatalf("held job cancelled with %v, want ErrCancelled", err)
	}
	totals(t, adm, "admin client back, worker registered again", func(t admin.Totals) bool { return t.WorkersIdle == 1 })
}

// TestGarbageDealer: a DEALER sending 20k malformed messages at full speed
// while a well-behaved worker completes jobs: every job completes and the
// server counts every malformed message.
func TestGarbageDealer(t *testing.T) {
	s := testsrv.Start(t, testsrv.Options{})
	adm := dialAdmin(t, s, client.AdminOptions{})
	runWorker(t, s.PeersEndpoint(), Options{ID: "w", Slots: 8}, func(ctx context.Context, j Job) Result { return OK(j.Payload) })
	corpus := [][][]byte{
		{[]byte("AMQP"), []byte("HELLO"), make([]byte, 8)},
		{[]byte("DRV3"), []byte("HELLO"), make([]byte, 8), nil},
		{[]byte("DRV2"), []byte("FROB"), make([]byte, 8)},
		{[]byte("DRV2"), []byte("SUBMIT"), make([]byte, 8), {0, 0}},
		{[]byte("DRV2"), []byte("SUBMIT"), {1, 2, 3}, {0, 0, 0, 1}},
		{[]byte("DRV2"), []byte("HEARTBEAT"), make([]byte, 8), nil, nil},
		{[]byte("garbage")},
		{[]byte("DRV2"), []byte("RESULT"), make([]byte, 8), bytes.Repeat([]byte{0xff}, 64)},
		{[]byte("DRV2"), []byte("REQUEST"), make([]byte, 8), {0, 0, 0, 1, 0, 1, 'c', 0, 1, 'p', 0, 1, 'u'}}, // before HELLO
	}
	const n = 20000
	sent := make(chan error, 1)
	// The garbage DEALER stays open until the end of the test: closing it
	// would drop what it has not sent yet after its linger.
	hold := make(chan struct{})
	defer close(hold)
	go func() {
		g, err := zsock.Dealer(s.PeersEndpoint(), "")
		if err != nil {
			sent <- err
			return
		}
		defer g.Close()
		defer func() { <-hold }()
		for i := range n {
			if _, err := g.SendMessage(corpus[i%len(corpus)]); err != nil {
				sent <- fmt.Errorf("garbage %d: %w", i, err)
				return
			}
		}
		sent <- nil
	}()
	p := dialProducer(t, s)
	const jobs = 200
	for b := range jobs / 20 {
		items := make([]wire.SubmitItem, 20)
		for i := range items {
			items[i] = wire.SubmitItem{Key: key(fmt.Sprintf("http://busy.test/%d/%d", b, i))}
		}
		submit(t, p, items...)
	}
	s.WaitFor(t, wait, "every job done", func(r *testsrv.Records) bool { return len(r.Finished) == jobs })
	if err := recvT(t, sent, "garbage sent"); err != nil {
		t.Fatal(err)
	}
	totals(t, adm, "every malformed message counted", func(t admin.Totals) bool { return t.Malformed == n })
	for _, f := range s.Snapshot().Finished {
		if f.Failed {
			t.Fatalf("job %s failed: %s", f.Key.URL, f.Error)
		}
	}
}

// TestShutdown: when Run's context ends, running jobs are cancelled; a
// result returned as ok is still delivered, an abandoned job goes back to
// the queue uncharged, and Run returns nil.
func TestShutdown(t *testing.T) {
	s := testsrv.Start(t, testsrv.Options{})
	adm := dialAdmin(t, s, client.AdminOptions{})
	started := make(chan Job, 2)
	w := runWorker(t, s.PeersEndpoint(), Options{ID: "w", Slots: 2}, func(ctx context.Context, j Job) Result {
		started <- j
		<-ctx.Done()
		if !errors.Is(context.Cause(ctx), ErrShutdown) {
			return Internal(fmt.Errorf("cause %v, want ErrShutdown", context.Cause(ctx)))
		}
		if strings.HasSuffix(j.Key.URL, "/finishes") {
			return OK([]byte("made it"))
		}
		return Internal(context.Cause(ctx))
	})
	totals(t, adm, "worker registered", func(t admin.Totals) bool { return t.WorkersIdle == 1 })
	p := dialProducer(t, s)
	fin, aban := key("http://stop.test/finishes"), key("http://stop.test/abandoned")
	submit(t, p, wire.SubmitItem{Key: fin}, wire.SubmitItem{Key: aban})
	recvT(t, started, "first job")
	recvT(t, started, "second job")
	if err := w.stop(t); err != nil {
		t.Fatalf("Run returned %v after its context ended, want nil", err)
	}
	s.WaitFor(t, wait, "finished job recorded", func(r *testsrv.Records) bool { return len(r.Finished) == 1 })
	if f := s.Snapshot().Finished[0]; f.Key != fin || string(f.Output) != "made it" {
		t.Fatalf("finished %+v, want the job that finished, with its output", f)
	}
	totals(t, adm, "worker gone", func(t admin.Totals) bool { return t.WorkersIdle+t.WorkersBusy == 0 })
	if row := jobRow(t, adm, aban.URL); row.State != "queued" || row.Failures != 0 {
		t.Fatalf("abandoned job: state %s, failures %d; want queued, uncharged", row.State, row.Failures)
	}
}

func TestOptionErrors(t *testing.T) {
	nop := func(context.Context, Job) Result { return OK(nil) }
	cases := []struct {
		name string
		opts Options
		h    Handler
		want string
	}{
		{"nil handler", Options{}, nil, "nil handler"},
		{"slots", Options{Slots: wire.MaxSlots + 1}, nop, "Slots"},
		{"negative slots", Options{Slots: -1}, nop, "Slots"},
		{"heartbeat", Options{Heartbeat: -time.Second}, nop, "Heartbeat"},
		{"reconnect", Options{ReconnectMin: time.Second, ReconnectMax: time.Millisecond}, nop, "ReconnectMin"},
		{"header name", Options{Headers: map[string]string{"bad name": "x"}}, nop, "header"},
		{"id", Options{ID: "two\nlines"}, nop, "id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Run(ctxT(t), tc.opts, tc.h)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run: %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

func TestToItem(t *testing.T) {
	big := make([]byte, wire.MaxOutput+1)
	links := make([]wire.SubmitItem, wire.MaxLinksPerResult+1)
	cases := []struct {
		name    string
		in      Result
		outcome wire.Outcome
		retry   time.Duration
		errHas  string
		links   int
	}{
		{"zero is ok", Result{}, wire.OutcomeOK, 0, "", 0},
		{"zero with error is internal", Result{Error: "boom"}, wire.OutcomeInternal, 0, "boom", 0},
		{"bad outcome", Result{Outcome: 9}, wire.OutcomeInternal, 0, "outcome 9", 0},
		{"output too large", Result{Output: big}, wire.OutcomeInternal, 0, "output of", 0},
		{"too many links", Result{Links: links}, wire.OutcomeExternal, 0, "discovered links", 0},
		{"links dropped unless ok", Result{Outcome: wire.OutcomeInternal, Error: "x", Links: links[:2]}, wire.OutcomeInternal, 0, "x", 0},
		{"links kept with ok", OK(nil, links[:2]...), wire.OutcomeOK, 0, "", 2},
		{"retry after rounded up", Throttled(1500*time.Microsecond, nil), wire.OutcomeThrottled, 2 * time.Millisecond, "", 0},
		{"retry after only when throttled", Result{Outcome: wire.OutcomeOK, RetryAfter: time.Second}, wire.OutcomeOK, 0, "", 0},
		{"long error clipped", Internal(errors.New(strings.Repeat("é", wire.MaxText))), wire.OutcomeInternal, 0, "é", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			it := toItem(wire.Run{JobID: 7, Attempt: 1}, tc.in)
			if it.JobID != 7 || it.Outcome != tc.outcome || it.RetryAfter != tc.retry || !strings.Contains(it.Error, tc.errHas) || len(it.Links) != tc.links {
				t.Fatalf("toItem: %+v (links %d), want outcome %s, retry %v, error containing %q, %d links",
					it.Outcome, len(it.Links), tc.outcome, tc.retry, tc.errHas, tc.links)
			}
			if len(it.Error) > wire.MaxText {
				t.Fatalf("error of %d bytes, want at most %d", len(it.Error), wire.MaxText)
			}
		})
	}
}
