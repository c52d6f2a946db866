package tui_test

// Action flows through the real admin protocol: a real coordinator
// (net/server on ephemeral loopback ports), real workers (net/worker), jobs
// submitted by a real producer (net/client), and the console (tui.New)
// driven key by key in a real Bubble Tea program (teatest) over a real
// admin session. Every effect is checked where it happens: in the
// coordinator, through a second admin session, and in the workers, by what
// their handlers receive and how their contexts end. Nothing here sleeps:
// every wait polls with a deadline or blocks on a channel with one.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"drover/admin"
	"drover/coord"
	"drover/coord/id"
	"drover/net/client"
	"drover/net/server"
	"drover/net/wire"
	"drover/net/worker"
	"drover/net/zsock"
	"drover/tui"
)

// wait bounds every wait of these tests; they finish far sooner.
const wait = 10 * time.Second

// pollEvery is how often a condition is polled.
const pollEvery = 5 * time.Millisecond

// eventually polls cond until it holds, failing the test with cond's last
// explanation after the deadline.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %s", what, why)
		}
		<-tick.C
	}
}

// receive returns the next value from ch, failing the test after the
// deadline.
func receive[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// startCoordinator runs a real coordinator on ephemeral loopback ports
// until the test ends.
func startCoordinator(t *testing.T) *server.Server {
	t.Helper()
	s, err := server.New(server.Options{
		Peers: zsock.Ephemeral, Admin: zsock.Ephemeral, Events: "-",
		Coord: coord.Config{Heartbeat: 100 * time.Millisecond, MinHeartbeat: 10 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("coordinator run: %v", err)
		}
	})
	return s
}

// dialAdmin opens an admin session, closed when the test ends.
func dialAdmin(t *testing.T, s *server.Server, id string, readOnly bool) *client.Admin {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	a, err := client.DialAdmin(ctx, client.AdminOptions{Connect: s.AdminEndpoint(), ID: id, ReadOnly: readOnly})
	if err != nil {
		t.Fatalf("admin session %s: %v", id, err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// probe is a second admin session through which the tests look at the
// coordinator, independently of the console under test.
type probe struct {
	t *testing.T
	a *client.Admin
}

func newProbe(t *testing.T, s *server.Server) probe {
	return probe{t: t, a: dialAdmin(t, s, "probe", true)}
}

// totals are the coordinator's header figures now.
func (p probe) totals() admin.Totals {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	tot, err := p.a.Totals(ctx)
	if err != nil {
		p.t.Fatalf("probe totals: %v", err)
	}
	return tot
}

// query asks for up to 1000 rows of a view (the tests have a handful).
func (p probe) query(view admin.View) admin.Page {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	page, err := p.a.Query(ctx, admin.Query{View: view, Limit: 1000})
	if err != nil {
		p.t.Fatalf("probe %s: %v", view, err)
	}
	return page
}

// job is job jid's row in the Jobs view. (A detail query by job id is not
// possible over DRV/1: QUERY's key must be a fingerprint.)
func (p probe) job(jid uint64) admin.JobRow {
	p.t.Helper()
	jobs := p.query(admin.ViewJobs).Jobs
	if i := slices.IndexFunc(jobs, func(j admin.JobRow) bool { return j.JobID == jid }); i >= 0 {
		return jobs[i]
	}
	p.t.Fatalf("probe: no job %d among %d rows", jid, len(jobs))
	return admin.JobRow{}
}

// worker is the coordinator's row of worker wid, if it has one.
func (p probe) worker(wid string) (admin.WorkerRow, bool) {
	p.t.Helper()
	ws := p.query(admin.ViewWorkers).Workers
	if i := slices.IndexFunc(ws, func(w admin.WorkerRow) bool { return w.ID == wid }); i >= 0 {
		return ws[i], true
	}
	return admin.WorkerRow{}, false
}

// hasEvent reports whether the event log holds an event of that kind
// about job jid (0: any job) and worker wid (empty: any) whose detail
// contains detail.
func (p probe) hasEvent(kind string, jid uint64, wid, detail string) bool {
	p.t.Helper()
	return slices.ContainsFunc(p.query(admin.ViewEvents).Events, func(e admin.Event) bool {
		return e.Kind == kind && (jid == 0 || e.JobID == jid) && (wid == "" || e.Worker == wid) && strings.Contains(e.Detail, detail)
	})
}

// fence waits until the job.submitted event of job jid is in the event
// log. The coordinator logs a step's events after it has dispatched what
// that step made dispatchable, so once the event is there, a job that was
// not dispatched by then was held back, not merely not reached yet.
func (p probe) fence(jid uint64) {
	p.t.Helper()
	eventually(p.t, fmt.Sprintf("job.submitted of job %d in the event log", jid), func() (bool, string) {
		return p.hasEvent("job.submitted", jid, "", ""), "not yet"
	})
}

// jobState waits until job jid is in state.
func (p probe) jobState(jid uint64, state string) admin.JobRow {
	p.t.Helper()
	var row admin.JobRow
	eventually(p.t, fmt.Sprintf("job %d %s", jid, state), func() (bool, string) {
		row = p.job(jid)
		return row.State == state, fmt.Sprintf("job %d is %s on %q", jid, row.State, row.Worker)
	})
	return row
}

// workerState checks worker wid's state in the coordinator now.
func (p probe) workerState(wid, want string) {
	p.t.Helper()
	if w, ok := p.worker(wid); !ok || w.State != want {
		p.t.Fatalf("worker %s: registered %v, state %q; want registered and %q", wid, ok, w.State, want)
	}
}

// seen is one job a worker's handler received, with its context.
type seen struct {
	job worker.Job
	ctx context.Context
}

// testWorker is a real worker (worker.Run) whose handler reports every job
// it receives before running the test's handler.
type testWorker struct {
	id   string
	jobs chan seen
	stop context.CancelFunc
	exit chan struct{} // closed when Run returned
	err  error         // Run's error, once exit is closed
}

// startWorker runs a worker until the test ends, and waits until the
// coordinator lists it.
func startWorker(t *testing.T, s *server.Server, p probe, wid string, slots int, h worker.Handler) *testWorker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &testWorker{id: wid, jobs: make(chan seen, 64), stop: cancel, exit: make(chan struct{})}
	report := func(jctx context.Context, j worker.Job) worker.Result {
		select {
		case w.jobs <- seen{job: j, ctx: jctx}:
		case <-jctx.Done():
			return worker.Internal(context.Cause(jctx))
		}
		return h(jctx, j)
	}
	opts := worker.Options{
		Connect: s.PeersEndpoint(), ID: wid, Host: "proto-host", Slots: slots,
		Heartbeat: 100 * time.Millisecond, StopTimeout: 2 * time.Second,
	}
	go func() {
		w.err = worker.Run(ctx, opts, report)
		close(w.exit)
	}()
	t.Cleanup(func() {
		cancel()
		receive(t, "worker "+wid+"'s Run to return after its context ended", w.exit)
	})
	eventually(t, "worker "+wid+" registered", func() (bool, string) {
		_, ok := p.worker(wid)
		return ok, "not listed"
	})
	return w
}

// next returns the next job the worker's handler receives.
func (w *testWorker) next(t *testing.T) seen {
	t.Helper()
	return receive(t, "a job for worker "+w.id, w.jobs)
}

// idle fails the test if the worker's handler received a job not yet
// taken by next.
func (w *testWorker) idle(t *testing.T) {
	t.Helper()
	select {
	case s := <-w.jobs:
		t.Fatalf("worker %s received job %d (%s, attempt %d); want none", w.id, s.job.ID, s.job.Key.URL, s.job.Attempt)
	default:
	}
}

// waitExit waits for the worker's Run to return and returns its error.
func (w *testWorker) waitExit(t *testing.T) error {
	t.Helper()
	receive(t, "worker "+w.id+"'s Run to return", w.exit)
	return w.err
}

// hold is a handler that keeps every job until release is closed (then
// ok) or its context ends.
func hold(release <-chan struct{}) worker.Handler {
	return func(ctx context.Context, j worker.Job) worker.Result {
		select {
		case <-release:
			return worker.OK(nil)
		case <-ctx.Done():
			return worker.Internal(context.Cause(ctx))
		}
	}
}

// failing is a handler that fails a job's first n attempts with fail and
// succeeds on later ones; n = 0 succeeds at once. External failures fail a
// job at once, internal ones after the default budget of 3.
func failing(n int, fail func(error) worker.Result) worker.Handler {
	return func(_ context.Context, j worker.Job) worker.Result {
		if j.Attempt <= n {
			return fail(errors.New("fetch failed"))
		}
		return worker.OK(nil)
	}
}

// submit submits one job per URL through a real producer session and
// returns their ids, in order.
func submit(t *testing.T, s *server.Server, urls ...string) []uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{Connect: s.PeersEndpoint(), ID: "producer"})
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	defer c.Close()
	items := make([]wire.SubmitItem, len(urls))
	for i, u := range urls {
		items[i] = wire.SubmitItem{Key: id.Key{Crawler: "proto", Processor: "html", URL: u}}
	}
	got, err := c.Submit(ctx, items)
	if err != nil {
		t.Fatalf("submit %v: %v", urls, err)
	}
	ids := make([]uint64, len(got))
	for i, s := range got {
		if s.Status != wire.SubmitAccepted {
			t.Fatalf("submit %s: %v (%s), want accepted", urls[i], s.Status, s.Reason)
		}
		ids[i] = s.JobID
	}
	return ids
}

// recorder is the console's backend: the real admin session, with the
// actions the console sent through it recorded.
type recorder struct {
	tui.Backend
	mu   sync.Mutex
	acts []admin.Action
}

// Act records the action and passes it to the admin session.
func (r *recorder) Act(ctx context.Context, a admin.Action) (admin.ActionResult, error) {
	r.mu.Lock()
	r.acts = append(r.acts, a)
	r.mu.Unlock()
	return r.Backend.Act(ctx, a)
}

// observed wraps the console for teatest: after every Update it publishes
// the plain screen, so the test can wait for what the operator would see
// without touching the model from another goroutine.
type observed struct {
	m    tea.Model
	snap *atomic.Pointer[string]
}

func (o observed) Init() tea.Cmd { return o.m.Init() }

func (o observed) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m, cmd := o.m.Update(msg)
	o.m = m
	screen := ansi.Strip(m.View().Content)
	o.snap.Store(&screen)
	return o, cmd
}

func (o observed) View() tea.View { return o.m.View() }

// console is the console under test: tui.New on a real admin session, run
// by teatest at 120x40.
type console struct {
	t    *testing.T
	tm   *teatest.TestModel
	snap *atomic.Pointer[string]
	adm  *client.Admin // the console's own admin session
	rec  *recorder
}

func openConsole(t *testing.T, s *server.Server, readOnly bool) *console {
	t.Helper()
	adm := dialAdmin(t, s, "console", readOnly)
	c := &console{t: t, snap: &atomic.Pointer[string]{}, adm: adm, rec: &recorder{Backend: adm}}
	c.snap.Store(new(string))
	m := tui.New(c.rec, tui.Options{ReadOnly: readOnly, Theme: "dark", Poll: 250 * time.Millisecond, Version: "test"})
	c.tm = teatest.NewTestModel(t, observed{m: m, snap: c.snap},
		teatest.WithInitialTermSize(120, 40),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.ASCII)))
	t.Cleanup(func() {
		if err := c.tm.Quit(); err != nil {
			t.Error(err)
		}
		c.tm.WaitFinished(t, teatest.WithFinalTimeout(wait))
	})
	c.waitScreen("the console's first window", func(s string) (bool, string) {
		return strings.Contains(s, "● live") && !strings.Contains(s, "loading…"), "not live yet"
	})
	return c
}

// screen is the last screen the console drew, without styling.
func (c *console) screen() string { return *c.snap.Load() }

// press sends key presses by name ("E", "enter", "tab").
func (c *console) press(names ...string) {
	for _, n := range names {
		switch n {
		case "enter":
			c.tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
		case "tab":
			c.tm.Send(tea.KeyPressMsg{Code: tea.KeyTab})
		default:
			c.tm.Send(tea.KeyPressMsg{Code: []rune(n)[0], Text: n})
		}
	}
}

// waitScreen polls the published screen until cond holds, failing with
// the screen after the deadline.
func (c *console) waitScreen(what string, cond func(screen string) (bool, string)) string {
	c.t.Helper()
	var s string
	eventually(c.t, what, func() (bool, string) {
		s = c.screen()
		ok, why := cond(s)
		return ok, why + "; screen:\n" + s
	})
	return s
}

// waitText waits until the screen holds every string.
func (c *console) waitText(want ...string) string {
	c.t.Helper()
	return c.waitScreen(fmt.Sprintf("%q on screen", want), func(s string) (bool, string) {
		for _, w := range want {
			if !strings.Contains(s, w) {
				return false, "lacks " + strconv.Quote(w)
			}
		}
		return true, ""
	})
}

// row finds the table row whose first column is first (empty: the row
// under the cursor): its text, and whether the cursor is on it.
func row(screen, first string) (line string, selected, ok bool) {
	for _, l := range strings.Split(screen, "\n") {
		if len(l) < 2 || !strings.ContainsRune(" >", rune(l[0])) || !strings.ContainsRune(" *", rune(l[1])) {
			continue
		}
		f := strings.Fields(l[2:])
		if first == "" && l[0] == '>' || first != "" && len(f) > 0 && f[0] == first {
			return l, l[0] == '>', true
		}
	}
	return "", false, false
}

// waitRow waits until the table shows the row whose first column is
// first, holding every string of want.
func (c *console) waitRow(first string, want ...string) string {
	c.t.Helper()
	var line string
	c.waitScreen("row "+first+" with "+strings.Join(want, ", "), func(s string) (bool, string) {
		l, _, ok := row(s, first)
		if !ok {
			return false, "no such row"
		}
		line = l
		for _, w := range want {
			if !strings.Contains(l, w) {
				return false, "the row lacks " + strconv.Quote(w)
			}
		}
		return true, ""
	})
	return line
}

// waitNoRow waits until the table no longer shows the row.
func (c *console) waitNoRow(first string) {
	c.t.Helper()
	c.waitScreen("row "+first+" gone", func(s string) (bool, string) {
		_, _, ok := row(s, first)
		return !ok, "still there"
	})
}

// selectRow moves the cursor down until it is on the row whose first
// column is first; the row must be on screen.
func (c *console) selectRow(first string) {
	c.t.Helper()
	c.waitRow(first)
	for range 50 {
		if _, sel, _ := row(c.screen(), first); sel {
			return
		}
		before, _, _ := row(c.screen(), "")
		c.press("j")
		c.waitScreen("the cursor to move down", func(s string) (bool, string) {
			now, _, _ := row(s, "")
			return now != before, "still on " + strconv.Quote(before)
		})
	}
	c.t.Fatalf("could not select row %s; screen:\n%s", first, c.screen())
}

// act runs an action key's dialog twice. First it checks what the dialog
// lists (items) and that Cancel has the focus, presses enter on it and
// calls unchanged to check that nothing happened; then it opens the dialog
// again, confirms (tab, enter) and waits for the console's report (flash).
func (c *console) act(key, confirm string, items []string, unchanged func(), flash string) {
	c.t.Helper()
	for _, confirmed := range []bool{false, true} {
		c.press(key)
		s := c.waitText(append([]string{"[ Cancel ]", "  " + confirm + "  "}, items...)...)
		if strings.Contains(s, "[ "+confirm+" ]") {
			c.t.Fatalf("%s opened its dialog with %s focused, want Cancel:\n%s", key, confirm, s)
		}
		done := "cancelled: nothing was done"
		if confirmed {
			c.press("tab")
			done = flash
		}
		c.press("enter")
		c.waitScreen("the dialog closed with "+strconv.Quote(done), func(s string) (bool, string) {
			return strings.Contains(s, done) && !strings.Contains(s, "[ Cancel ]"), "not yet"
		})
		if !confirmed && unchanged != nil {
			unchanged()
		}
	}
}

// wantActions checks the actions the console sent, all of them: a
// cancelled dialog must not have sent one.
func (c *console) wantActions(want ...admin.Action) {
	c.t.Helper()
	c.rec.mu.Lock()
	got := slices.Clone(c.rec.acts)
	c.rec.mu.Unlock()
	if !reflect.DeepEqual(got, want) {
		c.t.Errorf("the console sent %+v, want %+v", got, want)
	}
}

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
