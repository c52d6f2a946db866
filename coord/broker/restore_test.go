package broker

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"drover/admin"
	"drover/coord/id"
)

// snapshot returns the records of every job b keeps, by ascending ID, and
// its counters: what a store holds after every write of b was applied.
func snapshot(b *Broker) ([]JobRecord, Counters) {
	var recs []JobRecord
	for i := 1; i <= b.jobs.n; i++ {
		if r, ok := b.Record(JobID(i)); ok {
			recs = append(recs, r)
		}
	}
	return recs, b.Counters()
}

// restored builds a fresh broker with cfg from recs and counters.
func restored(t testing.TB, cfg Config, recs []JobRecord, c Counters, now time.Time) (*Broker, RestoreSummary) {
	t.Helper()
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if err := b.Restore(&recs[i]); err != nil {
			t.Fatalf("restore record %d: %v", recs[i].ID, err)
		}
	}
	sum, err := b.FinishRestore(now, RestoreState{Counters: c})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.TakeEvents(nil); len(got) != 0 {
		t.Fatalf("restore emitted %d events: %+v", len(got), got)
	}
	return b, sum
}

// sameJobs compares every job row (with history) of two brokers, and the
// job totals and counters. Queued rows differ only in their unroutable
// reason (the restored broker has no workers yet), which is not compared.
func sameJobs(a, b *Broker) error {
	if a.jobs.n != b.jobs.n {
		return fmt.Errorf("last job id %d, restored %d", a.jobs.n, b.jobs.n)
	}
	for i := 1; i <= a.jobs.n; i++ {
		ra, oka := a.Job(JobID(i))
		rb, okb := b.Job(JobID(i))
		if oka != okb {
			return fmt.Errorf("job %d: record kept %v, restored %v", i, oka, okb)
		}
		if ra.State == "queued" {
			ra.Reason, rb.Reason = "", ""
			ra.Wait, rb.Wait = "", ""
		}
		if ra.State == "dispatched" && ra.Reason == "" {
			// A job running at the crash waits for its worker to reclaim it.
			if want := "awaiting reclaim by " + ra.Worker; rb.Reason != want || rb.Wait != admin.WaitReclaim {
				return fmt.Errorf("job %d: reason %q (wait %q) after restore, want %q (wait reclaim)", i, rb.Reason, rb.Wait, want)
			}
			rb.Reason, rb.Wait = "", ""
		}
		if d := rowDiff(ra, rb); d != "" {
			return fmt.Errorf("job %d differs after restore: %s", i, d)
		}
	}
	var ta, tb admin.Totals
	a.Totals(&ta)
	b.Totals(&tb)
	ta.Unroutable, tb.Unroutable = 0, 0
	ta.Polite, tb.Polite = 0, 0 // the politeness clock is not persisted: a restart starts it afresh
	// Workers are sessions: a restored broker has none yet.
	ta.WorkersIdle, ta.WorkersBusy, ta.WorkersDraining, ta.WorkersLost, ta.WorkersHeld = 0, 0, 0, 0, 0
	tb.WorkersIdle, tb.WorkersBusy, tb.WorkersDraining, tb.WorkersLost, tb.WorkersHeld = 0, 0, 0, 0, 0
	if ta != tb {
		return fmt.Errorf("totals %+v, restored %+v", ta, tb)
	}
	return nil
}

func rowDiff(a, b admin.JobRow) string {
	sa, sb := fmt.Sprintf("%+v", a), fmt.Sprintf("%+v", b)
	if sa != sb {
		return "\n  was      " + sa + "\n  restored " + sb
	}
	return ""
}

// checkReclaimWait checks a restored broker still waiting for reclaims:
// every dispatched job is held either by a live worker or by a placeholder
// (lost, no session, not counted as lost), and placeholders hold nothing
// else.
func checkReclaimWait(b *Broker) error {
	for i := 1; i <= b.jobs.n; i++ {
		j := b.jobs.get(JobID(i))
		if j == nil || j.state != Dispatched {
			continue
		}
		w := b.workerOf(j)
		if w == nil || w.held[b.moreOf(j).heldIdx] != j {
			return fmt.Errorf("job %d dispatched but not in its worker's slots", j.id)
		}
		if !isPlaceholder(w) && b.sessions[w.session] != w {
			return fmt.Errorf("job %d dispatched to worker %q, neither live nor awaiting reclaim", j.id, w.id)
		}
	}
	for _, w := range b.wsorted {
		if isPlaceholder(w) && (w.inReady || slices.Contains(b.lostOrder, w)) {
			return fmt.Errorf("placeholder %q is ready or counted as lost", w.id)
		}
	}
	return nil
}

// TestRestoreModel runs the broker model's random steps and, every few
// steps, rebuilds a fresh broker from the records of every job kept and the
// counters: every job row and history and the totals must be equal, the
// restored broker consistent, and once the reclaim wait ends (no worker
// came back) every dispatched job must be queued again, uncharged.
func TestRestoreModel(t *testing.T) {
	seqs := 300
	if testing.Short() {
		seqs = 60
	}
	for seed := range uint64(seqs) {
		if err := runRestoreModel(t, seed, 120); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

func runRestoreModel(t *testing.T, seed uint64, steps int) error {
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
		HistoryLimit:       3,
	}
	if r.IntN(2) == 0 { // else the default retry delay: 1 s doubling, ±20%
		cfg.RetryStart, cfg.RetryCap = 20*time.Second, time.Minute
	}
	b, err := New(cfg)
	if err != nil {
		return err
	}
	m := &model{r: r, b: b, now: epoch, nextSess: 1, finished: map[JobID]int{}}
	for step := range steps {
		what, err := m.step()
		if err != nil {
			return fmt.Errorf("step %d (%s): %w", step, what, err)
		}
		if step%9 != 8 {
			continue
		}
		recs, cnt := snapshot(b)
		cfg2 := cfg
		cfg2.Rand = rand.New(rand.NewPCG(seed, 8))
		b2, sum := restored(t, cfg2, recs, cnt, m.now)
		if err := sameJobs(b, b2); err != nil {
			return fmt.Errorf("step %d (%s): %w", step, what, err)
		}
		if err := checkReclaimWait(b2); err != nil {
			return fmt.Errorf("step %d: restored: %w", step, err)
		}
		if sum.Dispatched != b.count[Dispatched] || len(sum.Reclaim) != b.count[Dispatched] {
			return fmt.Errorf("step %d: summary %d dispatched, %d to reclaim; %d were dispatched", step, sum.Dispatched, len(sum.Reclaim), b.count[Dispatched])
		}
		before := map[JobID]int{}
		for _, j := range sum.Reclaim {
			before[j] = int(b2.jobFailures(b2.jobs.get(j)))
		}
		if n := b2.EndReclaim(m.now, sum.Reclaim, "test"); n != len(sum.Reclaim) {
			return fmt.Errorf("step %d: EndReclaim requeued %d of %d", step, n, len(sum.Reclaim))
		}
		for j, f := range before {
			jj := b2.jobs.get(j)
			if jj.state != Queued && jj.state != Backoff || int(b2.jobFailures(jj)) != f {
				return fmt.Errorf("step %d: unreclaimed job %d is %s with %d failures, want queued or backoff with %d", step, j, jj.state, b2.jobFailures(jj), f)
			}
		}
		if err := checkInvariants(b2); err != nil {
			return fmt.Errorf("step %d: restored broker after the reclaim wait: %w", step, err)
		}
		// It goes on like any broker: a new job takes the next ID.
		if id := b2.Submit(m.now, Spec{Key: id.Key{URL: "http://new/"}, Host: "new"}); id != JobID(b.jobs.n+1) {
			return fmt.Errorf("step %d: new job got id %d, want %d", step, id, b.jobs.n+1)
		}
		if err := checkInvariants(b2); err != nil {
			return fmt.Errorf("step %d: restored broker after a submit: %w", step, err)
		}
	}
	return nil
}

// reclaimBroker restores jobs 1-3 dispatched to w1 and job 4 dispatched to
// w2, each in its second attempt (the first failed on w0), and job 5
// queued after its first.
func reclaimBroker(t *testing.T) (*Broker, RestoreSummary) {
	t.Helper()
	var recs []JobRecord
	for i := 1; i <= 5; i++ {
		u := "http://h/" + strconv.Itoa(i)
		k := id.Key{Crawler: "c", Processor: "p", URL: u}
		r := JobRecord{ID: JobID(i), FP: k.Fingerprint(), Key: k, Host: "h", State: Dispatched, Worker: "w1",
			Attempts: 2, Failures: 1, Created: epoch, Updated: epoch,
			History: []admin.Attempt{{Worker: "w0", At: epoch, Outcome: "internal", Error: "boom"}, {Worker: "w1", At: epoch}}}
		switch i {
		case 4:
			r.Worker = "w2"
			r.History[1].Worker = "w2"
		case 5:
			r.State, r.Worker, r.History, r.Attempts = Queued, "", r.History[:1], 1
		}
		recs = append(recs, r)
	}
	return restored(t, Config{Jitter: -1, RetryJitter: -1}, recs, Counters{LastID: 5}, epoch)
}

func TestReclaimByRegister(t *testing.T) {
	b, sum := reclaimBroker(t)
	if !slices.Equal(sum.Reclaim, []JobID{1, 2, 3, 4}) || !slices.Equal(sum.Workers, []string{"w1", "w2"}) {
		t.Fatalf("summary %+v, want jobs 1-4 awaiting w1 and w2", sum)
	}
	if w, ok := b.Reclaiming(2); !ok || w != "w1" {
		t.Fatalf("Reclaiming(2) = %q, %v; want w1", w, ok)
	}
	if _, ok := b.Reclaiming(5); ok {
		t.Fatal("queued job 5 reported as awaiting reclaim")
	}
	// Nothing is dispatched to a worker that is not there.
	if as := b.Dispatch(epoch, nil); len(as) != 0 {
		t.Fatalf("dispatched %+v with no worker", as)
	}
	// w1 comes back holding jobs 1 and 3 (and 5, which it never had, and
	// job 2's first attempt, which was w0's).
	now := epoch.Add(time.Second)
	if err := b.Register(now, 7, WorkerInfo{ID: "w1", Slots: 4}, []Run{{1, 2}, {3, 2}, {5, 1}, {2, 1}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		job      JobID
		state    string
		worker   string
		failures int
	}{
		{1, "dispatched", "w1", 1},
		{2, "queued", "", 1}, // not listed: requeued at once, uncharged
		{3, "dispatched", "w1", 1},
		{4, "dispatched", "w2", 1}, // still waiting for w2
		{5, "queued", "", 1},
	} {
		row, _ := b.Job(c.job)
		if row.State != c.state || row.Worker != c.worker || row.Failures != c.failures {
			t.Errorf("job %d: %s by %q with %d failures, want %s by %q with %d", c.job, row.State, row.Worker, row.Failures, c.state, c.worker, c.failures)
		}
	}
	if err := checkReclaimWait(b); err != nil {
		t.Fatal(err)
	}
	// Its late result for job 1 is accepted; job 3 fails internally and is
	// charged as usual.
	if err := result(b, now, 7, 1, Outcome{Kind: OK}); err != nil {
		t.Fatalf("late result for a reclaimed job: %v", err)
	}
	if err := result(b, now, 7, 3, Outcome{Kind: Internal, Error: "x"}); err != nil {
		t.Fatal(err)
	}
	if row, _ := b.Job(3); row.Failures != 2 {
		t.Errorf("job 3 failures %d after an internal failure, want 2", row.Failures)
	}
	if f := b.TakeFinished(nil); len(f) != 1 || f[0].Job != 1 {
		t.Fatalf("finished %+v, want job 1", f)
	}
	// w1 takes queued work again (jobs 5 and 2, in queue order); job 3
	// waits its retry delay (2 s after its second failure), then goes to
	// w1 too, the only worker; job 4 still waits for w2.
	if as := b.Dispatch(now, nil); len(as) != 2 || as[0].Job != 5 || as[1].Job != 2 {
		t.Fatalf("dispatched %+v to w1, want jobs 5 and 2", as)
	}
	if row, _ := b.Job(3); row.State != "backoff" || !row.RetryAt.Equal(now.Add(2*time.Second)) {
		t.Fatalf("job 3 after its second failure: %s until %v, want backoff until %v", row.State, row.RetryAt, now.Add(2*time.Second))
	}
	now = now.Add(2 * time.Second)
	b.Tick(now)
	if as := b.Dispatch(now, nil); len(as) != 1 || as[0].Job != 3 || as[0].Worker != "w1" {
		t.Fatalf("dispatched %+v after the retry delay, want job 3 to w1", as)
	}
	// The wait ends: job 4 goes back, uncharged; no placeholder is left.
	if n := b.EndReclaim(now, sum.Reclaim, "not reclaimed"); n != 1 {
		t.Fatalf("EndReclaim requeued %d, want 1 (job 4)", n)
	}
	row, _ := b.Job(4)
	if row.State != "queued" || row.Failures != 1 || row.Attempts != 2 {
		t.Fatalf("job 4 after the wait: %+v, want queued with 1 failure and 2 attempts", row)
	}
	if last := row.History[len(row.History)-1]; last.Outcome != "requeued" || last.Error != "not reclaimed" {
		t.Fatalf("job 4's last attempt %+v, want requeued: not reclaimed", last)
	}
	if _, ok := b.workers["w2"]; ok {
		t.Fatal("placeholder w2 still registered")
	}
	if err := checkInvariants(b); err != nil {
		t.Fatal(err)
	}
}

// An operator's actions during the wait: evicting a placeholder does not
// strand its jobs, requeueing one leaves the others waiting.
func TestReclaimOperator(t *testing.T) {
	b, sum := reclaimBroker(t)
	if err := b.Requeue(epoch, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Evict(epoch, "w2"); err != nil {
		t.Fatal(err)
	}
	if p := b.Workers(admin.Query{}); p.Total != 1 || p.Workers[0].ID != "w1" || p.Workers[0].Used != 2 {
		t.Fatalf("workers %+v, want only w1's placeholder holding 2 jobs", p.Workers)
	}
	if n := b.EndReclaim(epoch, sum.Reclaim, "not reclaimed"); n != 3 {
		t.Fatalf("EndReclaim requeued %d, want 3 (jobs 1, 3, 4)", n)
	}
	if err := checkInvariants(b); err != nil {
		t.Fatal(err)
	}
	var tt admin.Totals
	b.Totals(&tt)
	if tt.Queued != 5 || tt.Failures != 0 {
		t.Fatalf("totals %+v, want 5 queued and no failure charged", tt)
	}
}

func TestRestoreBadRecords(t *testing.T) {
	good := func(i JobID) JobRecord {
		return JobRecord{ID: i, Key: id.Key{URL: "http://h/"}, Host: "h", State: Queued, Created: epoch, Updated: epoch}
	}
	cases := []struct {
		name string
		prep func(b *Broker)
		rec  func() JobRecord
		want string
	}{
		{"id 0", nil, func() JobRecord { return good(0) }, "ID 0"},
		{"ids not ascending", func(b *Broker) { r := good(5); _ = b.Restore(&r) }, func() JobRecord { return good(3) }, "ascending"},
		{"same id twice", func(b *Broker) { r := good(5); _ = b.Restore(&r) }, func() JobRecord { return good(5) }, "ascending"},
		{"id out of range", nil, func() JobRecord { return good(1 << 40) }, "out of range"},
		{"no state", nil, func() JobRecord { r := good(1); r.State = 0; return r }, "state 0"},
		{"unknown state", nil, func() JobRecord { r := good(1); r.State = 9; return r }, "state 9"},
		{"dispatched to nobody", nil, func() JobRecord { r := good(1); r.State = Dispatched; return r }, "no worker"},
		{"negative failures", nil, func() JobRecord { r := good(1); r.Failures = -1; return r }, "counters"},
		{"after a worker registered", func(b *Broker) { _ = b.Register(epoch, 1, WorkerInfo{ID: "w"}, nil) }, func() JobRecord { return good(1) }, "registered"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := New(Config{Jitter: -1, RetryJitter: -1})
			if err != nil {
				t.Fatal(err)
			}
			if c.prep != nil {
				c.prep(b)
			}
			before := b.jobs.n
			r := c.rec()
			err = b.Restore(&r)
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrRestore) {
				t.Fatalf("Restore: %v, want an ErrRestore naming %q", err, c.want)
			}
			if b.jobs.n != before {
				t.Fatalf("a refused record moved the allocator from %d to %d", before, b.jobs.n)
			}
		})
	}
	b, _ := New(Config{Jitter: -1, RetryJitter: -1})
	if _, err := b.FinishRestore(epoch, RestoreState{Counters: Counters{LastID: 1 << 40}}); err == nil {
		t.Fatal("FinishRestore accepted a last job id of 2^40")
	}
}

// IDs are never reused: neither those of jobs whose records are gone nor
// those beyond the last record, up to the persisted last ID; whole chunks
// of missing IDs cost no record memory.
func TestRestoreNextID(t *testing.T) {
	k := id.Key{URL: "http://h/x"}
	recs := []JobRecord{
		{ID: 3, Key: k, FP: k.Fingerprint(), Host: "h", State: Queued, Created: epoch, Updated: epoch},
		{ID: 2*chunkSize + 7, Key: k, FP: k.Fingerprint(), Host: "h", State: Failed, Created: epoch, Updated: epoch},
	}
	last := JobID(6*chunkSize + 5)
	b, sum := restored(t, Config{Jitter: -1, RetryJitter: -1}, recs, Counters{LastID: last}, epoch)
	if got := b.Submit(epoch, Spec{Key: id.Key{URL: "http://h/y"}, Host: "h"}); got != last+1 {
		t.Fatalf("new job id %d, want %d", got, last+1)
	}
	if b.jobs.chunks[1] != nil || b.jobs.chunks[3] != nil || b.jobs.chunks[5] != nil {
		t.Fatal("chunks of missing ids allocated")
	}
	var tt admin.Totals
	b.Totals(&tt)
	if tt.Done != int(last)-2 || tt.Queued != 2 || tt.Failed != 1 || sum.Forgotten != int(last)-2 {
		t.Fatalf("totals %+v, summary %+v: want the missing ids counted as done", tt, sum)
	}
	if j, _ := b.JobOfKey(k.Fingerprint()); j != 2*chunkSize+7 {
		t.Fatalf("newest job of the key %d, want %d", j, 2*chunkSize+7)
	}
	if err := checkInvariants(b); err != nil {
		t.Fatal(err)
	}
	// A last ID below the records' is ignored: records win.
	b2, _ := restored(t, Config{Jitter: -1, RetryJitter: -1}, recs, Counters{LastID: 1}, epoch)
	if got := b2.Submit(epoch, Spec{Key: id.Key{URL: "http://h/y"}, Host: "h"}); got != 2*chunkSize+8 {
		t.Fatalf("new job id %d, want %d", got, 2*chunkSize+8)
	}
	if err := checkInvariants(b2); err != nil {
		t.Fatal(err)
	}
}

// Queued jobs go back in the order they were queued, not by ID: a retried
// job does not jump ahead of the backlog.
func TestRestoreQueueOrder(t *testing.T) {
	var recs []JobRecord
	queuedAt := []time.Duration{5, 1, 3, 2} // job 1 was retried last
	for i, d := range queuedAt {
		k := id.Key{URL: "http://h/" + strconv.Itoa(i+1)}
		hdr := map[string]string(nil)
		if i%2 == 1 {
			hdr = map[string]string{"gpu": "yes"}
		}
		recs = append(recs, JobRecord{ID: JobID(i + 1), Key: k, FP: k.Fingerprint(), Host: "h", Headers: hdr, State: Queued,
			Created: epoch, Updated: epoch.Add(d * time.Second)})
	}
	b, _ := restored(t, Config{Jitter: -1, RetryJitter: -1}, recs, Counters{LastID: 4}, epoch.Add(10*time.Second))
	if err := b.Register(epoch, 1, WorkerInfo{ID: "w", Slots: 1, Headers: map[string]string{"gpu": "yes"}}, nil); err != nil {
		t.Fatal(err)
	}
	var order []JobID
	for range 4 {
		as := b.Dispatch(epoch, nil)
		if len(as) != 1 {
			t.Fatalf("dispatch: %+v", as)
		}
		order = append(order, as[0].Job)
		if err := result(b, epoch, 1, as[0].Job, Outcome{Kind: OK}); err != nil {
			t.Fatal(err)
		}
	}
	if want := []JobID{2, 4, 3, 1}; !slices.Equal(order, want) {
		t.Fatalf("dispatch order %v, want %v (by time queued)", order, want)
	}
}

// Back-offs: a host's jobs wait until the latest retry time among them;
// one already past wakes at the first tick. Failed and done jobs keep their
// rows; done records beyond the retention are forgotten but counted.
func TestRestoreBackoffFailedDone(t *testing.T) {
	now := epoch.Add(time.Hour)
	mk := func(i int, host string, st JobState, retry time.Duration) JobRecord {
		k := id.Key{URL: "http://" + host + "/" + strconv.Itoa(i)}
		r := JobRecord{ID: JobID(i), Key: k, FP: k.Fingerprint(), Host: host, State: st, Throttles: 1,
			Created: epoch, Updated: epoch.Add(time.Duration(i) * time.Second), LastError: "e" + strconv.Itoa(i)}
		if st == Backoff {
			r.RetryAt = now.Add(retry)
		}
		return r
	}
	recs := []JobRecord{
		mk(1, "slow", Backoff, time.Minute), // stale retry time: the host was extended after
		mk(2, "slow", Backoff, 2*time.Minute),
		mk(3, "past", Backoff, -time.Minute),
		mk(4, "h", Failed, 0),
		mk(5, "h", Done, 0),
		mk(6, "h", Done, 0),
		mk(7, "h", Done, 0),
	}
	b, sum := restored(t, Config{Jitter: -1, RetryJitter: -1, DoneRetention: 2}, recs, Counters{LastID: 7}, now)
	if sum.Backoff != 3 || sum.Failed != 1 || sum.Done != 3 || sum.Forgotten != 1 {
		t.Fatalf("summary %+v", sum)
	}
	if r, _ := b.Job(1); r.RetryAt != now.Add(2*time.Minute) || r.Reason == "" {
		t.Fatalf("job 1 %+v: want retry at the host's latest, with the back-off as reason", r)
	}
	if _, ok := b.Job(5); ok {
		t.Fatal("oldest done record kept beyond the retention of 2")
	}
	if r, ok := b.Job(7); !ok || r.State != "done" || r.LastError != "e7" {
		t.Fatalf("job 7: %+v", r)
	}
	if r, _ := b.Job(4); r.State != "failed" || r.LastError != "e4" {
		t.Fatalf("job 4: %+v", r)
	}
	if rows := b.Retries(admin.Query{}).Hosts; len(rows) != 2 || rows[0].Host != "slow" || rows[0].Until != now.Add(2*time.Minute) {
		t.Fatalf("host rows %+v", rows)
	}
	if err := checkInvariants(b); err != nil {
		t.Fatal(err)
	}
	if d, ok := b.NextDeadline(); !ok || !d.Equal(now.Add(-time.Minute)) {
		t.Fatalf("next deadline %v %v, want the past back-off's end", d, ok)
	}
	b.Tick(now)
	if r, _ := b.Job(3); r.State != "queued" {
		t.Fatalf("job 3 after the first tick: %s, want queued", r.State)
	}
	if r, _ := b.Job(1); r.State != "backoff" {
		t.Fatalf("job 1 woke early: %s", r.State)
	}
	b.Tick(now.Add(2 * time.Minute))
	if r, _ := b.Job(1); r.State != "queued" {
		t.Fatalf("job 1 at its host's end: %s, want queued", r.State)
	}
	// A requeued failed job runs again.
	if err := b.Requeue(now, 4); err != nil {
		t.Fatal(err)
	}
	if err := checkInvariants(b); err != nil {
		t.Fatal(err)
	}
}
