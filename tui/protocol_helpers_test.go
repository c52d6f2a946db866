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
		// A heartbeat long enough that a loaded machine never stalls a
		// live worker or console past heartbeat × liveness.
		Coord: coord.Config{Heartbeat: time.Second, MinHeartbeat: 10 * time.Millisecond},
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
func (p probe) hasEvent(kind admin.EventKind, jid uint64, wid, detail string) bool {
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
		Heartbeat: time.Second, StopTimeout: 2 * time.Second,
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
