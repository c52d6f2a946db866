package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"

	"drover/net/internal/conn"
	"drover/net/wire"
)

// running is one job the worker holds: from the JOB that carried it until
// the RESULT-OK that acknowledges its result, or until it is abandoned.
type running struct {
	ctx    jobContext       // the handler's context
	task   task             // in the slots' queue until a slot takes it
	rep    reporter         // the job's progress reporter (in its context)
	done   bool             // the handler returned
	result *wire.ResultItem // what to report, once done (&item)
	item   wire.ResultItem
	sentIn uint64 // request id of the RESULT carrying it this session; 0: not sent
	// abandoned: the server no longer wants it (WELCOME's cancel list,
	// eviction): not listed as held, its result is dropped.
	abandoned bool
}

// session is the worker's conn.Handler. Its fields are used on the loop
// goroutine only, or where the loop lets another goroutine act for it
// (conn.RunIfIdle), and by Run once the loop has stopped.
type session struct {
	opts Options
	h    Handler
	pool *slots
	// runFn, doneFn and drainFn are execute, taskDone and drainFinished,
	// bound once for every task.
	runFn   func(ctx context.Context, j Job) Result
	doneFn  func(t *task, res Result)
	drainFn func(l *conn.Link)

	// Handlers that returned, for the loop (taskDone, drainFinished).
	finMu    sync.Mutex
	fin      []finishedTask
	finSpare []finishedTask

	// jobs are keyed by run (job id and attempt): after a requeue the same
	// job may come back as a new attempt while the cancelled one winds
	// down, and the two are different runs.
	jobs     map[wire.Run]*running
	busy     int                   // handlers that have not returned
	outbox   []wire.Run            // runs whose results are to be sent
	inflight map[uint64][]wire.Run // RESULT request id -> runs it carried
	stopping bool
	enc      wire.Encoder // for checking results one by one
	// robotsReqs are the request ids of ROBOTS reports sent this session,
	// so that a server's ERROR for one is told apart; noRobots: the server
	// does not know ROBOTS (ERROR 501), no more are sent this session.
	robotsReqs map[uint64]struct{}
	noRobots   bool
}

func newSession(opts Options, h Handler) *session {
	s := &session{
		opts:     opts,
		h:        h,
		pool:     startSlots(opts.Slots),
		jobs:     make(map[wire.Run]*running),
		inflight: make(map[uint64][]wire.Run),
	}
	s.runFn, s.doneFn, s.drainFn = s.execute, s.taskDone, s.drainFinished
	return s
}

// Hello lists every run received and not yet acknowledged, unless
// abandoned.
func (s *session) Hello(req uint64) *wire.Hello {
	var held []wire.Run
	for id, r := range s.jobs {
		if !r.abandoned {
			held = append(held, id)
		}
	}
	slices.SortFunc(held, compareRuns)
	if len(held) > wire.MaxSlots {
		// More than DRV/2 can list (only a server that over-sent jobs
		// gets here): the server takes back the ones not listed, so drop
		// them here too.
		s.opts.Log.Warn("holding more jobs than HELLO can list: abandoning the rest", "held", len(held), "max", wire.MaxSlots)
		for _, id := range held[wire.MaxSlots:] {
			s.abandon(id, s.jobs[id], fmt.Errorf("%w: more held jobs than a HELLO can list", ErrCancelled))
		}
		held = held[:wire.MaxSlots]
	}
	return hello(s.opts, req, held)
}

// Up abandons what WELCOME says to and queues every unacknowledged result
// to be sent again.
func (s *session) Up(l *conn.Link, w *wire.Welcome) {
	for _, id := range w.Cancel {
		if r := s.jobs[id]; r != nil {
			s.abandon(id, r, fmt.Errorf("%w: the server no longer assigns it to this worker (after reconnecting)", ErrCancelled))
		}
	}
	s.outbox = s.outbox[:0]
	clear(s.inflight)
	clear(s.robotsReqs)
	s.noRobots = false
	for id, r := range s.jobs {
		if r.result != nil && !r.abandoned {
			r.sentIn = 0
			s.outbox = append(s.outbox, id)
		}
	}
	slices.SortFunc(s.outbox, compareRuns)
	s.opts.Log.Debug("worker session up", "held", len(s.jobs), "cancel", len(w.Cancel), "resend", len(s.outbox))
}

// abandon cancels a job the server no longer wants and forgets it once
// its handler has returned.
func (s *session) abandon(id wire.Run, r *running, cause error) {
	r.abandoned = true
	if r.done {
		delete(s.jobs, id)
		return
	}
	s.cancelJob(r, cause)
}

// cancelJob cancels a job's context; a job still waiting for a slot
// leaves the queue at once, reported as not started.
func (s *session) cancelJob(r *running, cause error) {
	r.ctx.cancel(cause)
	if s.pool.remove(&r.task) {
		r.task.finish(Internal(fmt.Errorf("not started: %w", cause)))
	}
}

// Receive handles JOB, CANCEL, RESULT-OK and ERROR.
func (s *session) Receive(l *conn.Link, m wire.Message) {
	switch m := m.(type) {
	case *wire.Job:
		for i := range m.Jobs {
			s.start(l, &m.Jobs[i])
		}
	case *wire.Cancel:
		for _, id := range m.Runs {
			if r := s.jobs[id]; r != nil && !r.done {
				s.cancelJob(r, fmt.Errorf("%w: %s", ErrCancelled, m.Reason))
			}
		}
	case *wire.ResultOK:
		delete(s.inflight, m.Req)
		for _, it := range m.Items {
			id := wire.Run{JobID: it.JobID, Attempt: it.Attempt}
			r := s.jobs[id]
			if r == nil || r.result == nil || r.sentIn == 0 {
				continue
			}
			delete(s.jobs, id)
			if it.Status != wire.ResultRecorded {
				s.opts.Log.Debug("result not recorded", "job", it.JobID, "attempt", it.Attempt, "status", it.Status)
			}
		}
	case *wire.Robots:
		if s.opts.Robots != nil {
			s.opts.Robots(*m)
		}
	case *wire.Error:
		if s.robotsRefused(m) {
			return
		}
		ids, ok := s.inflight[m.Req]
		if !ok {
			s.opts.Log.Warn("server error", "err", m)
			return
		}
		// The server refused a RESULT: those results can never be
		// delivered. Drop them and end the session so that the server
		// takes the jobs back instead of leaving them held forever.
		delete(s.inflight, m.Req)
		for _, id := range ids {
			delete(s.jobs, id)
		}
		s.opts.Log.Error("the server refused a RESULT: dropping its results and reconnecting", "jobs", len(ids), "err", m)
		l.Drop(m.Code, fmt.Errorf("RESULT refused: %w", m))
	default:
		s.opts.Log.Debug("ignored", "command", m.Command())
	}
}

// start runs one dispatched job in its own goroutine, within the slots.
func (s *session) start(l *conn.Link, it *wire.JobItem) {
	id := wire.Run{JobID: it.JobID, Attempt: it.Attempt}
	if _, dup := s.jobs[id]; dup {
		s.opts.Log.Warn("run dispatched twice: ignoring the second", "job", it.JobID, "attempt", it.Attempt)
		return
	}
	// One allocation for the job's record, its slot task and its progress
	// reporter; the task's functions are the session's, made once.
	r := &running{rep: reporter{run: id, c: l.Conn()}}
	r.ctx.rep = &r.rep
	s.jobs[id] = r
	s.busy++
	if s.stopping {
		r.ctx.cancel(ErrShutdown)
	}
	r.task = task{ctx: &r.ctx, r: r, run: s.runFn, done: s.doneFn,
		j: Job{ID: it.JobID, Attempt: int(it.Attempt), Key: it.Key, Headers: it.Headers.Map(), Payload: clonePayload(it.Payload)}}
	s.pool.push(&r.task)
}

// finishedTask is a handler's result on its way to the loop.
type finishedTask struct {
	id    wire.Run
	r     *running
	res   Result
	cause error
}

// clonePayload gives the handler a payload of its own: a JOB from a
// server in this process shares its memory with the coordinator's copy of
// the job (package pipe), and a handler may write to what it is given.
func clonePayload(p []byte) []byte {
	if p == nil {
		return nil
	}
	return append(make([]byte, 0, len(p)), p...)
}

// taskDone reports a finished (or never started) job to the loop: the
// first result of a batch has drainFinished take every result that came
// meanwhile, here at once when the loop is blocked and the session goes
// over a pipe (conn.RunIfIdle: the RESULT leaves without waking the
// loop), else posted to it (one wake-up, and no closure, per batch).
func (s *session) taskDone(t *task, res Result) {
	cause := context.Cause(t.ctx)
	t.r.ctx.cancel(nil)
	s.finMu.Lock()
	first := len(s.fin) == 0
	s.fin = append(s.fin, finishedTask{id: t.r.rep.run, r: t.r, res: res, cause: cause})
	s.finMu.Unlock()
	if first && !t.r.rep.c.RunIfIdle(s.drainFn) {
		t.r.rep.c.Post(s.drainFn)
	}
}

// drainFinished records the results taskDone queued (on the loop).
func (s *session) drainFinished(l *conn.Link) {
	s.finMu.Lock()
	got := s.fin
	s.fin, s.finSpare = s.finSpare[:0], got
	s.finMu.Unlock()
	for i := range got {
		f := &got[i]
		if f.res.Robots != nil {
			s.reportRobots(l, f.res.Robots) // before the result's RESULT
		}
		s.finished(f.id, f.r, f.res, f.cause)
		got[i] = finishedTask{}
	}
}

// execute runs the handler in a slot, turning a panic into an internal
// failure.
func (s *session) execute(ctx context.Context, j Job) (res Result) {
	defer func() {
		if p := recover(); p != nil {
			s.opts.Log.Error("handler panicked", "job", j.ID, "panic", p, "stack", string(debug.Stack()))
			res = Internal(fmt.Errorf("handler panicked: %v", p))
		}
	}()
	return s.h(ctx, j)
}

// finished records a handler's result (on the loop goroutine).
func (s *session) finished(id wire.Run, r *running, res Result, cause error) {
	r.done = true
	s.busy--
	if s.jobs[id] != r {
		return
	}
	if r.abandoned {
		delete(s.jobs, id)
		return
	}
	if errors.Is(cause, ErrShutdown) && res.outcome() != wire.OutcomeOK {
		// Abandoned for the shutdown: the DISCONNECT gives it back to the
		// server uncharged, which a failure report would not.
		delete(s.jobs, id)
		return
	}
	r.item = toItem(id, res)
	r.result = &r.item
	s.outbox = append(s.outbox, id)
}

// Flush sends the results gathered this iteration and ends a shutdown
// once nothing is left to wait for.
func (s *session) Flush(l *conn.Link) {
	if l.Up() && len(s.outbox) > 0 {
		s.sendResults(l)
	}
	if s.stopping && s.busy == 0 && (!l.Up() || !s.unacknowledged()) {
		l.Stop(nil)
	}
}

func (s *session) unacknowledged() bool {
	for _, r := range s.jobs {
		if r.result != nil {
			return true
		}
	}
	return false
}

// Down handles the end of a session: eviction abandons every job, a
// server that lets the worker go stops it, anything else keeps the jobs
// running and their results for the next session.
func (s *session) Down(l *conn.Link, err error, welcomed bool) {
	s.outbox = s.outbox[:0]
	clear(s.inflight)
	var de *conn.DisconnectError
	if !errors.As(err, &de) {
		return
	}
	switch de.Code {
	case wire.CodeEvicted:
		s.abandonAll(fmt.Errorf("%w: %s", ErrEvicted, de.Reason))
	case wire.CodeOK:
		s.abandonAll(fmt.Errorf("%w: %s", ErrDrained, de.Reason))
		l.Stop(fmt.Errorf("%w: the server ended the session: %s", ErrDrained, de.Reason))
	case wire.CodeConflict:
		s.abandonAll(fmt.Errorf("%w: %s", ErrSuperseded, de.Reason))
		l.Stop(fmt.Errorf("%w: %s", ErrSuperseded, de.Reason))
	}
}

// compareRuns orders runs by job id, then attempt.
func compareRuns(a, b wire.Run) int {
	if c := cmp.Compare(a.JobID, b.JobID); c != 0 {
		return c
	}
	return cmp.Compare(a.Attempt, b.Attempt)
}

func (s *session) abandonAll(cause error) {
	for id, r := range s.jobs {
		s.abandon(id, r, cause)
	}
}

// beginStop starts the shutdown: every running job is cancelled.
func (s *session) beginStop(l *conn.Link) {
	s.stopping = true
	for _, r := range s.jobs {
		if !r.done {
			s.cancelJob(r, ErrShutdown)
		}
	}
}

// cancelAll cancels whatever still runs once the loop has stopped.
func (s *session) cancelAll(cause error) {
	for _, r := range s.jobs {
		if !r.done {
			r.ctx.cancel(cause)
		}
	}
}
