package coord

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"drover/admin"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"
)

// TestModelRandomized drives the composed coordinator with thousands of
// random sequences of sessions joining and dying, requests, queues, dones,
// submits, results with discovered links, ticks and operator actions, and
// checks after every step that:
//   - a deferred answer answers a Wait given earlier, exactly once;
//   - no job is dispatched to a dead, draining, full or non-matching worker;
//   - submitted = queued + dispatched + backoff + done + failed;
//   - every live broker job's key is queued in the ledger.
func TestModelRandomized(t *testing.T) {
	seeds := 300
	if s := os.Getenv("DROVER_MODEL_SEEDS"); s != "" {
		seeds, _ = strconv.Atoi(s)
	}
	if testing.Short() {
		seeds = 50
	}
	for seed := range seeds {
		runModel(t, uint64(seed), 200, false)
		if t.Failed() {
			t.Fatalf("seed %d failed", seed)
		}
	}
}

// TestModelPagingAndForgetting runs the same model with done jobs forgotten
// at once (DoneRetention 1) and the youngest queued jobs paged out and back
// in now and then, the two paths that hand a queued key's lent URL back to
// the ledger; after every step each queued and requested key the ledger
// lists must read back as itself (a wrong or empty lent URL would not).
func TestModelPagingAndForgetting(t *testing.T) {
	seeds := 150
	if testing.Short() {
		seeds = 30
	}
	lent := 0
	for seed := range seeds {
		lent += runModel(t, uint64(seed), 200, true)
		if t.Failed() {
			t.Fatalf("seed %d failed", seed)
		}
	}
	if lent == 0 {
		t.Fatal("no step had a lent URL: the test does not exercise lending")
	}
}

type waitKey struct {
	s   id.Session
	req uint64
	fp  id.Fingerprint
}

type modelWorker struct {
	name    string
	headers map[string]string
	slots   int
	held    map[broker.JobID]int // job -> the attempt it runs
}

type modelRun struct {
	t        *testing.T
	rng      *rand.Rand
	c        *Coordinator
	now      time.Time
	live     map[id.Session]bool
	workers  map[id.Session]*modelWorker
	draining map[string]bool
	waits    map[waitKey]bool
	nextSess id.Session
	nextReq  uint64
	urls     []string
	external map[id.Fingerprint]bool // keys marked done from outside the broker
	jobKeys  map[broker.JobID]id.Fingerprint
	forgets  bool // done jobs are forgotten at once (DoneRetention 1)
	step     int
	trace    []string // what each step did, printed when a check fails
}

func (m *modelRun) logf(format string, args ...any) {
	m.trace = append(m.trace, fmt.Sprintf("%d: ", m.step)+fmt.Sprintf(format, args...))
}

// runModel runs one seed; with paging, done jobs are forgotten at once and
// queued jobs are paged out and in (see TestModelPagingAndForgetting). It
// returns in how many steps the ledger had a URL lent to a job.
func runModel(t *testing.T, seed uint64, steps int, paging bool) (lentSteps int) {
	rng := rand.New(rand.NewPCG(seed, 99))
	bc := broker.Config{MaxRequestFailures: 2, BackoffStart: 2 * time.Second, BackoffCap: 10 * time.Second, BackoffForgive: 30 * time.Second, Jitter: 0.1}
	if paging {
		bc.DoneRetention = 1
	}
	c, err := New(Config{
		Ledger: ledger.Config{RequestTTL: 20 * time.Second, DoneTTL: time.Minute, FailedTTL: 30 * time.Second},
		Broker: bc,
		Rand:   rand.New(rand.NewPCG(seed, 7)),
	})
	if err != nil {
		t.Fatal(err)
	}
	m := &modelRun{
		t: t, rng: rng, c: c, now: time.Unix(1_800_000_000, 0), forgets: paging,
		live: map[id.Session]bool{}, workers: map[id.Session]*modelWorker{}, draining: map[string]bool{},
		waits: map[waitKey]bool{}, external: map[id.Fingerprint]bool{}, jobKeys: map[broker.JobID]id.Fingerprint{},
	}
	for i := range 12 {
		m.urls = append(m.urls, fmt.Sprintf("http://h%d.test/p%d", i%3, i))
	}
	var paged []JobRecord
	for m.step = 0; m.step < steps && !t.Failed(); m.step++ {
		m.randomStep()
		m.checkReady()
		if !paging {
			continue
		}
		if m.rng.IntN(4) == 0 {
			for _, j := range m.c.brk.YoungestQueued(2, nil) {
				if r, ok := m.c.brk.Record(j); ok && m.c.PageOut(m.now, []broker.JobID{j}) == 1 {
					paged = append(paged, r)
				}
			}
		}
		if len(paged) > 0 {
			slices.SortFunc(paged, func(a, b JobRecord) int { return cmp.Compare(a.ID, b.ID) })
			if _, err := m.c.PageIn(m.now, paged); err != nil {
				t.Fatalf("seed %d step %d: page in: %v", seed, m.step, err)
			}
			paged = paged[:0]
		}
		if m.c.mem.(*ledger.Ledger).Lent() > 0 {
			lentSteps++
		}
		m.checkReady()
	}
	return lentSteps
}

func (m *modelRun) pickLive(workerOnly bool) (id.Session, bool) {
	var cands []id.Session
	for s := range m.live {
		if !workerOnly || m.workers[s] != nil {
			cands = append(cands, s)
		}
	}
	if len(cands) == 0 {
		return 0, false
	}
	// map order is random but not seeded: sort for reproducibility
	for i := 1; i < len(cands); i++ {
		for j := i; j > 0 && cands[j] < cands[j-1]; j-- {
			cands[j], cands[j-1] = cands[j-1], cands[j]
		}
	}
	return cands[m.rng.IntN(len(cands))], true
}

func (m *modelRun) keys(n int) []id.Key {
	ks := make([]id.Key, n)
	for i := range ks {
		ks[i] = id.Key{Crawler: "c", Processor: "p", URL: m.urls[m.rng.IntN(len(m.urls))]}
	}
	return ks
}

func (m *modelRun) fatalf(format string, args ...any) {
	m.t.Helper()
	for _, l := range m.trace[max(0, len(m.trace)-40):] {
		m.t.Log(l)
	}
	m.t.Fatalf("step %d: "+format, append([]any{m.step}, args...)...)
}

func (m *modelRun) randomStep() {
	switch r := m.rng.IntN(100); {
	case r < 10 || len(m.live) == 0: // a session joins
		m.nextSess++
		s := m.nextSess
		h := Hello{Role: RoleProducer, ID: fmt.Sprintf("p%d", s)}
		if m.rng.IntN(2) == 0 {
			w := &modelWorker{name: fmt.Sprintf("w%d", s), headers: map[string]string{}, slots: 1 + m.rng.IntN(3), held: map[broker.JobID]int{}}
			if m.rng.IntN(3) == 0 {
				w.headers["hwgroup"] = "gpu"
			}
			h = Hello{Role: RoleWorker, ID: w.name, Headers: w.headers, Slots: w.slots}
			m.workers[s] = w
		}
		if _, err := m.c.Hello(m.now, s, h); err != nil {
			m.fatalf("hello: %v", err)
		}
		m.live[s] = true
	case r < 25:
		s, _ := m.pickLive(false)
		m.nextReq++
		ks := m.keys(1 + m.rng.IntN(3))
		vs, err := m.c.Request(m.now, s, m.nextReq, ks, nil)
		m.logf("request %d by s%d: %v -> %v", m.nextReq, s, ks, vs)
		if err != nil {
			m.fatalf("request: %v", err)
		}
		for _, v := range vs {
			if v.Verdict == ledger.Wait {
				m.waits[waitKey{s, m.nextReq, v.FP}] = true
			}
		}
	case r < 32:
		s, _ := m.pickLive(false)
		if _, err := m.c.Queue(m.now, s, m.keys(1), nil); err != nil {
			m.fatalf("queue: %v", err)
		}
	case r < 35:
		s, _ := m.pickLive(false)
		ks := m.keys(1)
		m.logf("done %v by s%d", ks[0].URL, s)
		if _, err := m.c.Done(m.now, s, []DoneItem{{Key: ks[0], Failed: m.rng.IntN(4) == 0}}, nil); err != nil {
			m.fatalf("done: %v", err)
		}
		nk, _ := id.NewKey(ks[0].Crawler, ks[0].Processor, ks[0].URL)
		m.external[nk.Fingerprint()] = true
	case r < 55:
		s, _ := m.pickLive(false)
		m.nextReq++
		var js []JobSpec
		for _, k := range m.keys(1 + m.rng.IntN(4)) {
			spec := JobSpec{Key: k}
			if m.rng.IntN(4) == 0 {
				spec.Headers = map[string]string{"hwgroup": "gpu|fpga"}
			}
			js = append(js, spec)
		}
		vs, err := m.c.Submit(m.now, s, m.nextReq, js, nil)
		m.logf("submit by s%d: %v", s, vs)
		if err != nil {
			m.fatalf("submit: %v", err)
		}
		for _, v := range vs {
			switch v.Status {
			case Waiting:
				m.waits[waitKey{s, m.nextReq, v.FP}] = true
			case Accepted:
				m.jobKeys[v.Job] = v.FP
			}
		}
	case r < 75:
		s, ok := m.pickLive(true)
		if !ok {
			return
		}
		w := m.workers[s]
		if len(w.held) == 0 {
			return
		}
		j := slices.Min(slices.Collect(maps.Keys(w.held))) // the oldest: runs must replay
		attempt := w.held[j]
		delete(w.held, j)
		kinds := []broker.OutcomeKind{broker.OK, broker.OK, broker.Internal, broker.External, broker.Throttled}
		res := Result{Run: broker.Run{Job: j, Attempt: attempt}, Outcome: broker.Outcome{Kind: kinds[m.rng.IntN(len(kinds))]}}
		if res.Outcome.Kind == broker.Throttled && m.rng.IntN(2) == 0 {
			res.Outcome.RetryAfter = time.Duration(1+m.rng.IntN(5)) * time.Second
		}
		for _, k := range m.keys(m.rng.IntN(3)) {
			res.Discovered = append(res.Discovered, JobSpec{Key: k})
		}
		m.logf("result job %d from s%d: %v links %d", j, s, res.Outcome.Kind, len(res.Discovered))
		if _, err := m.c.Results(m.now, s, []Result{res}, nil); err != nil {
			m.fatalf("results: %v", err)
		}
	case r < 80: // a session dies or leaves
		s, _ := m.pickLive(false)
		if m.rng.IntN(2) == 0 {
			m.c.Disconnect(m.now, s)
		} else {
			// stop beating: only this session goes silent
			for o := range m.live {
				if o != s {
					m.c.Touch(m.now, o)
				}
			}
			m.now = m.now.Add(m.c.cfg.Heartbeat * time.Duration(m.c.cfg.Liveness+1))
			for o := range m.live {
				if o != s {
					m.c.Touch(m.now, o)
				}
			}
			m.c.Tick(m.now)
		}
	case r < 92: // time passes, everybody beats
		m.now = m.now.Add(time.Duration(m.rng.IntN(3000)) * time.Millisecond)
		for s := range m.live {
			m.c.Touch(m.now, s)
		}
		m.c.Tick(m.now)
	default: // operator
		var names []string
		for _, w := range m.workers {
			names = append(names, w.name)
		}
		slices.Sort(names)
		acts := []admin.Action{{Kind: admin.ActPause}, {Kind: admin.ActResume}, {Kind: admin.ActRequeueFailed}}
		if len(names) > 0 {
			n := names[m.rng.IntN(len(names))]
			acts = append(acts, admin.Action{Kind: admin.ActDrain, Targets: []string{n}},
				admin.Action{Kind: admin.ActUndrain, Targets: []string{n}},
				admin.Action{Kind: admin.ActEvict, Targets: []string{n}})
		}
		a := acts[m.rng.IntN(len(acts))]
		m.logf("act %v", a)
		if _, err := m.c.Act(m.now, a); err != nil {
			m.fatalf("act %v: %v", a, err)
		}
		switch a.Kind {
		case admin.ActDrain:
			m.draining[a.Targets[0]] = true
		case admin.ActUndrain:
			delete(m.draining, a.Targets[0])
		}
	}
}

// checkReady takes the step's output and checks it and the totals.
func (m *modelRun) checkReady() {
	out := m.c.Ready(m.now)
	if got, want := m.c.Settled(), m.c.Totals(m.now).Settled(); got != want {
		m.fatalf("Settled() = %v, Totals().Settled() = %v", got, want)
	}
	for _, a := range out.Answers {
		m.logf("answer %+v", a)
		k := waitKey{a.Session, a.ReqID, a.FP}
		if a.ReqID == 0 && a.Submit {
			continue // a discovered link that waited: nobody to tell
		}
		if !m.waits[k] {
			m.fatalf("answer %+v answers no outstanding wait", a)
		}
		delete(m.waits, k)
		if a.Submit && a.Verdict == ledger.OK {
			m.jobKeys[a.Job] = a.FP
		}
	}
	for _, cl := range out.Closes {
		m.logf("close %+v", cl)
		delete(m.live, cl.Session)
		delete(m.workers, cl.Session)
		for k := range m.waits {
			if k.s == cl.Session {
				delete(m.waits, k)
			}
		}
	}
	for _, j := range out.Jobs {
		m.logf("dispatch job %d %s to s%d", j.Job, j.Spec.Key.URL, j.Session)
		w := m.workers[j.Session]
		switch {
		case !m.live[j.Session] || w == nil:
			m.fatalf("job %d dispatched to dead or non-worker session %d", j.Job, j.Session)
		case m.draining[w.name]:
			m.fatalf("job %d dispatched to draining worker %s", j.Job, w.name)
		case !broker.Match(j.Spec.Headers, w.headers):
			m.fatalf("job %d (headers %v) dispatched to non-matching worker %s %v", j.Job, j.Spec.Headers, w.name, w.headers)
		}
		w.held[j.Job] = j.Attempt
		if len(w.held) > w.slots {
			m.fatalf("worker %s holds %d jobs with %d slots", w.name, len(w.held), w.slots)
		}
		m.jobKeys[j.Job] = j.Spec.FP
	}
	tt := m.c.Totals(m.now)
	if got, want := tt.Queued+tt.Dispatched+tt.Backoff+tt.Done+tt.Failed, int(m.c.submitted); got != want {
		m.fatalf("job states add up to %d, %d submitted: %+v", got, want, tt)
	}
	// Every key the ledger lists reads back as itself (a queued key's URL
	// may be lent to its job).
	for _, r := range m.c.led.Queued(0, 1<<20) {
		if r.Key.Fingerprint() != r.FP {
			m.fatalf("queued key %v reads back as %+v: not its key", r.FP, r.Key)
		}
	}
	for _, r := range m.c.led.Requested(0, 1<<20) {
		if r.Key.Fingerprint() != r.FP {
			m.fatalf("requested key %v reads back as %+v: not its key", r.FP, r.Key)
		}
	}
	// Every live broker job's key is queued in the ledger (unless someone
	// marked it done from outside, which DONE is allowed to do).
	for j, fp := range m.jobKeys {
		row, ok := m.c.brk.Job(j)
		if !ok {
			if m.forgets {
				delete(m.jobKeys, j) // done and forgotten
				continue
			}
			m.fatalf("job %d vanished from the broker", j)
		}
		if m.external[fp] {
			continue
		}
		rec, ok := m.c.led.Lookup(m.now, fp)
		switch row.State {
		case "queued", "dispatched", "backoff":
			if !ok || rec.State != ledger.Queued {
				m.fatalf("job %d is %s but its key is %v in the ledger", j, row.State, rec.State)
			}
		}
	}
}
