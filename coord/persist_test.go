package coord

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"drover/admin"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"
)

// memStore applies Output.Writes the way the durable store does: the last
// record of each key, job and meta name wins, a key Delete removes it.
type memStore struct {
	keys map[id.Fingerprint]ledger.Write
	jobs map[broker.JobID]JobRecord
	meta map[string]uint64
}

func newMemStore() *memStore {
	return &memStore{keys: map[id.Fingerprint]ledger.Write{}, jobs: map[broker.JobID]JobRecord{}, meta: map[string]uint64{}}
}

func (s *memStore) apply(t testing.TB, ws []Record) {
	t.Helper()
	for _, w := range ws {
		switch w.Kind {
		case RecordKey:
			if w.Key.Op == ledger.Delete {
				delete(s.keys, w.Key.FP)
			} else {
				s.keys[w.Key.FP] = w.Key
			}
		case RecordJob:
			if w.Job.ID == 0 || w.Job.State == 0 {
				t.Fatalf("job record without id or state: %+v", w.Job)
			}
			s.jobs[w.Job.ID] = w.Job
		case RecordMeta:
			s.meta[w.Meta.Name] = w.Meta.Value
		default:
			t.Fatalf("write of kind %v", w.Kind)
		}
	}
}

// records returns what the store would recover: meta by name, keys by
// fingerprint, jobs by id.
func (s *memStore) records() []Record {
	var out []Record
	for _, n := range slices.Sorted(maps.Keys(s.meta)) {
		out = append(out, Record{Kind: RecordMeta, Meta: MetaRecord{Name: n, Value: s.meta[n]}})
	}
	fps := slices.SortedFunc(maps.Keys(s.keys), func(a, b id.Fingerprint) int { return bytes.Compare(a[:], b[:]) })
	for _, fp := range fps {
		out = append(out, Record{Kind: RecordKey, Key: s.keys[fp]})
	}
	for _, j := range slices.Sorted(maps.Keys(s.jobs)) {
		out = append(out, Record{Kind: RecordJob, Job: s.jobs[j]})
	}
	return out
}

func modelConfig(seed uint64) Config {
	return Config{
		Ledger:  ledger.Config{RequestTTL: 20 * time.Second, DoneTTL: time.Minute, FailedTTL: 30 * time.Second},
		Broker:  broker.Config{MaxRequestFailures: 2, BackoffStart: 2 * time.Second, BackoffCap: 10 * time.Second, BackoffForgive: 30 * time.Second, Jitter: 0.1},
		Rand:    rand.New(rand.NewPCG(seed, 7)),
		Persist: true,
	}
}

// restoreFrom builds a fresh coordinator with cfg from the store's records.
func restoreFrom(t testing.TB, cfg Config, s *memStore, now time.Time) (*Coordinator, RestoreStats) {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Restore(now, s.records())
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	return c, st
}

// sameState compares what survives a restart: the totals (less what
// belongs to sessions: requested keys, waiters, workers, and the
// unroutable count, which depends on who is connected), every job row
// with its history (less the unroutable reason of queued jobs) and the
// ledger's answer for every key.
func sameState(a, b *Coordinator, now time.Time, fps []id.Fingerprint) error {
	ta, tb := a.Totals(now), b.Totals(now)
	for _, t := range []*admin.Totals{&ta, &tb} {
		t.KeysRequested, t.Waiters, t.Unroutable = 0, 0, 0
		t.WorkersIdle, t.WorkersBusy, t.WorkersDraining, t.WorkersLost = 0, 0, 0, 0
	}
	if ta != tb {
		return fmt.Errorf("totals differ:\n  was      %+v\n  restored %+v", ta, tb)
	}
	if a.brk.Submitted() != b.brk.Submitted() {
		return fmt.Errorf("last job id %d, restored %d", a.brk.Submitted(), b.brk.Submitted())
	}
	for j := 1; j <= a.brk.Submitted(); j++ {
		ra, oka := a.brk.Job(broker.JobID(j))
		rb, okb := b.brk.Job(broker.JobID(j))
		if oka != okb {
			return fmt.Errorf("job %d: record %v, restored %v", j, oka, okb)
		}
		if ra.State == "queued" {
			ra.Reason, rb.Reason = "", ""
			ra.Wait, rb.Wait = "", ""
		}
		if ra.State == "dispatched" && ra.Reason == "" {
			// A job running at the crash waits for its worker to reclaim it.
			if want := "awaiting reclaim by " + ra.Worker; rb.Reason != want || rb.Wait != admin.WaitReclaim {
				return fmt.Errorf("job %d: reason %q (wait %q) after restore, want %q (wait reclaim)", j, rb.Reason, rb.Wait, want)
			}
			rb.Reason, rb.Wait = "", ""
		}
		if sa, sb := fmt.Sprintf("%+v", ra), fmt.Sprintf("%+v", rb); sa != sb {
			return fmt.Errorf("job %d differs:\n  was      %s\n  restored %s", j, sa, sb)
		}
	}
	for _, fp := range fps {
		ra, oka := a.led.Lookup(now, fp)
		rb, okb := b.led.Lookup(now, fp)
		if oka && ra.State == ledger.Requested {
			oka, ra = false, ledger.Record{} // bound to a session: not persisted
		}
		if oka != okb || ra != rb {
			return fmt.Errorf("key %s: ledger has %v %+v, restored %v %+v", fp, oka, ra, okb, rb)
		}
	}
	return nil
}

func (m *modelRun) fps() []id.Fingerprint {
	var out []id.Fingerprint
	for _, u := range m.urls {
		nk, _ := id.NewKey("c", "p", u)
		out = append(out, nk.Fingerprint())
	}
	return out
}

// TestPersistReplayModel drives the model of model_test.go with Persist on
// and, at random points, builds a fresh coordinator from every write so
// far (applied as the store applies them): totals, every job row and the
// ledger's answer for every key must be those of the running coordinator.
func TestPersistReplayModel(t *testing.T) {
	seeds := 120
	if s := os.Getenv("DROVER_MODEL_SEEDS"); s != "" {
		seeds, _ = strconv.Atoi(s)
	}
	if testing.Short() {
		seeds = 40
	}
	for seed := range seeds {
		m := newPersistModel(t, uint64(seed))
		st := newMemStore()
		for m.step = 0; m.step < 200 && !t.Failed(); m.step++ {
			m.randomStep()
			m.checkReady()
			st.apply(t, m.c.out.Writes)
			if m.rng.IntN(12) != 0 {
				continue
			}
			r, _ := restoreFrom(t, modelConfig(uint64(seed)), st, m.now)
			if err := sameState(m.c, r, m.now, m.fps()); err != nil {
				m.fatalf("seed %d: replay differs: %v", seed, err)
			}
		}
		if t.Failed() {
			t.Fatalf("seed %d failed", seed)
		}
	}
}

func newPersistModel(t *testing.T, seed uint64) *modelRun {
	c, err := New(modelConfig(seed))
	if err != nil {
		t.Fatal(err)
	}
	m := &modelRun{
		t: t, rng: rand.New(rand.NewPCG(seed, 99)), c: c, now: time.Unix(1_800_000_000, 0),
		live: map[id.Session]bool{}, workers: map[id.Session]*modelWorker{}, draining: map[string]bool{},
		waits: map[waitKey]bool{}, external: map[id.Fingerprint]bool{}, jobKeys: map[broker.JobID]id.Fingerprint{},
	}
	for i := range 12 {
		m.urls = append(m.urls, fmt.Sprintf("http://h%d.test/p%d", i%3, i))
	}
	return m
}

// TestPersistRestartModel runs the model through several coordinator
// restarts: at random points the coordinator is replaced by one restored
// from the writes, every session reconnects (workers listing the jobs they
// hold), and the model goes on with all its checks. A reconnecting worker
// must be told to drop only jobs the old coordinator no longer gave it.
func TestPersistRestartModel(t *testing.T) {
	seeds := 100
	if testing.Short() {
		seeds = 30
	}
	for seed := range seeds {
		m := newPersistModel(t, uint64(seed))
		st := newMemStore()
		restarts := 0
		for m.step = 0; m.step < 300 && !t.Failed(); m.step++ {
			m.randomStep()
			m.checkReady()
			st.apply(t, m.c.out.Writes)
			if m.rng.IntN(25) == 0 {
				m.restart(st, uint64(seed))
				restarts++
				st.apply(t, m.c.out.Writes)
			}
		}
		if t.Failed() {
			t.Fatalf("seed %d failed after %d restarts", seed, restarts)
		}
	}
}

// restart replaces the model's coordinator by one restored from st and
// reconnects every live session with the same session number.
func (m *modelRun) restart(st *memStore, seed uint64) {
	m.t.Helper()
	old := m.c
	c, _ := restoreFrom(m.t, modelConfig(seed+1000), st, m.now)
	if err := sameState(old, c, m.now, m.fps()); err != nil {
		m.fatalf("restart: %v", err)
	}
	m.logf("restart")
	m.c = c
	clear(m.waits)    // requested keys and waiters died with the coordinator
	clear(m.draining) // so did the draining flags
	for _, s := range slices.Sorted(maps.Keys(m.live)) {
		h := Hello{Role: RoleProducer, ID: fmt.Sprintf("p%d", s)}
		w := m.workers[s]
		if w != nil {
			h = Hello{Role: RoleWorker, ID: w.name, Headers: w.headers, Slots: w.slots}
			for _, j := range slices.Sorted(maps.Keys(w.held)) {
				h.Held = append(h.Held, broker.Run{Job: j, Attempt: w.held[j]})
			}
		}
		wel, err := c.Hello(m.now, s, h)
		if err != nil {
			m.fatalf("hello after restart: %v", err)
		}
		for _, r := range wel.Cancel {
			if row, ok := old.brk.Job(r.Job); ok && row.State == "dispatched" && row.Worker == w.name && row.Attempts == r.Attempt {
				m.fatalf("worker %s told to drop job %d attempt %d, which it held", w.name, r.Job, r.Attempt)
			}
			delete(w.held, r.Job)
		}
	}
	// Every reconnecting worker reclaimed its jobs: nothing waits.
	for j := 1; j <= c.brk.Submitted(); j++ {
		if why, ok := c.Reclaiming(broker.JobID(j)); ok {
			m.fatalf("job %d still %s after every worker reconnected", j, why)
		}
	}
	m.checkReady()
}

// crashed runs a step script on a persisting coordinator and returns the
// store its writes built.
func crashed(t *testing.T, cfg Config, script func(t *testing.T, c *Coordinator) time.Time) (*memStore, *Coordinator, time.Time) {
	t.Helper()
	c := newCoord(t, cfg)
	now := script(t, c)
	st := newMemStore()
	st.apply(t, c.Ready(now).Writes)
	return st, c, now
}

func persistCfg() Config {
	return Config{Persist: true, Heartbeat: time.Second, Liveness: 3,
		Broker: broker.Config{Jitter: -1, RetryJitter: -1, MaxRequestFailures: 3, BackoffStart: time.Minute}}
}

// twoHeld: worker w1 (slots 2) holds jobs 1 and 2, job 3 is queued.
func twoHeld(t *testing.T, c *Coordinator) time.Time {
	must(t)(c.Hello(t0, 1, Hello{Role: RoleProducer, ID: "p"}))
	must(t)(c.Submit(t0, 1, 1, specs("http://a.test/1", "http://a.test/2", "http://a.test/3"), nil))
	must(t)(c.Hello(t0, 2, Hello{Role: RoleWorker, ID: "w1", Slots: 2}))
	return t0
}

// must fails the test when a call returns an error: must(t)(call()).
func must(t testing.TB) func(any, error) {
	return func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

func jobState(t *testing.T, c *Coordinator, j broker.JobID) admin.JobRow {
	t.Helper()
	row, ok := c.brk.Job(j)
	if !ok {
		t.Fatalf("no job %d", j)
	}
	return row
}

func TestReclaimByHello(t *testing.T) {
	st, _, now := crashed(t, persistCfg(), twoHeld)
	c, stats := restoreFrom(t, persistCfg(), st, now)
	if !slices.Equal(stats.Reclaim, []broker.JobID{1, 2}) || !slices.Equal(stats.Workers, []string{"w1"}) ||
		!stats.ReclaimUntil.Equal(now.Add(6*time.Second)) || stats.JobsDispatched != 2 || stats.JobsQueued != 1 {
		t.Fatalf("stats %+v", stats)
	}
	if why, ok := c.Reclaiming(1); !ok || !strings.Contains(why, "awaiting reclaim by w1") {
		t.Fatalf("job 1: %q %v", why, ok)
	}
	tt := c.Totals(now)
	if tt.Dispatched != 2 || tt.Queued != 1 || tt.WorkersLost != 0 {
		t.Fatalf("totals while waiting %+v", tt)
	}
	// The worker reconnects holding job 1 only (it lost job 2).
	later := now.Add(2 * time.Second)
	wel, err := c.Hello(later, 9, Hello{Role: RoleWorker, ID: "w1", Slots: 2, Held: []broker.Run{{Job: 1, Attempt: 1}}})
	if err != nil || len(wel.Cancel) != 0 {
		t.Fatalf("hello: %+v %v", wel, err)
	}
	out := c.Ready(later)
	// Job 2 went back uncharged, behind job 3, which fills w1's free slot.
	if len(out.Jobs) != 1 || out.Jobs[0].Job != 3 || out.Jobs[0].Session != 9 {
		t.Fatalf("dispatched %+v, want job 3 to session 9", out.Jobs)
	}
	if row := jobState(t, c, 2); row.State != "queued" || row.Failures != 0 || row.Attempts != 1 {
		t.Fatalf("job 2 %+v: want queued, uncharged", row)
	}
	if row := jobState(t, c, 1); row.State != "dispatched" || row.Worker != "w1" || row.Attempts != 1 {
		t.Fatalf("job 1 %+v: want still dispatched to w1, same attempt", row)
	}
	var wrote []broker.JobID
	for _, w := range out.Writes {
		if w.Kind == RecordJob {
			wrote = append(wrote, w.Job.ID)
		}
	}
	if !slices.Equal(wrote, []broker.JobID{2, 3}) {
		t.Fatalf("job records written %v, want jobs 2 and 3", wrote)
	}
	// Its late result for job 1 is accepted.
	vs, err := c.Results(later, 9, []Result{{Run: broker.Run{Job: 1, Attempt: 1}, Outcome: broker.Outcome{Kind: broker.OK}}}, nil)
	if err != nil || vs[0].Err != "" || vs[0].Status != broker.Recorded {
		t.Fatalf("late result: %+v %v", vs, err)
	}
	c.Ready(later)
	fp := specs("http://a.test/1")[0].Key
	nk, _ := id.NewKey(fp.Crawler, fp.Processor, fp.URL)
	if rec, ok := c.led.Lookup(later, nk.Fingerprint()); !ok || rec.State != ledger.Done {
		t.Fatalf("key of job 1: %+v %v, want done", rec, ok)
	}
	// The wait's end finds nothing to requeue.
	c.Touch(stats.ReclaimUntil, 9)
	c.Tick(stats.ReclaimUntil)
	if out := c.Ready(stats.ReclaimUntil); len(out.Jobs) != 0 {
		t.Fatalf("dispatched %+v at the end of an empty wait", out.Jobs)
	}
	if tt := c.Totals(later); tt.Done != 1 || tt.Dispatched != 2 || tt.Queued != 0 || tt.Failures != 0 {
		t.Fatalf("totals %+v", tt)
	}
}

func TestReclaimTimeoutRequeuesUncharged(t *testing.T) {
	st, _, now := crashed(t, persistCfg(), twoHeld)
	cfg := persistCfg()
	cfg.ReclaimTimeout = 30 * time.Second
	c, stats := restoreFrom(t, cfg, st, now)
	if d, ok := c.NextDeadline(); !ok || !d.Equal(now.Add(30*time.Second)) {
		t.Fatalf("next deadline %v %v, want the end of the reclaim wait", d, ok)
	}
	// Another worker comes; it gets the queued job only.
	if _, err := c.Hello(now, 5, Hello{Role: RoleWorker, ID: "w2", Slots: 5}); err != nil {
		t.Fatal(err)
	}
	if out := c.Ready(now); len(out.Jobs) != 1 || out.Jobs[0].Job != 3 {
		t.Fatalf("dispatched %+v, want job 3 only", out.Jobs)
	}
	c.Touch(stats.ReclaimUntil.Add(-time.Second), 5)
	c.Tick(stats.ReclaimUntil.Add(-time.Second))
	if out := c.Ready(stats.ReclaimUntil.Add(-time.Second)); len(out.Jobs) != 0 {
		t.Fatalf("dispatched %+v before the wait ended", out.Jobs)
	}
	c.Touch(stats.ReclaimUntil, 5)
	c.Tick(stats.ReclaimUntil)
	out := c.Ready(stats.ReclaimUntil)
	if len(out.Jobs) != 2 {
		t.Fatalf("dispatched %+v at the end of the wait, want jobs 1 and 2", out.Jobs)
	}
	for _, j := range []broker.JobID{1, 2} {
		row := jobState(t, c, j)
		// Attempt 2 may have left, unrecorded, before the crash: skipped.
		h := row.History
		if row.Failures != 0 || row.Worker != "w2" || row.Attempts != 3 || len(h) != 3 ||
			h[0].Outcome != "requeued" || h[1].Outcome != broker.OutcomeSkipped || h[1].Worker != "" {
			t.Errorf("job %d %+v: want uncharged, requeued, attempt 2 skipped, attempt 3 at w2", j, row)
		}
	}
	if tt := c.Totals(stats.ReclaimUntil); tt.Failures != 0 || tt.Dispatched != 3 {
		t.Fatalf("totals %+v", tt)
	}
	// The late worker's jobs were given away: it is told to drop them.
	held := []broker.Run{{Job: 1, Attempt: 1}, {Job: 2, Attempt: 1}}
	wel, err := c.Hello(stats.ReclaimUntil, 6, Hello{Role: RoleWorker, ID: "w1", Slots: 2, Held: held})
	if err != nil || !slices.Equal(wel.Cancel, held) {
		t.Fatalf("late hello: %+v %v, want jobs 1 and 2 cancelled", wel, err)
	}
	if _, ok := c.NextDeadline(); ok {
		// The liveness of sessions 5 and 6 is a deadline: only check the
		// reclaim wait is gone.
		if d, _ := c.reclaimDeadline(); !d.IsZero() {
			t.Fatal("reclaim wait still pending")
		}
	}
}

// Failed, done and backed-off jobs survive a restart with their counters
// and history; a requeue of the failed one and the back-off's end work on
// the restored coordinator.
func TestRestoreFinishedAndBackoff(t *testing.T) {
	cfg := persistCfg()
	script := func(t *testing.T, c *Coordinator) time.Time {
		must(t)(c.Hello(t0, 1, Hello{Role: RoleProducer, ID: "p"}))
		must(t)(c.Submit(t0, 1, 1, specs("http://a.test/1", "http://b.test/2", "http://c.test/3"), nil))
		must(t)(c.Hello(t0, 2, Hello{Role: RoleWorker, ID: "w", Slots: 3}))
		c.Ready(t0)
		must(t)(c.Results(t0, 2, []Result{
			{Run: broker.Run{Job: 1, Attempt: 1}, Outcome: broker.Outcome{Kind: broker.OK}},
			{Run: broker.Run{Job: 2, Attempt: 1}, Outcome: broker.Outcome{Kind: broker.External, Error: "malformed"}},
			{Run: broker.Run{Job: 3, Attempt: 1}, Outcome: broker.Outcome{Kind: broker.Throttled, RetryAfter: 90 * time.Second}},
		}, nil))
		return t0
	}
	st := newMemStore()
	c := newCoord(t, cfg)
	now := script(t, c)
	st.apply(t, c.out.Writes) // the first Ready's
	st.apply(t, c.Ready(now).Writes)
	r, stats := restoreFrom(t, cfg, st, now)
	if stats.JobsDone != 1 || stats.JobsFailed != 1 || stats.JobsBackoff != 1 || stats.KeysDone != 1 || stats.KeysFailed != 1 || stats.KeysQueued != 1 {
		t.Fatalf("stats %+v", stats)
	}
	var fps []id.Fingerprint
	for _, s := range specs("http://a.test/1", "http://b.test/2", "http://c.test/3") {
		nk, _ := id.NewKey(s.Key.Crawler, s.Key.Processor, s.Key.URL)
		fps = append(fps, nk.Fingerprint())
	}
	if err := sameState(c, r, now, fps); err != nil {
		t.Fatal(err)
	}
	if row := jobState(t, r, 2); row.LastError != "external failure: malformed" || len(row.History) != 1 {
		t.Fatalf("failed job %+v", row)
	}
	// The console's events say what was restored.
	r.Ready(now)
	p, _ := r.Query(now, admin.Query{View: admin.ViewEvents, Filter: "kind=coord.restored"})
	if len(p.Events) != 1 || !strings.Contains(p.Events[0].Detail, "1 backoff, 1 done, 1 failed") {
		t.Fatalf("restored event %+v", p.Events)
	}
	must(t)(r.Hello(now, 3, Hello{Role: RoleWorker, ID: "w", Slots: 3}))
	if res, err := r.Act(now, admin.Action{Kind: admin.ActRequeueFailed}); err != nil || res.Affected != 1 {
		t.Fatalf("requeue failed: %+v %v", res, err)
	}
	out := r.Ready(now)
	if len(out.Jobs) != 1 || out.Jobs[0].Job != 2 {
		t.Fatalf("dispatched %+v, want the requeued job 2", out.Jobs)
	}
	end := now.Add(90 * time.Second)
	r.Touch(end, 3)
	r.Tick(end)
	if out := r.Ready(end); len(out.Jobs) != 1 || out.Jobs[0].Job != 3 {
		t.Fatalf("dispatched %+v at the back-off's end, want job 3", out.Jobs)
	}
}

// Job ids continue after a restart, also when the newest job records are
// gone (swept by the store): the meta record keeps the last id.
func TestRestoreNextIDContinuity(t *testing.T) {
	st, _, now := crashed(t, persistCfg(), twoHeld)
	for _, drop := range []bool{false, true} {
		s := newMemStore()
		s.apply(t, st.records())
		if drop {
			delete(s.jobs, 3)
			delete(s.jobs, 2)
		}
		c, stats := restoreFrom(t, persistCfg(), s, now)
		if stats.LastJob != 3 {
			t.Fatalf("drop %v: last job %d, want 3", drop, stats.LastJob)
		}
		must(t)(c.Hello(now, 1, Hello{Role: RoleProducer, ID: "p"}))
		vs, err := c.Submit(now, 1, 2, specs("http://a.test/new"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if vs[0].Status != Accepted || vs[0].Job != 4 {
			t.Fatalf("drop %v: new submit %+v, want job 4", drop, vs[0])
		}
		out := c.Ready(now)
		var last uint64
		for _, w := range out.Writes {
			if w.Kind == RecordMeta && w.Meta.Name == MetaLastJob {
				last = w.Meta.Value
			}
		}
		if last != 4 {
			t.Fatalf("drop %v: meta %s written as %d, want 4", drop, MetaLastJob, last)
		}
	}
}

func TestRestoreRefused(t *testing.T) {
	good := Record{Kind: RecordKey, Key: ledger.Write{Op: ledger.PutQueued, At: t0, Key: specs("http://a.test/")[0].Key}}
	cases := []struct {
		name string
		prep func(t *testing.T, c *Coordinator)
		rec  Record
		want string
	}{
		{"after a hello", func(t *testing.T, c *Coordinator) { must(t)(c.Hello(t0, 1, Hello{Role: RoleProducer, ID: "p"})) }, good, "sessions"},
		{"after finishing", func(t *testing.T, c *Coordinator) { must(t)(c.FinishRestore(t0)) }, good, "finished"},
		{"into a used coordinator", func(t *testing.T, c *Coordinator) {
			must(t)(c.Hello(t0, 1, Hello{Role: RoleProducer, ID: "p"}))
			must(t)(c.Submit(t0, 1, 1, specs("http://a.test/"), nil))
			c.Disconnect(t0, 1)
		}, good, "fresh"},
		{"no kind", nil, Record{}, "kind"},
		{"bad key op", nil, Record{Kind: RecordKey, Key: ledger.Write{Op: 9, At: t0}}, "op"},
		{"key without time", nil, Record{Kind: RecordKey, Key: ledger.Write{Op: ledger.PutDone}}, "zero time"},
		{"job without id", nil, Record{Kind: RecordJob, Job: JobRecord{State: broker.Queued}}, "ID 0"},
		{"job beyond the last id", func(t *testing.T, c *Coordinator) {
			must(t)(nil, c.RestoreRecord(Record{Kind: RecordMeta, Meta: MetaRecord{Name: MetaLastJob, Value: 4}}))
		}, Record{Kind: RecordJob, Job: JobRecord{ID: 5, State: broker.Queued}}, "beyond the last job id 4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCoord(t, persistCfg())
			if tc.prep != nil {
				tc.prep(t, c)
			}
			if err := c.RestoreRecord(tc.rec); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("RestoreRecord: %v, want an error naming %q", err, tc.want)
			}
		})
	}
	c := newCoord(t, persistCfg())
	if err := c.RestoreRecord(Record{Kind: RecordMeta, Meta: MetaRecord{Name: "someone.else", Value: 7}}); err != nil {
		t.Fatalf("unknown meta: %v", err)
	}
	st, err := c.FinishRestore(t0)
	if err != nil || st.MetaIgnored != 1 {
		t.Fatalf("finish: %+v %v", st, err)
	}
	if _, err := c.FinishRestore(t0); err == nil {
		t.Fatal("a second FinishRestore was accepted")
	}
	if _, err := New(Config{ReclaimTimeout: -time.Second}); err == nil {
		t.Fatal("a negative reclaim timeout was accepted")
	}
}

// Without Persist no job or meta record is written; Ledger.Persist alone
// passes the ledger's writes on as before.
func TestWritesByConfig(t *testing.T) {
	cases := []struct {
		name             string
		cfg              Config
		keys, jobs, meta bool
	}{
		{"nothing", Config{}, false, false, false},
		{"ledger only", Config{Ledger: ledger.Config{Persist: true}}, true, false, false},
		{"persist", Config{Persist: true}, true, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCoord(t, tc.cfg)
			twoHeld(t, c)
			got := map[RecordKind]bool{}
			for _, w := range c.Ready(t0).Writes {
				got[w.Kind] = true
			}
			if got[RecordKey] != tc.keys || got[RecordJob] != tc.jobs || got[RecordMeta] != tc.meta {
				t.Fatalf("wrote %v, want keys %v jobs %v meta %v", got, tc.keys, tc.jobs, tc.meta)
			}
		})
	}
}

// A throttle that extends a host's back-off rewrites every job held back on
// the host, so that a restart keeps them waiting until the new end even
// after the throttled job itself has moved on.
func TestBackoffExtensionPersisted(t *testing.T) {
	cfg := persistCfg()
	c := newCoord(t, cfg)
	st := newMemStore()
	must(t)(c.Hello(t0, 1, Hello{Role: RoleProducer, ID: "p"}))
	must(t)(c.Hello(t0, 2, Hello{Role: RoleWorker, ID: "w", Slots: 2}))
	must(t)(c.Submit(t0, 1, 1, specs("http://a.test/1", "http://a.test/2"), nil))
	st.apply(t, c.Ready(t0).Writes)
	must(t)(c.Results(t0, 2, []Result{{Run: broker.Run{Job: 1, Attempt: 1}, Outcome: broker.Outcome{Kind: broker.Throttled, RetryAfter: time.Minute}}}, nil))
	st.apply(t, c.Ready(t0).Writes)
	must(t)(c.Results(t0, 2, []Result{{Run: broker.Run{Job: 2, Attempt: 1}, Outcome: broker.Outcome{Kind: broker.Throttled, RetryAfter: time.Hour}}}, nil))
	st.apply(t, c.Ready(t0).Writes)
	if rec := st.jobs[1]; !rec.RetryAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("job 1's record retries at %v, want the extended %v", rec.RetryAt, t0.Add(time.Hour))
	}
	// Job 2, whose throttle set the end, is requeued by the operator.
	must(t)(c.Act(t0, admin.Action{Kind: admin.ActRequeue, Targets: []string{"2"}}))
	st.apply(t, c.Ready(t0).Writes)
	r, _ := restoreFrom(t, cfg, st, t0)
	if row := jobState(t, r, 1); row.State != "backoff" || !row.RetryAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("restored job 1 %+v, want backoff until %v", row, t0.Add(time.Hour))
	}
}

// BenchmarkJobCycle measures whole job lifecycles (submit in batches of
// 100, dispatch, result, with every Ready) with and without Persist: the
// cost of collecting the writes.
func BenchmarkJobCycle(b *testing.B) {
	for _, persist := range []bool{false, true} {
		b.Run("persist="+strconv.FormatBool(persist), func(b *testing.B) {
			c, err := New(Config{Persist: persist, Broker: broker.Config{Jitter: -1, RetryJitter: -1}})
			if err != nil {
				b.Fatal(err)
			}
			now := t0
			if _, err := c.Hello(now, 1, Hello{Role: RoleProducer, ID: "p"}); err != nil {
				b.Fatal(err)
			}
			if _, err := c.Hello(now, 2, Hello{Role: RoleWorker, ID: "w", Slots: 100}); err != nil {
				b.Fatal(err)
			}
			const batch = 100
			js := make([]JobSpec, batch)
			var (
				vs      []SubmitVerdict
				rs      []Result
				rv      []ResultVerdict
				records int
			)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += batch {
				for k := range js {
					js[k] = JobSpec{Key: id.Key{Crawler: "c", Processor: "p", URL: "http://h" + strconv.Itoa(k%10) + ".test/" + strconv.Itoa(i+k)}}
				}
				vs, _ = c.Submit(now, 1, uint64(i), js, vs[:0])
				out := c.Ready(now)
				records += len(out.Writes)
				rs = rs[:0]
				for _, a := range out.Jobs {
					rs = append(rs, Result{Run: broker.Run{Job: a.Job, Attempt: a.Attempt}, Outcome: broker.Outcome{Kind: broker.OK}})
				}
				rv, _ = c.Results(now, 2, rs, rv[:0])
				records += len(c.Ready(now).Writes)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
			b.ReportMetric(float64(records)/float64(b.N), "records/job")
		})
	}
}

// BenchmarkRestore measures rebuilding a coordinator from a store of 100k
// jobs (40% done, 40% queued, 20% dispatched to 50 workers) and their keys.
func BenchmarkRestore(b *testing.B) {
	const n = 100_000
	var recs []Record
	recs = append(recs, Record{Kind: RecordMeta, Meta: MetaRecord{Name: MetaLastJob, Value: n}})
	var jobs []Record
	for i := 1; i <= n; i++ {
		k := id.Key{Crawler: "c", Processor: "p", URL: "http://h" + strconv.Itoa(i%100) + ".test/" + strconv.Itoa(i)}
		fp := k.Fingerprint()
		at := t0.Add(time.Duration(i) * time.Millisecond)
		jr := JobRecord{ID: broker.JobID(i), FP: fp, Key: k, Host: id.Host(k.URL), Created: at, Updated: at, Attempts: 1,
			History: []admin.Attempt{{Worker: "w" + strconv.Itoa(i%50), At: at}}}
		kw := ledger.Write{Op: ledger.PutQueued, FP: fp, Key: k, At: at}
		switch i % 5 {
		case 0, 1:
			jr.State, jr.History[0].Outcome = broker.Done, "ok"
			kw.Op = ledger.PutDone
		case 2:
			jr.State, jr.Worker = broker.Dispatched, "w"+strconv.Itoa(i%50)
		default:
			jr.State, jr.Attempts, jr.History = broker.Queued, 0, nil
		}
		recs = append(recs, Record{Kind: RecordKey, Key: kw})
		jobs = append(jobs, Record{Kind: RecordJob, Job: jr})
	}
	recs = append(recs, jobs...)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c, err := New(Config{Persist: true})
		if err != nil {
			b.Fatal(err)
		}
		st, err := c.Restore(t0.Add(time.Hour), recs)
		if err != nil || st.JobsDispatched != n/5 {
			b.Fatalf("restore: %+v %v", st, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
}

func TestRestoreStatsString(t *testing.T) {
	cases := []struct {
		st   RestoreStats
		want string
	}{
		{RestoreStats{}, "keys: 0 queued, 0 done, 0 failed; jobs: 0 queued, 0 dispatched, 0 backoff, 0 done, 0 failed; last job id 0"},
		{RestoreStats{KeysQueued: 2, KeysDeleted: 1, JobsDispatched: 3, LastJob: 9, Reclaim: []broker.JobID{1, 2, 3},
			Workers: []string{"a", "b", "c", "d", "e", "f", "g"}, ReclaimUntil: t0},
			"keys: 2 queued, 0 done, 0 failed, 1 deleted; jobs: 0 queued, 3 dispatched, 0 backoff, 0 done, 0 failed; last job id 9; " +
				"3 jobs await reclaim by a, b, c, d, e and 2 more workers until 2026-01-01T00:00:00Z"},
	}
	for _, tc := range cases {
		if got := tc.st.String(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

// Jobs finished in a step whose records the broker's done retention forgot
// before Ready are still written as done: a restart must not run them again.
func TestForgottenInStepWrittenDone(t *testing.T) {
	cfg := persistCfg()
	cfg.Broker.DoneRetention = 1
	c := newCoord(t, cfg)
	st := newMemStore()
	must(t)(c.Hello(t0, 1, Hello{Role: RoleProducer, ID: "p"}))
	must(t)(c.Hello(t0, 2, Hello{Role: RoleWorker, ID: "w", Slots: 3}))
	must(t)(c.Submit(t0, 1, 1, specs("http://a.test/1", "http://a.test/2", "http://a.test/3"), nil))
	st.apply(t, c.Ready(t0).Writes)
	var rs []Result
	for j := broker.JobID(1); j <= 3; j++ {
		rs = append(rs, Result{Run: broker.Run{Job: j, Attempt: 1}, Outcome: broker.Outcome{Kind: broker.OK}})
	}
	must(t)(c.Results(t0, 2, rs, nil))
	if _, ok := c.brk.Job(1); ok {
		t.Fatal("job 1's record kept: the test needs it forgotten")
	}
	st.apply(t, c.Ready(t0).Writes)
	for j := broker.JobID(1); j <= 3; j++ {
		if st.jobs[j].State != broker.Done {
			t.Fatalf("job %d persisted as %v, want done", j, st.jobs[j].State)
		}
	}
	r, stats := restoreFrom(t, cfg, st, t0)
	if stats.JobsDone != 3 {
		t.Fatalf("stats %+v", stats)
	}
	must(t)(r.Hello(t0, 3, Hello{Role: RoleWorker, ID: "w", Slots: 3}))
	if out := r.Ready(t0); len(out.Jobs) != 0 {
		t.Fatalf("restored coordinator ran %+v again", out.Jobs)
	}
	if tt := r.Totals(t0); tt.Done != 3 || tt.Queued+tt.Dispatched != 0 {
		t.Fatalf("totals %+v", tt)
	}
}
