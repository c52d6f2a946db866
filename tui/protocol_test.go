package tui_test

// The flows themselves; the harness is in protocol_helpers_test.go.

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"drover/admin"
	"drover/net/worker"
)

// The flows.

func TestProtocolEvict(t *testing.T) {
	s := startCoordinator(t)
	p := newProbe(t, s)
	release := make(chan struct{})
	defer close(release)
	w1 := startWorker(t, s, p, "w1", 1, hold(release))
	jid := submit(t, s, "https://example.com/evict")[0]
	first := w1.next(t)
	if first.job.ID != jid || first.job.Attempt != 1 {
		t.Fatalf("w1 got job %d attempt %d, want job %d attempt 1", first.job.ID, first.job.Attempt, jid)
	}
	// w2 joins once w1 holds the job: it is where the job goes next.
	w2 := startWorker(t, s, p, "w2", 1, hold(release))

	c := openConsole(t, s, false)
	c.waitRow("w2", "idle")
	c.selectRow("w1")
	c.act("E", "Evict", []string{"Evict 1 worker?", "w1 (proto-host, busy, 1 jobs)", "not charged a failure"}, func() {
		p.workerState("w1", "busy")
		if j := p.job(jid); j.State != "dispatched" || j.Worker != "w1" || first.ctx.Err() != nil {
			t.Fatalf("after Cancel job %d is %s on %q, its context ended %v; want dispatched on w1, running", jid, j.State, j.Worker, first.ctx.Err())
		}
	}, "evicted 1 worker")

	// The worker hears of it: its job's context ends, cause ErrEvicted.
	receive(t, "the end of w1's job context", first.ctx.Done())
	if cause := context.Cause(first.ctx); !errors.Is(cause, worker.ErrEvicted) {
		t.Errorf("w1's job context ended with %v, want %v", cause, worker.ErrEvicted)
	}
	// The job went back to the queue uncharged, and on to w2.
	if again := w2.next(t); again.job.ID != jid || again.job.Attempt != 2 {
		t.Errorf("w2 got job %d attempt %d, want job %d attempt 2", again.job.ID, again.job.Attempt, jid)
	}
	if j := p.jobState(jid, "dispatched"); j.Worker != "w2" || j.Attempts != 2 || j.Failures != 0 {
		t.Errorf("job after the eviction: on %q, %d attempts, %d failures; want on w2, 2 attempts, uncharged", j.Worker, j.Attempts, j.Failures)
	}
	if !p.hasEvent("job.requeued", jid, "w1", "evicted") || !p.hasEvent("worker.evicted", 0, "w1", "") {
		t.Error("no job.requeued (evicted) and worker.evicted events for w1")
	}
	if _, ok := p.worker("w1"); ok {
		t.Error("w1 is still registered after the eviction")
	}
	c.waitNoRow("w1")
	c.waitRow("w2", "busy")
	c.wantActions(admin.Action{Kind: admin.ActEvict, Targets: []string{"w1"}})
	w1.idle(t)
	w2.idle(t)
	// The evicted worker waits before reconnecting; stopped meanwhile, Run
	// returns at once, cleanly.
	w1.stop()
	if err := w1.waitExit(t); err != nil {
		t.Errorf("evicted worker's Run returned %v after its context ended, want nil", err)
	}
}

func TestProtocolDrain(t *testing.T) {
	s := startCoordinator(t)
	p := newProbe(t, s)
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	w1 := startWorker(t, s, p, "w1", 2, hold(release))
	a := submit(t, s, "https://example.com/drain/a")[0]
	if got := w1.next(t); got.job.ID != a {
		t.Fatalf("w1 got job %d, want %d", got.job.ID, a)
	}

	c := openConsole(t, s, false)
	c.selectRow("w1")
	c.waitRow("w1", "busy", "1/2")
	c.act("D", "Drain", []string{"Drain 1 worker?", "w1 (proto-host, busy, 1 jobs)", "leave when their jobs finish"},
		func() { p.workerState("w1", "busy") }, "draining 1 worker")
	p.workerState("w1", "draining")
	c.waitRow("w1", "draining")
	// A job w1 has a free slot for is not given to it.
	b := submit(t, s, "https://example.com/drain/b")[0]
	p.fence(b)
	if j := p.job(b); j.State != "queued" || !strings.Contains(j.Reason, "unroutable") || p.hasEvent("job.dispatched", b, "", "") {
		t.Errorf("job %d beside a draining worker: %s (%q); want queued as unroutable, never dispatched", b, j.State, j.Reason)
	}
	w1.idle(t)

	// Undrain (D on a draining worker): the job held back goes to w1.
	c.act("D", "Undrain", []string{"Undrain 1 worker?", "w1 (proto-host, draining, 1 jobs)"},
		func() { p.workerState("w1", "draining") }, "undrained 1 worker")
	if got := w1.next(t); got.job.ID != b {
		t.Fatalf("after undrain w1 got job %d, want %d", got.job.ID, b)
	}
	p.jobState(b, "dispatched")

	// Drain again: w1 leaves once both its jobs are done.
	c.waitRow("w1", "busy", "2/2")
	c.act("D", "Drain", []string{"Drain 1 worker?", "w1 (proto-host, busy, 2 jobs)"}, nil, "draining 1 worker")
	p.workerState("w1", "draining")
	unblock()
	if err := w1.waitExit(t); !errors.Is(err, worker.ErrDrained) {
		t.Errorf("drained worker's Run returned %v, want %v", err, worker.ErrDrained)
	}
	p.jobState(a, "done")
	p.jobState(b, "done")
	if _, ok := p.worker("w1"); ok || !p.hasEvent("worker.closed", 0, "w1", "drained") {
		t.Errorf("after draining: w1 registered %v, want gone with a worker.closed (drained) event", ok)
	}
	c.waitNoRow("w1")
	drain, undrain := admin.Action{Kind: admin.ActDrain, Targets: []string{"w1"}}, admin.Action{Kind: admin.ActUndrain, Targets: []string{"w1"}}
	c.wantActions(drain, undrain, drain)
}

func TestProtocolRequeueOne(t *testing.T) {
	s := startCoordinator(t)
	p := newProbe(t, s)
	w1 := startWorker(t, s, p, "w1", 1, failing(3, worker.Internal))
	one, other := "https://example.com/requeue/one", "https://example.com/requeue/other"
	ids := submit(t, s, one, other)
	for range 3 * len(ids) {
		w1.next(t)
	}
	before := p.jobState(ids[0], "failed")
	p.jobState(ids[1], "failed")
	if before.Attempts != 3 || before.Failures != 3 {
		t.Fatalf("failed job: %d attempts, %d failures; want 3 and 3", before.Attempts, before.Failures)
	}

	c := openConsole(t, s, false)
	c.press("2")
	c.waitText("[2 Jobs]")
	c.waitRow(other, "failed")
	c.selectRow(one)
	c.act("R", "Requeue", []string{"Requeue 1 job?", one + " (failed)", "counts are kept"}, func() {
		if tot := p.totals(); tot.Failed != 2 || tot.Queued+tot.Dispatched != 0 {
			t.Fatalf("after Cancel: %d failed, %d queued, %d dispatched; want 2, 0, 0", tot.Failed, tot.Queued, tot.Dispatched)
		}
	}, "requeued 1 job")

	if again := w1.next(t); again.job.ID != ids[0] || again.job.Attempt != 4 {
		t.Errorf("w1 got job %d attempt %d, want job %d attempt 4", again.job.ID, again.job.Attempt, ids[0])
	}
	if after := p.jobState(ids[0], "done"); after.Attempts != 4 || after.Failures != 3 {
		t.Errorf("requeued job: %d attempts, %d failures; want 4, and its 3 failures kept", after.Attempts, after.Failures)
	}
	if j := p.job(ids[1]); j.State != "failed" {
		t.Errorf("the other failed job is %s, want still failed", j.State)
	}
	c.waitRow(one, "done")
	c.waitRow(other, "failed")
	c.wantActions(admin.Action{Kind: admin.ActRequeue, Targets: []string{strconv.FormatUint(ids[0], 10)}})
	w1.idle(t)
}

func TestProtocolRequeueAllFailed(t *testing.T) {
	s := startCoordinator(t)
	p := newProbe(t, s)
	fine := "https://example.com/fine"
	w1 := startWorker(t, s, p, "w1", 1, func(ctx context.Context, j worker.Job) worker.Result {
		if j.Key.URL == fine {
			return worker.OK(nil)
		}
		return failing(1, worker.External)(ctx, j)
	})
	bad := []string{"https://example.com/bad/1", "https://example.com/bad/2", "https://example.com/bad/3"}
	ids := submit(t, s, append([]string{fine}, bad...)...)
	for range ids {
		w1.next(t)
	}
	p.jobState(ids[0], "done")
	for _, jid := range ids[1:] {
		p.jobState(jid, "failed")
	}

	c := openConsole(t, s, false)
	c.press("4")
	c.waitText("[4 Retries]", "failed 3 ")
	for _, u := range bad {
		c.waitRow(u, "failed")
	}
	c.act("R", "Requeue all", append([]string{"Requeue all 3 failed jobs?"}, bad...), func() {
		if tot := p.totals(); tot.Failed != 3 || tot.Queued+tot.Dispatched != 0 {
			t.Fatalf("after Cancel: %d failed, %d queued, %d dispatched; want 3, 0, 0", tot.Failed, tot.Queued, tot.Dispatched)
		}
	}, "requeued 3 jobs")

	var again []uint64
	for range bad {
		got := w1.next(t)
		if got.job.Attempt != 2 {
			t.Errorf("w1 got job %d attempt %d, want attempt 2", got.job.ID, got.job.Attempt)
		}
		again = append(again, got.job.ID)
	}
	if slices.Sort(again); !slices.Equal(again, ids[1:]) {
		t.Errorf("dispatched again: jobs %v, want the failed ones %v", again, ids[1:])
	}
	for _, jid := range ids[1:] {
		p.jobState(jid, "done")
	}
	if j := p.job(ids[0]); j.Attempts != 1 {
		t.Errorf("the done job has %d attempts, want 1: requeue-failed must not touch it", j.Attempts)
	}
	if tot := p.totals(); tot.Failed != 0 || tot.Done != 4 {
		t.Errorf("totals: %d failed, %d done; want 0 and 4", tot.Failed, tot.Done)
	}
	c.waitText("no rows")
	c.wantActions(admin.Action{Kind: admin.ActRequeueFailed})
	w1.idle(t)
}

func TestProtocolPauseResume(t *testing.T) {
	s := startCoordinator(t)
	p := newProbe(t, s)
	w1 := startWorker(t, s, p, "w1", 1, failing(0, nil))

	c := openConsole(t, s, false)
	c.waitRow("w1", "idle")
	c.act("P", "Pause", []string{"Pause dispatch?", "0 queued jobs wait"}, func() {
		if p.totals().Paused {
			t.Fatal("paused after Cancel")
		}
	}, "paused dispatch")
	c.waitText("PAUSED")
	if !p.totals().Paused {
		t.Fatal("the coordinator is not paused")
	}

	jid := submit(t, s, "https://example.com/paused")[0]
	p.fence(jid)
	if j := p.job(jid); j.State != "queued" || j.Reason != "paused" || p.hasEvent("job.dispatched", jid, "", "") {
		t.Errorf("job %d while paused: %s (%q); want queued (paused), never dispatched", jid, j.State, j.Reason)
	}
	w1.idle(t)

	c.waitText("queued 1 ")
	c.act("P", "Resume", []string{"Resume dispatch?", "1 queued jobs become eligible"}, func() {
		if j := p.job(jid); !p.totals().Paused || j.State != "queued" {
			t.Fatalf("after Cancel: job %d is %s, paused %v; want queued and paused", jid, j.State, p.totals().Paused)
		}
		w1.idle(t)
	}, "resumed dispatch")
	if got := w1.next(t); got.job.ID != jid {
		t.Fatalf("after resume w1 got job %d, want %d", got.job.ID, jid)
	}
	p.jobState(jid, "done")
	if p.totals().Paused {
		t.Error("the coordinator is still paused")
	}
	c.waitScreen("PAUSED gone from the header", func(s string) (bool, string) {
		return !strings.Contains(s, "PAUSED"), "still shown"
	})
	c.wantActions(admin.Action{Kind: admin.ActPause}, admin.Action{Kind: admin.ActResume})
	w1.idle(t)
}

func TestProtocolReadOnlyRefuses(t *testing.T) {
	s := startCoordinator(t)
	p := newProbe(t, s)
	release := make(chan struct{})
	defer close(release)
	w1 := startWorker(t, s, p, "w1", 2, func(ctx context.Context, j worker.Job) worker.Result {
		if strings.HasSuffix(j.Key.URL, "/fail") {
			return worker.External(errors.New("malformed page"))
		}
		return hold(release)(ctx, j)
	})
	ids := submit(t, s, "https://example.com/held", "https://example.com/fail")
	w1.next(t)
	w1.next(t)
	p.jobState(ids[0], "dispatched")
	p.jobState(ids[1], "failed")

	c := openConsole(t, s, true)
	c.waitText("RO read-only")
	c.waitRow("w1", "busy")
	// Each key after the first gives a different flash than the one
	// before, so each flash waited for is that key's.
	for _, st := range []struct{ view, tab, key, what string }{
		{"1", "[1 Workers]", "E", "evict (E)"},
		{"1", "[1 Workers]", "D", "drain (D)"},
		{"2", "[2 Jobs]", "R", "requeue (R)"},
		{"4", "[4 Retries]", "P", "pause (P)"},
		{"4", "[4 Retries]", "R", "requeue (R)"},
	} {
		c.press(st.view)
		c.waitText(st.tab)
		c.press(st.key)
		if screen := c.waitText("read-only console: " + st.what + " is disabled"); strings.Contains(screen, "[ Cancel ]") {
			t.Fatalf("read-only console opened a dialog for %s:\n%s", st.key, screen)
		}
	}
	c.wantActions()
	// Nothing changed in the coordinator.
	p.workerState("w1", "busy")
	if j := p.job(ids[0]); j.State != "dispatched" || j.Worker != "w1" {
		t.Errorf("held job is %s on %q, want dispatched on w1", j.State, j.Worker)
	}
	// The coordinator refuses the read-only session too, should a console
	// try.
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if res, err := c.adm.Act(ctx, admin.Action{Kind: admin.ActPause}); err == nil {
		t.Errorf("the coordinator let a read-only session pause dispatch: %+v", res)
	}
	if tot := p.totals(); tot.Paused || tot.Failed != 1 || tot.Dispatched != 1 {
		t.Errorf("totals after the read-only console: paused %v, %d failed, %d dispatched; want false, 1, 1", tot.Paused, tot.Failed, tot.Dispatched)
	}
	w1.idle(t)
}

// TestProtocolCrawls: key 6 lists the crawls defined on the coordinator
// with their definition, their jobs by state counted by the coordinator,
// the pages dispatched against the budget, and their state: idle before
// any job, running, the state that pause and cancel set, and done once a
// resumed crawl has nothing left to run.
func TestProtocolCrawls(t *testing.T) {
	s := startCoordinator(t)
	p := newProbe(t, s)
	ctx := t.Context()
	op := dialAdmin(t, s, "operator", false)
	if _, err := op.Act(ctx, admin.Action{Kind: admin.ActDefineCrawl, Crawl: &admin.Crawl{Name: "proto", Scope: "domain", MaxDepth: 3, MaxPages: 10}}); err != nil {
		t.Fatalf("define crawl: %v", err)
	}
	if pg, err := op.Query(ctx, admin.Query{View: admin.ViewCrawls}); err != nil || len(pg.Crawls) != 1 || pg.Crawls[0].State != admin.CrawlIdle {
		t.Fatalf("crawls before any job: %+v, %v; want proto idle", pg.Crawls, err)
	}
	release := make(chan struct{})
	var once sync.Once
	finishSlow := func() { once.Do(func() { close(release) }) }
	defer finishSlow()
	// /slow runs until the end, limited.example.org throttles (its host
	// backs off for an hour), the rest is done at once.
	startWorker(t, s, p, "w1", 2, func(ctx context.Context, j worker.Job) worker.Result {
		switch {
		case strings.HasSuffix(j.Key.URL, "/slow"):
			return hold(release)(ctx, j)
		case strings.Contains(j.Key.URL, "limited"):
			return worker.Throttled(time.Hour, errors.New("429"))
		}
		return worker.OK(nil)
	})
	jids := submit(t, s, "https://example.com/a", "https://example.com/slow", "https://limited.example.org/x", "https://limited.example.org/y")
	p.jobState(jids[0], "done")
	p.jobState(jids[1], "dispatched")
	p.jobState(jids[2], "backoff")
	p.jobState(jids[3], "backoff")

	c := openConsole(t, s, false)
	c.press("6")
	c.waitText("[6 Crawls]", "CRAWL", "DONE", "PAGES/S", "BACK-OFFS")
	line := c.waitRow("proto", "running", "domain", "1 host")
	f := strings.Fields(line[2:])
	// CRAWL STATE SCOPE DEPTH QUEUED RUNNING DONE FAILED PAGES/S BACK-OFFS(2) PAGES BUDGET
	if len(f) != 13 || f[3] != "3" || f[4] != "2" || f[5] != "1" || f[6] != "1" || f[7] != "0" || f[11] != "3" || f[12] != "3/7" {
		t.Fatalf("crawl row %q: want depth 3, 2 queued (in backoff), 1 running, 1 done, 0 failed, 1 host backing off, 3 pages, budget 3/7", line)
	}
	c.selectRow("proto")
	c.waitText("HOST BACK-OFFS OF proto (1)", "limited.example.org", "(of the crawl 2)")
	if _, err := op.Act(ctx, admin.Action{Kind: admin.ActPause, Crawler: "proto"}); err != nil {
		t.Fatalf("pause crawl: %v", err)
	}
	c.waitRow("proto", "paused")
	if _, err := op.Act(ctx, admin.Action{Kind: admin.ActCancel, Crawler: "proto"}); err != nil {
		t.Fatalf("cancel crawl: %v", err)
	}
	line = c.waitRow("proto", "cancelled")
	if f := strings.Fields(line[2:]); len(f) != 12 || f[4] != "0" || f[7] != "2" || f[9] != "-" {
		t.Fatalf("cancelled crawl row %q: want 0 queued, 2 failed (its jobs in backoff), no back-offs", line)
	}
	c.press("enter")
	c.waitText("crawls have no detail")

	// Resumed, the crawl runs while /slow does; once it ends nothing of
	// the crawl is queued, running or backing off: done, not running.
	if _, err := op.Act(ctx, admin.Action{Kind: admin.ActResume, Crawler: "proto"}); err != nil {
		t.Fatalf("resume crawl: %v", err)
	}
	c.waitRow("proto", "running")
	finishSlow()
	p.jobState(jids[1], "done")
	line = c.waitRow("proto", "done")
	if f := strings.Fields(line[2:]); len(f) != 12 || f[4] != "0" || f[5] != "0" || f[6] != "2" || f[7] != "2" {
		t.Fatalf("done crawl row %q: want 0 queued, 0 running, 2 done, 2 failed", line)
	}
}
