package worker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"drover/net/internal/conn"
	"drover/net/wire"
)

// TestResultsResentAfterReconnect: a result the server did not
// acknowledge is listed as held in the next HELLO and sent again; once
// acknowledged it is forgotten.
func TestResultsResentAfterReconnect(t *testing.T) {
	srv := newScripted(t)
	runWorker(t, srv.EP, Options{ID: "w", Slots: 2, ReconnectMin: 10 * time.Millisecond, ReconnectMax: 20 * time.Millisecond},
		func(ctx context.Context, j Job) Result { return OK([]byte("out")) })
	if h := srv.Greet(); h.Role != wire.RoleWorker || h.Slots != 2 || len(h.Held) != 0 {
		t.Fatalf("first HELLO %+v: want a worker with 2 slots holding nothing", h)
	}
	srv.Send(&wire.Job{Jobs: []wire.JobItem{jobItem(41, "http://r.test/")}})
	r1 := expect[*wire.Result](t, srv.Next())
	if len(r1.Items) != 1 || r1.Items[0].JobID != 41 || string(r1.Items[0].Output) != "out" {
		t.Fatalf("RESULT %+v: want job 41 ok with its output", r1.Items)
	}
	srv.Send(&wire.Disconnect{Code: wire.CodeUnavailable, Reason: "restarting"})
	if h := srv.Greet(); !slices.Equal(h.Held, []wire.Run{{JobID: 41, Attempt: 1}}) {
		t.Fatalf("HELLO after reconnecting holds %v, want [41] (result not acknowledged)", h.Held)
	}
	r2 := expect[*wire.Result](t, srv.Next())
	if len(r2.Items) != 1 || r2.Items[0].JobID != 41 || string(r2.Items[0].Output) != "out" || r2.Req == r1.Req {
		t.Fatalf("re-sent RESULT %+v (req %d): want job 41 again under a new request id", r2.Items, r2.Req)
	}
	srv.Send(&wire.ResultOK{Req: r2.Req, Items: []wire.ResultOKItem{{JobID: 41, Attempt: 1, Status: wire.ResultRecorded}}})
	srv.Send(&wire.Disconnect{Code: wire.CodeUnavailable, Reason: "again"})
	if h := srv.Greet(); len(h.Held) != 0 {
		t.Fatalf("HELLO after the acknowledgement holds %v, want nothing", h.Held)
	}
}

// TestCancelStopsJob: CANCEL cancels the job's context (ErrCancelled), and
// the contexts a handler derives from it (with the same cause), and its
// result is still reported.
func TestCancelStopsJob(t *testing.T) {
	srv := newScripted(t)
	cause := make(chan error, 1)
	started := make(chan struct{})
	runWorker(t, srv.EP, Options{ID: "w"}, func(ctx context.Context, j Job) Result {
		child, stop := context.WithTimeout(ctx, time.Hour) // as a fetch's timeout
		defer stop()
		close(started)
		<-child.Done()
		if !errors.Is(context.Cause(child), context.Cause(ctx)) {
			t.Errorf("derived context's cause %v, the job's %v", context.Cause(child), context.Cause(ctx))
		}
		cause <- context.Cause(ctx)
		return Internal(context.Cause(ctx))
	})
	srv.Greet()
	srv.Send(&wire.Job{Jobs: []wire.JobItem{jobItem(5, "http://c.test/")}})
	// (A job cancelled before its handler starts never starts.)
	recvT(t, started, "handler start")
	srv.Send(&wire.Cancel{Runs: []wire.Run{{JobID: 5, Attempt: 1}}, Reason: "requeued by the operator"})
	if err := recvT(t, cause, "cancellation"); !errors.Is(err, ErrCancelled) {
		t.Fatalf("cause %v, want ErrCancelled", err)
	}
	r := expect[*wire.Result](t, srv.Next())
	if len(r.Items) != 1 || r.Items[0].JobID != 5 || r.Items[0].Outcome != wire.OutcomeInternal {
		t.Fatalf("RESULT %+v: want job 5, internal", r.Items)
	}
	srv.Send(&wire.ResultOK{Req: r.Req, Items: []wire.ResultOKItem{{JobID: 5, Attempt: 1, Status: wire.ResultStale}}})
}

// TestNewAttemptWhileCancelledRunWindsDown: after an operator requeue the
// server sends CANCEL for attempt 1 and then the same job as attempt 2,
// before attempt 1's handler has returned. The worker keeps both as
// different runs (its one slot runs attempt 2 once attempt 1 has wound
// down) and reports each under its own attempt.
func TestNewAttemptWhileCancelledRunWindsDown(t *testing.T) {
	srv := newScripted(t)
	started := make(chan int, 2)
	release := make(chan struct{})
	runWorker(t, srv.EP, Options{ID: "w", Slots: 1}, func(ctx context.Context, j Job) Result {
		started <- j.Attempt
		if j.Attempt == 1 {
			<-ctx.Done()
			<-release // still winding down when attempt 2 arrives
			return Internal(context.Cause(ctx))
		}
		return OK([]byte("second"))
	})
	srv.Greet()
	srv.Send(&wire.Job{Jobs: []wire.JobItem{jobItem(5, "http://c.test/")}})
	if a := recvT(t, started, "attempt 1 start"); a != 1 {
		t.Fatalf("started attempt %d, want 1", a)
	}
	srv.Send(&wire.Cancel{Runs: []wire.Run{{JobID: 5, Attempt: 1}}, Reason: "requeued by the operator"})
	second := jobItem(5, "http://c.test/")
	second.Attempt = 2
	srv.Send(&wire.Job{Jobs: []wire.JobItem{second}})
	// Let the two messages arrive before attempt 1 ends: a HEARTBEAT round
	// trip is not needed, the JOB is ordered after the CANCEL.
	close(release)
	if a := recvT(t, started, "attempt 2 start"); a != 2 {
		t.Fatalf("started attempt %d, want 2", a)
	}
	got := map[uint32]wire.ResultItem{}
	for len(got) < 2 {
		r := expect[*wire.Result](t, srv.Next())
		var ack []wire.ResultOKItem
		for _, it := range r.Items {
			if it.JobID != 5 {
				t.Fatalf("RESULT %+v: want only job 5", r.Items)
			}
			got[it.Attempt] = it
			ack = append(ack, wire.ResultOKItem{JobID: 5, Attempt: it.Attempt, Status: wire.ResultRecorded})
		}
		srv.Send(&wire.ResultOK{Req: r.Req, Items: ack})
	}
	if got[1].Outcome != wire.OutcomeInternal || got[2].Outcome != wire.OutcomeOK || string(got[2].Output) != "second" {
		t.Fatalf("results %+v: want attempt 1 internal (cancelled), attempt 2 ok", got)
	}
}

// TestWelcomeCancelAbandons: jobs WELCOME lists in cancel are cancelled
// and their results dropped; the others carry on.
func TestWelcomeCancelAbandons(t *testing.T) {
	srv := newScripted(t)
	causes := make(chan error, 2)
	release := make(chan struct{})
	runWorker(t, srv.EP, Options{ID: "w", Slots: 2, ReconnectMin: 10 * time.Millisecond, ReconnectMax: 20 * time.Millisecond},
		func(ctx context.Context, j Job) Result {
			if j.ID == 1 {
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return OK([]byte("too late"))
			}
			<-release
			return OK([]byte("two"))
		})
	srv.Greet()
	srv.Send(&wire.Job{Jobs: []wire.JobItem{jobItem(1, "http://a.test/1"), jobItem(2, "http://a.test/2")}})
	srv.Send(&wire.Disconnect{Code: wire.CodeUnavailable, Reason: "restarting"})
	if h := srv.Greet(wire.Run{JobID: 1, Attempt: 1}); !slices.Equal(h.Held, []wire.Run{{JobID: 1, Attempt: 1}, {JobID: 2, Attempt: 1}}) {
		t.Fatalf("HELLO holds %v, want [1 2]", h.Held)
	}
	if err := recvT(t, causes, "cancellation of job 1"); !errors.Is(err, ErrCancelled) {
		t.Fatalf("job 1 cause %v, want ErrCancelled", err)
	}
	close(release)
	r := expect[*wire.Result](t, srv.Next())
	if len(r.Items) != 1 || r.Items[0].JobID != 2 {
		t.Fatalf("RESULT %+v: want only job 2", r.Items)
	}
	srv.Send(&wire.ResultOK{Req: r.Req, Items: []wire.ResultOKItem{{JobID: 2, Attempt: 1, Status: wire.ResultRecorded}}})
	srv.Send(&wire.Disconnect{Code: wire.CodeUnavailable, Reason: "again"})
	if h := srv.Greet(); len(h.Held) != 0 {
		t.Fatalf("HELLO holds %v, want nothing (job 1 abandoned, job 2 acknowledged)", h.Held)
	}
}

// TestResultsBatched: results of jobs that finish together go in one
// RESULT. The loop is held while the handlers return, so that their
// results are all waiting when it next runs.
func TestResultsBatched(t *testing.T) {
	srv := newScripted(t)
	const n = 8
	release := make(chan struct{})
	opts, err := Options{Connect: srv.EP, ID: "w", Slots: n}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(opts, func(ctx context.Context, j Job) Result {
		<-release
		return OK(nil)
	})
	c, err := conn.Start(conn.Config{Endpoint: srv.EP}, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	srv.Greet()
	items := make([]wire.JobItem, n)
	for i := range items {
		items[i] = jobItem(uint64(i+1), "http://batch.test/")
	}
	srv.Send(&wire.Job{Jobs: items})
	busy := make(chan int, 1)
	testEventually(t, "all jobs started", func() bool {
		c.Post(func(*conn.Link) { busy <- s.busy })
		return recvT(t, busy, "busy count") == n
	})
	// Hold the loop, then let the handlers return.
	gate, held := make(chan struct{}), make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	defer open()
	c.Post(func(*conn.Link) {
		close(held)
		<-gate
	})
	recvT(t, held, "loop held")
	close(release)
	testEventually(t, "every result handed to the loop", func() bool {
		s.finMu.Lock()
		defer s.finMu.Unlock()
		return len(s.fin) == n
	})
	if q := c.Queued(); q != 1 {
		t.Errorf("%d posts for %d results, want 1", q, n)
	}
	open()
	r := expect[*wire.Result](t, srv.Next())
	if len(r.Items) != n {
		t.Fatalf("first RESULT carries %d results, want all %d", len(r.Items), n)
	}
}

func testEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, wait)
		}
		<-tick.C
	}
}

// TestHandlerPanic: a panicking handler is reported as an internal
// failure and the worker carries on.
func TestHandlerPanic(t *testing.T) {
	srv := newScripted(t)
	runWorker(t, srv.EP, Options{ID: "w"}, func(ctx context.Context, j Job) Result {
		if j.ID == 1 {
			panic("handler bug")
		}
		return OK(nil)
	})
	srv.Greet()
	srv.Send(&wire.Job{Jobs: []wire.JobItem{jobItem(1, "http://p.test/")}})
	r := expect[*wire.Result](t, srv.Next())
	if r.Items[0].Outcome != wire.OutcomeInternal || r.Items[0].Error != "handler panicked: handler bug" {
		t.Fatalf("RESULT %+v: want internal naming the panic", r.Items[0])
	}
	srv.Send(&wire.ResultOK{Req: r.Req, Items: []wire.ResultOKItem{{JobID: 1, Attempt: 1, Status: wire.ResultRecorded}}})
	srv.Send(&wire.Job{Jobs: []wire.JobItem{jobItem(2, "http://p.test/2")}})
	r = expect[*wire.Result](t, srv.Next())
	if r.Items[0].JobID != 2 || r.Items[0].Outcome != wire.OutcomeOK {
		t.Fatalf("RESULT %+v: want job 2 ok", r.Items[0])
	}
	srv.Send(&wire.ResultOK{Req: r.Req, Items: []wire.ResultOKItem{{JobID: 2, Attempt: 1, Status: wire.ResultRecorded}}})
}

// TestEvictedWaitsBeforeReconnecting: after DISCONNECT 410 the running
// job is cancelled (ErrEvicted) and abandoned, and the worker does not
// come back before ReconnectMax.
func TestEvictedWaitsBeforeReconnecting(t *testing.T) {
	const max = 300 * time.Millisecond
	srv := newScripted(t)
	cause := make(chan error, 1)
	started := make(chan struct{})
	runWorker(t, srv.EP, Options{ID: "w", ReconnectMin: 10 * time.Millisecond, ReconnectMax: max},
		func(ctx context.Context, j Job) Result {
			close(started)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return Internal(context.Cause(ctx))
		})
	srv.Greet()
	srv.Send(&wire.Job{Jobs: []wire.JobItem{jobItem(9, "http://ev.test/")}})
	recvT(t, started, "handler start")
	evicted := time.Now()
	srv.Send(&wire.Disconnect{Code: wire.CodeEvicted, Reason: "operator"})
	if err := recvT(t, cause, "cancellation"); !errors.Is(err, ErrEvicted) {
		t.Fatalf("cause %v, want ErrEvicted", err)
	}
	h := srv.Greet()
	if gap := time.Since(evicted); gap < max*9/10 {
		t.Fatalf("reconnected %v after the eviction, want no sooner than ReconnectMax %v (less 10%% jitter)", gap, max)
	}
	if len(h.Held) != 0 {
		t.Fatalf("HELLO after eviction holds %v, want nothing", h.Held)
	}
}

// TestResultRefused: a RESULT the server answers with ERROR is dropped and
// the session ended (DISCONNECT), so that the server takes the jobs back;
// the next HELLO does not list them.
func TestResultRefused(t *testing.T) {
	srv := newScripted(t)
	runWorker(t, srv.EP, Options{ID: "w", ReconnectMin: 10 * time.Millisecond, ReconnectMax: 20 * time.Millisecond},
		func(ctx context.Context, j Job) Result { return OK(nil) })
	srv.Greet()
	srv.Send(&wire.Job{Jobs: []wire.JobItem{jobItem(3, "http://ref.test/")}})
	r := expect[*wire.Result](t, srv.Next())
	srv.Send(&wire.Error{Req: r.Req, Code: wire.CodeMalformed, Msg: "no"})
	d := expect[*wire.Disconnect](t, srv.Next())
	if d.Code != wire.CodeMalformed || !strings.Contains(d.Reason, "RESULT refused") {
		t.Fatalf("DISCONNECT %+v: want code 400 saying the RESULT was refused", d)
	}
	if h := srv.Greet(); len(h.Held) != 0 {
		t.Fatalf("HELLO after the refusal holds %v, want nothing", h.Held)
	}
}

// TestHelloListsAtMostMaxSlots: a worker holding more jobs than a HELLO
// can list lists the first wire.MaxSlots and abandons the rest.
func TestHelloListsAtMostMaxSlots(t *testing.T) {
	opts, err := Options{Connect: "tcp://127.0.0.1:1", ID: "w"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(opts, func(context.Context, Job) Result { return OK(nil) })
	for id := range uint64(wire.MaxSlots + 3) {
		s.jobs[wire.Run{JobID: id + 1, Attempt: 1}] = &running{}
	}
	h := s.Hello(1)
	cancelled := 0
	for _, r := range s.jobs {
		if errors.Is(context.Cause(&r.ctx), ErrCancelled) {
			cancelled++
		}
	}
	if len(h.Held) != wire.MaxSlots || h.Held[0].JobID != 1 || h.Held[wire.MaxSlots-1].JobID != wire.MaxSlots {
		t.Fatalf("HELLO lists %d jobs (%d..), want the first %d", len(h.Held), h.Held[0], wire.MaxSlots)
	}
	if cancelled != 3 {
		t.Fatalf("%d jobs cancelled, want the 3 not listed", cancelled)
	}
	if _, err := wire.Encode(h); err != nil {
		t.Fatalf("HELLO does not encode: %v", err)
	}
}

// TestProgress: a handler's progress reaches the server as PROGRESS, at
// most one per ProgressEvery (the second, too soon, is dropped).
func TestProgress(t *testing.T) {
	srv := newScripted(t)
	runWorker(t, srv.EP, Options{ID: "w"}, func(ctx context.Context, j Job) Result {
		Progress(ctx, "fetching")
		Progress(ctx, "too soon")
		return OK(nil)
	})
	srv.Greet()
	srv.Send(&wire.Job{Jobs: []wire.JobItem{jobItem(12, "http://prog.test/")}})
	p := expect[*wire.Progress](t, srv.Next())
	if p.JobID != 12 || p.Text != "fetching" {
		t.Fatalf("PROGRESS %+v, want job 12 fetching", p)
	}
	r := expect[*wire.Result](t, srv.Next())
	srv.Send(&wire.ResultOK{Req: r.Req, Items: []wire.ResultOKItem{{JobID: 12, Attempt: 1, Status: wire.ResultRecorded}}})
	Progress(context.Background(), "not a job") // does nothing
}
