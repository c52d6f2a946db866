package broker

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"drover/admin"
	"drover/coord/id"
	"drover/filter"
)

// TestModel runs thousands of random sequences of submits, worker joins,
// re-registrations, losses and departures, outcomes (and orphan results),
// ticks, operator commands and console queries, and checks after every step
// that the broker is consistent (checkInvariants: every job in exactly one
// state, counts add up to the submitted total, a worker's used slots are
// the jobs it holds, indexes agree with the jobs), that no job went to a
// dead, draining, full or non-matching worker, and that every query window
// equals a brute-force filter and sort of all jobs.
func TestModel(t *testing.T) {
	seqs, steps := 1500, 150
	if testing.Short() {
		seqs = 200
	}
	for seed := range uint64(seqs) {
		if err := runModel(seed, steps); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

var (
	modelCrawlers = []string{"c1", "c2", "C3"}
	modelHosts    = []string{"a.test", "b.test", "c.test", "www.a.test"}
	// Politeness applies to processor p only, in some runs
	// (modelPoliteness): q jobs are free of the hosts' limits.
	modelProcessors = []string{"p", "p", "p", "q"}
	modelJobHdrs    = []map[string]string{
		nil, nil, nil,
		{"hwgroup": "gpu"},
		{"hwgroup": "gpu|cpu"},
		{"threads": "4"},
		{"threads": "8", "hwgroup": "cpu"},
		{"os": "plan9"},
	}
	modelWorkerHdrs = []map[string]string{
		nil,
		{"hwgroup": "cpu", "threads": "4"},
		{"hwgroup": "gpu", "threads": "8"},
		{"hwgroup": "cpu", "threads": "16"},
	}
	modelSorts = []string{"", "age", "url", "attempts", "failures", "retry_at", "throttles", "worker", "state"}
)

// modelPoliteness is a random politeness policy: off, a default cap, a
// default interval, both, or rules for some hosts.
func modelPoliteness(r *rand.Rand) Politeness {
	switch r.IntN(5) {
	case 0:
		return Politeness{}
	case 1:
		return Politeness{Default: Limits{PerHost: 1 + r.IntN(2)}}
	case 2:
		return Politeness{Default: Limits{MinDelay: time.Duration(1+r.IntN(90)) * time.Second}}
	case 3:
		return Politeness{Default: Limits{PerHost: 1 + r.IntN(3), MinDelay: time.Duration(1+r.IntN(90)) * time.Second}}
	}
	if r.IntN(2) == 0 {
		return Politeness{Default: Limits{PerHost: 1, MinDelay: 30 * time.Second}, Processor: "p"}
	}
	return Politeness{Default: Limits{PerHost: 3}, Rules: []HostRule{
		{Pattern: "a.test", Limits: Limits{PerHost: 1, MinDelay: 20 * time.Second}},
		{Pattern: "*.a.test", Limits: Limits{}},
	}}
}

type model struct {
	r        *rand.Rand
	b        *Broker
	now      time.Time
	nextSess id.Session
	finished map[JobID]int // done reports per job
	// handBack: the broker is a coordinator's on a shared queue, which
	// hands its queued jobs back when it has no worker left (such a
	// broker is never persisted: no restore model sets it).
	handBack bool
}

func runModel(seed uint64, steps int) error {
	r := rand.New(rand.NewPCG(seed, 99))
	cfg := Config{
		MaxRequestFailures: 1 + r.IntN(4),
		BackoffStart:       30 * time.Second,
		BackoffCap:         5 * time.Minute,
		BackoffForgive:     3 * time.Minute,
		Rand:               rand.New(rand.NewPCG(seed, 7)),
		LostWorkers:        1 + r.IntN(3),
		DoneRetention:      []int{-1, 1, 5}[r.IntN(3)],
		Politeness:         modelPoliteness(r),
	}
	if r.IntN(2) == 0 {
		cfg.UnroutableTimeout = 2 * time.Minute
	}
	switch r.IntN(3) { // else the default retry delay: 1 s doubling, ±20%
	case 0:
		cfg.RetryStart = -1 // retries queued at once
	case 1:
		cfg.RetryStart, cfg.RetryCap, cfg.RetryJitter = 20*time.Second, time.Minute, -1
	}
	b, err := New(cfg)
	if err != nil {
		return err
	}
	b.fanout = 4 // deep trees even with few jobs
	m := &model{r: r, b: b, now: epoch, nextSess: 1, finished: map[JobID]int{}, handBack: seed%2 == 1}
	for step := range steps {
		what, err := m.step()
		if err == nil {
			err = checkInvariants(b)
		}
		if err == nil {
			err = m.checkFinished()
		}
		if err == nil && step%7 == 0 {
			err = m.checkQuery()
		}
		if err != nil {
			return fmt.Errorf("step %d (%s): %w", step, what, err)
		}
	}
	return nil
}

func (m *model) liveWorkers() []*worker {
	ws := make([]*worker, 0, len(m.b.sessions))
	for _, w := range m.b.wsorted {
		if !w.lost {
			ws = append(ws, w)
		}
	}
	return ws
}

func (m *model) randJob() JobID {
	if m.b.jobs.n == 0 {
		return JobID(1 + m.r.IntN(3))
	}
	return JobID(1 + m.r.IntN(m.b.jobs.n+1)) // sometimes one past the end
}

func (m *model) step() (string, error) {
	b, r := m.b, m.r
	switch op := r.IntN(100); {
	case op < 22:
		u := fmt.Sprintf("http://%s/%d", modelHosts[r.IntN(len(modelHosts))], r.IntN(1000))
		key := id.Key{Crawler: modelCrawlers[r.IntN(len(modelCrawlers))], Processor: modelProcessors[r.IntN(len(modelProcessors))], URL: u}
		b.Submit(m.now, Spec{Key: key, FP: key.Fingerprint(), Host: hostOf(u), Headers: modelJobHdrs[r.IntN(len(modelJobHdrs))]})
		return "submit", nil
	case op < 30:
		wid := fmt.Sprintf("w%d", r.IntN(6))
		s := m.nextSess
		if w := b.workers[wid]; w != nil && !w.lost && r.IntN(3) == 0 {
			s = w.session // re-register on the same session
		} else {
			m.nextSess++
		}
		var held []Run
		for range r.IntN(3) {
			jid := m.randJob()
			run := Run{Job: jid, Attempt: r.IntN(3)}
			if j := b.jobs.get(jid); j != nil && r.IntN(2) == 0 {
				run.Attempt = int(b.jobAttempts(j))
			}
			held = append(held, run)
		}
		info := WorkerInfo{ID: wid, Headers: modelWorkerHdrs[r.IntN(len(modelWorkerHdrs))], Slots: r.IntN(4)}
		err := b.Register(m.now, s, info, held)
		if err != nil && !strings.Contains(err.Error(), "already worker") {
			return "register", err
		}
		return "register " + wid, nil
	case op < 34:
		if ws := m.liveWorkers(); len(ws) > 0 {
			w := ws[r.IntN(len(ws))]
			b.Lost(m.now, w.session)
			return "lost " + w.id, nil
		}
	case op < 36:
		if ws := m.liveWorkers(); len(ws) > 0 {
			w := ws[r.IntN(len(ws))]
			b.Left(m.now, w.session)
			if b.workers[w.id] == w {
				return "left", fmt.Errorf("worker %q still registered after leaving", w.id)
			}
			return "left " + w.id, nil
		}
	case op < 56:
		return "dispatch", m.dispatch()
	case op < 76:
		return m.result()
	case op < 84:
		m.now = m.now.Add(time.Duration(r.IntN(180)) * time.Second)
		b.Tick(m.now)
		if d, ok := b.NextDeadline(); ok && !d.After(m.now) {
			return "tick", fmt.Errorf("next deadline %v is not after now %v right after Tick", d, m.now)
		}
		taker := false
		for _, w := range b.sessions {
			taker = taker || w.takesJobs() && w.heldUntil == 0
		}
		if b.HasTaker() != taker {
			return "tick", fmt.Errorf("HasTaker says %v, the sessions %v", b.HasTaker(), taker)
		}
		if m.handBack && !taker && r.IntN(3) == 0 {
			// As a coordinator on a shared queue with no worker left.
			want := b.count[Queued]
			for _, bg := range b.budgets {
				if bg.paused || bg.cancelled {
					want -= bg.count[Queued]
				}
			}
			left := b.count[Queued] - want // a paused crawl's
			if got := b.HandBack(m.now, "no worker", nil); len(got) != want || b.count[Queued] != left {
				return "hand-back", fmt.Errorf("handed back %d jobs of %d queued, %d left queued, want %d", len(got), want, b.count[Queued], left)
			}
			return "tick, hand-back", nil
		}
		if m.handBack && taker && r.IntN(3) == 0 {
			// As a coordinator on a shared queue with workers that lack
			// the headers some jobs need.
			want := b.unrt
			got := b.HandBackUnroutable(m.now, "no headers", nil)
			for _, c := range b.classAll {
				for j := c.queue.head; c.capable == 0 && j != nil; j = c.queue.next(&b.jobs, j) {
					if bg := b.budgets[b.crawler(j)]; bg == nil || !bg.paused && !bg.cancelled {
						return "hand-back unroutable", fmt.Errorf("job %d left unroutable after the hand-back", j.id)
					}
				}
			}
			if len(got) != want-b.unrt {
				return "hand-back unroutable", fmt.Errorf("handed back %d jobs, the unroutable count went from %d to %d", len(got), want, b.unrt)
			}
			return "tick, hand-back unroutable", nil
		}
		return "tick", nil
	case op < 87:
		if ws := m.liveWorkers(); len(ws) > 0 {
			w := ws[r.IntN(len(ws))]
			held := len(w.held)
			n, err := b.Evict(m.now, w.id)
			if err != nil || n != held {
				return "evict", fmt.Errorf("evict %q: %d jobs back, held %d, err %v", w.id, n, held, err)
			}
			return "evict " + w.id, nil
		}
	case op < 91:
		wid := fmt.Sprintf("w%d", r.IntN(6))
		if r.IntN(2) == 0 {
			return "drain " + wid, ignoreKnown(b.Drain(m.now, wid))
		}
		return "undrain " + wid, ignoreKnown(b.Undrain(m.now, wid))
	case op < 95:
		j := m.randJob()
		return fmt.Sprintf("requeue %d", j), ignoreKnown(b.Requeue(m.now, j))
	case op < 96:
		want := b.count[Failed]
		if got := b.RequeueFailed(m.now); got != want || b.count[Failed] != 0 {
			return "requeue-failed", fmt.Errorf("requeued %d of %d failed, %d left", got, want, b.count[Failed])
		}
		return "requeue-failed", nil
	case op < 97:
		h := modelHosts[r.IntN(len(modelHosts))]
		d := time.Duration(r.IntN(4)*15) * time.Second
		b.SetCrawlDelay(m.now, h, d)
		if got := b.HostLimits(h).MinDelay; got < min(d, DefaultMaxCrawlDelay) {
			return "crawl-delay", fmt.Errorf("host %s interval %v after a Crawl-delay of %v", h, got, d)
		}
		return "crawl-delay " + h, nil
	case op < 98:
		if b.Paused() {
			b.Resume(m.now)
			return "resume", nil
		}
		b.Pause(m.now)
		return "pause", nil
	default:
		return "query", m.checkQuery()
	}
	return "noop", nil
}

func ignoreKnown(err error) error {
	if err == nil || IsUnknown(err) || IsWrongState(err) {
		return nil
	}
	return err
}

// dispatch checks every assignment against the workers as they were before.
func (m *model) dispatch() error {
	b := m.b
	type before struct {
		free     int
		draining bool
	}
	snap := map[id.Session]before{}
	for s, w := range b.sessions {
		snap[s] = before{w.free(), w.draining}
	}
	queued := map[JobID]bool{}
	for i := 1; i <= b.jobs.n; i++ {
		if j := b.jobs.get(JobID(i)); j != nil && j.state == Queued {
			queued[JobID(i)] = true
		}
	}
	want, err := m.expectDispatch()
	if err != nil {
		return err
	}
	as := b.Dispatch(m.now, nil)
	var got []string
	for _, a := range as {
		got = append(got, fmt.Sprintf("%d->%s", a.Job, a.Worker))
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("dispatch %v, want (LRU workers, FIFO jobs) %v", got, want)
	}
	if b.paused && len(as) > 0 {
		return fmt.Errorf("dispatched %d jobs while paused", len(as))
	}
	for _, a := range as {
		w := b.sessions[a.Session]
		s, ok := snap[a.Session]
		switch {
		case w == nil || !ok:
			return fmt.Errorf("job %d dispatched to dead session %d", a.Job, a.Session)
		case s.draining:
			return fmt.Errorf("job %d dispatched to draining worker %q", a.Job, w.id)
		case s.free <= 0:
			return fmt.Errorf("job %d dispatched to full worker %q", a.Job, w.id)
		case !Match(a.Spec.Headers, w.headers):
			return fmt.Errorf("job %d (%v) dispatched to non-matching worker %q (%v)", a.Job, a.Spec.Headers, w.id, w.headers)
		case !queued[a.Job]:
			return fmt.Errorf("job %d dispatched but was not queued", a.Job)
		case a.Worker != w.id:
			return fmt.Errorf("assignment names worker %q, session is %q", a.Worker, w.id)
		}
		snap[a.Session] = before{s.free - 1, s.draining}
		delete(queued, a.Job)
	}
	// Nothing left that a worker with a free slot could have taken.
	if !b.paused {
		for _, w := range b.sessions {
			if !w.takesJobs() || w.free() <= 0 || w.heldUntil > 0 {
				continue
			}
			for jid := range queued {
				if j := b.jobs.get(jid); Match(b.classOf(j).headers, w.headers) && (j.has(jobFree) || b.hostOf(j).eligible(ns(m.now))) {
					return fmt.Errorf("job %d left queued while worker %q with a free slot matches", jid, w.id)
				}
			}
		}
	}
	return nil
}

// expectDispatch is the reference dispatch: walk the ready workers in LRU
// order; the first one with a job it may take gets the head job of the
// front lane (host × header class) among its classes' rings whose head is
// oldest; the lane goes to the back of its ring, the worker to the back of
// the order (or out, when full), and a host past its cap or in its
// interval leaves the rings; repeat until nobody can take. The lanes and
// which of them are in a ring are derived here from the jobs and the
// hosts' limits; only the rings' order comes from the broker, and must
// hold exactly the lanes derived. A worker passes over a job whose last
// attempt failed on it (internal or lost, charged) while another ready
// worker matches the job, looking at most avoidScan jobs behind the head
// of the front lane, and takes the oldest of its classes' candidates.
func (m *model) expectDispatch() ([]string, error) {
	b := m.b
	if b.paused {
		return nil, nil
	}
	t := ns(m.now)
	var order []*worker
	free := map[*worker]int{}
	for w := b.ready.head; w != nil; w = w.link.next {
		order = append(order, w)
		free[w] = w.free()
	}
	type laneKey struct {
		h    *host
		c    *class
		free bool
	}
	lanes := map[laneKey][]*job{}
	inflight := map[*host]int{}
	for i := 1; i <= b.jobs.n; i++ {
		j := b.jobs.get(JobID(i))
		switch {
		case j == nil:
		case j.state == Queued:
			k := laneKey{b.hostOf(j), b.classOf(j), j.has(jobFree)}
			lanes[k] = append(lanes[k], j)
		case j.state == Dispatched && !j.has(jobFree):
			inflight[b.hostOf(j)]++
		}
	}
	for _, js := range lanes {
		slices.SortFunc(js, func(x, y *job) int { return cmp.Compare(x.seq, y.seq) })
	}
	next := map[*host]int64{}
	eligible := func(h *host) bool {
		return (h.cap == 0 || inflight[h] < int(h.cap)) && max(h.next, next[h]) <= t
	}
	rings := map[*class][]laneKey{}
	for _, c := range b.classAll {
		for l := c.ring.head; l != nil; l = l.link.next {
			rings[c] = append(rings[c], laneKey{l.host, c, l.free})
		}
		for k, js := range lanes {
			want := k.c == c && len(js) > 0 && (k.free || eligible(k.h))
			if got := slices.Contains(rings[c], k); got != want {
				return nil, fmt.Errorf("lane %q/%q in ring %v, want %v (jobs %d, in flight %d of %d, next in %v)",
					k.h.name, c.key, got, want, len(js), inflight[k.h], k.h.cap, time.Duration(k.h.next-t))
			}
		}
	}
	var out []string
	for progress := true; progress; {
		progress = false
		for i, w := range order {
			var best *laneKey
			pos := 0 // the candidate's index in its lane
			for _, c := range b.classAll {
				r := rings[c]
				if len(r) == 0 || !Match(c.headers, w.headers) {
					continue
				}
				js := lanes[r[0]]
				other := slices.ContainsFunc(order, func(o *worker) bool { return o != w && Match(c.headers, o.headers) })
				k := 0
				if other {
					k = slices.IndexFunc(js, func(j *job) bool { return !failedOn(b, j, w.id) })
					if k > avoidScan {
						k = -1
					}
				}
				if k >= 0 && (best == nil || js[k].seq < lanes[*best][pos].seq) {
					best, pos = &r[0], k
				}
			}
			if best == nil {
				continue
			}
			k := *best
			j := lanes[k][pos]
			lanes[k] = slices.Delete(slices.Clone(lanes[k]), pos, pos+1)
			r := rings[k.c][1:]
			if len(lanes[k]) > 0 {
				r = append(r, k)
			}
			rings[k.c] = r
			if !k.free {
				inflight[k.h]++
				if g := k.h.gap; g > 0 {
					next[k.h] = t + g
				}
				if !eligible(k.h) {
					for c, r := range rings {
						rings[c] = slices.DeleteFunc(r, func(x laneKey) bool { return x.h == k.h && !x.free })
					}
				}
			}
			out = append(out, fmt.Sprintf("%d->%s", j.id, w.id))
			order = slices.Delete(order, i, i+1)
			if free[w]--; free[w] > 0 {
				order = append(order, w)
			}
			progress = true
			break
		}
	}
	return out, nil
}

// checkRetry checks the retry delay of a job that just had outcome kind:
// an internal failure that left budget waits RetryStart doubling per
// failure (capped, spread by the jitter), or is queued at once when
// RetryStart is negative (or waits for its host's back-off).
func (m *model) checkRetry(j *job, kind OutcomeKind) error {
	cfg := m.b.cfg
	if kind != Internal || j.state == Failed {
		if m.b.retrying(j) {
			return fmt.Errorf("job %d waits a retry delay after outcome %v", j.id, kind)
		}
		return nil
	}
	if cfg.RetryStart < 0 {
		if m.b.retrying(j) || (j.state != Queued && j.state != Backoff) {
			return fmt.Errorf("job %d is %s (retrying %v), want queued at once", j.id, j.state, m.b.retrying(j))
		}
		return nil
	}
	base := min(cfg.RetryStart<<(m.b.jobFailures(j)-1), cfg.RetryCap)
	lo := time.Duration(float64(base) * (1 - cfg.RetryJitter))
	hi := min(time.Duration(float64(base)*(1+cfg.RetryJitter)), cfg.RetryCap)
	d := m.b.retryTime(j).Sub(m.now)
	if !m.b.retrying(j) || j.state != Backoff || d < lo || d > hi {
		return fmt.Errorf("job %d after internal failure %d: %s (retrying %v) in %v, want its retry delay in [%v, %v]", j.id, m.b.jobFailures(j), j.state, m.b.retrying(j), d, lo, hi)
	}
	return nil
}

// failedOn reports whether job j's last attempt was a failure charged to
// it on worker wid: the worker it prefers not to run on again.
func failedOn(b *Broker, j *job, wid string) bool {
	h := b.hist(j)
	if b.jobFailures(j) == 0 || len(h) == 0 {
		return false
	}
	a := h[len(h)-1]
	return a.worker == wid && (a.outcome == "internal" || a.outcome == "lost")
}

// result reports a random outcome for a held job, or an orphan result.
func (m *model) result() (string, error) {
	b, r := m.b, m.r
	kind := OutcomeKind(r.IntN(4))
	o := Outcome{Kind: kind, Error: "e"}
	if kind == Throttled && r.IntN(2) == 0 {
		o.RetryAfter = time.Duration(r.IntN(600)) * time.Second
	}
	var held []*job
	for i := 1; i <= b.jobs.n; i++ {
		if j := b.jobs.get(JobID(i)); j != nil && j.state == Dispatched {
			held = append(held, j)
		}
	}
	if len(held) > 0 && r.IntN(5) > 0 {
		j := held[r.IntN(len(held))]
		before := b.count[Done] + b.count[Failed]
		if err := result(b, m.now, b.workerOf(j).session, j.jobID(), o); err != nil {
			return "result", err
		}
		after := b.count[Done] + b.count[Failed]
		if kind == OK || kind == External {
			if after != before+1 {
				return "result", fmt.Errorf("%v outcome did not finish job %d", kind, j.id)
			}
		}
		if kind == Throttled && j.state != Backoff {
			return "result", fmt.Errorf("throttled job %d is %s, want backoff", j.id, j.state)
		}
		if err := m.checkRetry(j, kind); err != nil {
			return "result", err
		}
		return fmt.Sprintf("result %d %v", j.id, kind), nil
	}
	// A stale or unknown result: a random session, job and attempt that
	// is not a run the session holds.
	s := id.Session(1 + r.IntN(int(m.nextSess)))
	jid := m.randJob()
	run := Run{Job: jid, Attempt: r.IntN(4)}
	if j := b.jobs.get(jid); j != nil && r.IntN(2) == 0 {
		run.Attempt = int(b.jobAttempts(j))
	}
	if b.Holds(s, run) {
		return "noop", nil
	}
	stale := b.orphans
	before := b.count
	st, err := b.Result(m.now, s, run, o)
	switch {
	case err != nil:
		return "stale", err
	case st == Again && b.orphans == stale && b.count == before:
		return "again", nil
	case (st == Stale || st == Unknown) && b.orphans == stale+1 && b.count == before:
		return "stale", nil
	}
	return "stale", fmt.Errorf("result for job %d attempt %d from session %d: status %v, stale %d -> %d, counts %v -> %v", jid, run.Attempt, s, st, stale, b.orphans, before, b.count)
}

// checkFinished checks that every terminal outcome names a job in that
// state, and that no job is reported done twice.
func (m *model) checkFinished() error {
	for _, f := range m.b.TakeFinished(nil) {
		j := m.b.jobs.get(f.Job)
		if j == nil {
			if f.Failed || m.b.cfg.DoneRetention < 0 {
				return fmt.Errorf("finished job %d (failed=%v) was forgotten", f.Job, f.Failed)
			}
			m.finished[f.Job]++
			continue
		}
		want := Done
		if f.Failed {
			want = Failed
		}
		if j.state != want {
			return fmt.Errorf("finished job %d (failed=%v) is %s", f.Job, f.Failed, j.state)
		}
		if !f.Failed {
			m.finished[f.Job]++
			if m.finished[f.Job] > 1 {
				return fmt.Errorf("job %d reported done twice", f.Job)
			}
		}
	}
	m.b.TakeEvents(nil)
	m.b.TakeClosed(nil)
	return nil
}

// checkQuery compares a random window with a brute-force answer.
func (m *model) checkQuery() error {
	b, r := m.b, m.r
	q := admin.Query{Sort: modelSorts[r.IntN(len(modelSorts))], Desc: r.IntN(2) == 0, Offset: r.IntN(3) * r.IntN(15), Limit: 1 + r.IntN(10)}
	var terms []string
	if r.IntN(2) == 0 {
		sts := []string{"queued", "dispatched", "backoff", "done", "failed"}
		terms = append(terms, "state="+sts[r.IntN(5)])
		if r.IntN(3) == 0 {
			terms[0] += "," + sts[r.IntN(5)]
		}
	}
	switch r.IntN(7) {
	case 0:
		terms = append(terms, "host="+modelHosts[r.IntN(len(modelHosts))])
	case 3:
		terms = append(terms, "crawler="+modelCrawlers[r.IntN(len(modelCrawlers))])
	case 4:
		terms = append(terms, "processor=p", "crawler=c1,c2")
	case 1:
		terms = append(terms, fmt.Sprintf("worker=w%d", r.IntN(6)))
	case 2:
		// Often the same text or a narrower one, as an operator types.
		texts := []string{"/1", "/12", "/2", "a.test/1", "test", "/1 a.test"}
		terms = append(terms, texts[r.IntN(len(texts))])
	case 5:
		// Why a job waits changes under a cached filter's feet.
		waits := []string{"unroutable", "paused", "polite", "retry", "host-backoff", "reclaim", "paged", "polite,retry,unroutable"}
		terms = append(terms, "wait="+waits[r.IntN(len(waits))])
		if r.IntN(2) == 0 {
			terms = append(terms, "/1")
		}
	}
	q.Filter = strings.Join(terms, " ")
	retries := r.IntN(4) == 0
	var p admin.Page
	base := allStates
	def := "age"
	if retries {
		p = b.Retries(q)
		base = 1<<Backoff | 1<<Failed
		def = "retry_at"
	} else {
		p = b.Jobs(q)
	}
	// The oracle is the filter package's matcher on each job's row, as a
	// console or client would apply it.
	f, err := filter.Parse(q.Filter)
	if err != nil {
		return err
	}
	var want []*job
	for i := 1; i <= b.jobs.n; i++ {
		j := b.jobs.get(JobID(i))
		if j == nil || !base.has(j.state) {
			continue
		}
		if row := b.jobRow(j); f.Job(&row) {
			want = append(want, j)
		}
	}
	sortName := q.Sort
	if sortName == "" {
		sortName = def
	}
	slices.SortFunc(want, func(x, y *job) int {
		var c int
		switch sortName {
		case "url":
			c = strings.Compare(b.url(x), b.url(y))
		case "attempts":
			c = cmp.Compare(b.jobAttempts(x), b.jobAttempts(y))
		case "failures":
			c = cmp.Compare(b.jobFailures(x), b.jobFailures(y))
		case "retry_at":
			c = cmp.Compare(b.retryAt(x), b.retryAt(y))
		case "throttles":
			c = cmp.Compare(b.jobThrottles(x), b.jobThrottles(y))
		case "worker": // by worker id; jobs no worker runs after all others
			wx, wy := "\xff", "\xff"
			if w := b.workerOf(x); w != nil {
				wx = w.id
			}
			if w := b.workerOf(y); w != nil {
				wy = w.id
			}
			c = strings.Compare(wx, wy)
		case "state":
			c = cmp.Compare(x.state, y.state)
		}
		c = cmp.Or(c, cmp.Compare(x.id, y.id))
		if q.Desc {
			c = -c
		}
		return c
	})
	if p.Total != len(want) {
		return fmt.Errorf("query %+v: total %d, want %d", q, p.Total, len(want))
	}
	var got, exp []uint64
	for _, row := range p.Jobs {
		got = append(got, row.JobID)
	}
	for i := q.Offset; i < min(q.Offset+q.Limit, len(want)); i++ {
		exp = append(exp, uint64(want[i].id))
	}
	if !slices.Equal(got, exp) {
		return fmt.Errorf("query %+v: rows %v, want %v", q, got, exp)
	}
	return nil
}
