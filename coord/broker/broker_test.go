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

func sess(i int) id.Session { return id.Session(i) }

// oneJob returns a broker with one worker (session 1, "w") holding job 1
// after `failures` earlier internal failures, each retried once its retry
// delay ended; it returns the time of the last dispatch.
func oneJob(t *testing.T, cfg Config, failures int) (*Broker, time.Time) {
	t.Helper()
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := epoch
	if err := b.Register(now, 1, WorkerInfo{ID: "w"}, nil); err != nil {
		t.Fatal(err)
	}
	b.Submit(now, Spec{Key: id.Key{URL: "http://h/1"}, Host: "h"})
	for i := 0; ; i++ {
		if as := b.Dispatch(now, nil); len(as) != 1 {
			t.Fatalf("dispatch %d: %d assignments", i, len(as))
		}
		if i == failures {
			break
		}
		if err := result(b, now, 1, 1, Outcome{Kind: Internal}); err != nil {
			t.Fatal(err)
		}
		if as := b.Dispatch(now, nil); len(as) != 0 {
			t.Fatalf("failure %d: dispatched %v during the retry delay", i+1, as)
		}
		at, ok := b.NextDeadline()
		if !ok || at.Before(now) {
			t.Fatalf("failure %d: next deadline %v (%v), want the retry after %v", i+1, at, ok, now)
		}
		now = at
		b.Tick(now)
	}
	b.TakeFinished(nil)
	return b, now
}

func TestOutcomes(t *testing.T) {
	cases := []struct {
		name         string
		kind         OutcomeKind
		failures     int // earlier internal failures (max is 3)
		state        JobState
		finished     bool
		failedReport bool
		jobFailures  int
	}{
		{"ok is done", OK, 0, Done, true, false, 0},
		{"ok after failures is done", OK, 2, Done, true, false, 2},
		{"first internal waits its retry delay", Internal, 0, Backoff, false, false, 1},
		{"second internal waits its retry delay", Internal, 1, Backoff, false, false, 2},
		{"internal reaching the limit fails", Internal, 2, Failed, true, true, 3},
		{"external fails at once", External, 0, Failed, true, true, 0},
		{"throttled backs off, not a failure", Throttled, 2, Backoff, false, false, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, now := oneJob(t, Config{Jitter: -1, RetryJitter: -1}, c.failures)
			if err := result(b, now, 1, 1, Outcome{Kind: c.kind, Error: "x", Output: []byte("out")}); err != nil {
				t.Fatal(err)
			}
			j := b.jobs.get(1)
			if j.state != c.state || int(b.jobFailures(j)) != c.jobFailures {
				t.Fatalf("job %s with %d failures, want %s with %d", j.state, b.jobFailures(j), c.state, c.jobFailures)
			}
			if c.kind == Internal && c.state == Backoff {
				// RetryStart (1 s) doubling per failure charged.
				want := now.Add(time.Second << (c.jobFailures - 1))
				if got := b.retryTime(j); !got.Equal(want) {
					t.Fatalf("retry at %v, want %v", got, want)
				}
			}
			fin := b.TakeFinished(nil)
			if (len(fin) == 1) != c.finished {
				t.Fatalf("finished %v, want finished=%v", fin, c.finished)
			}
			if c.finished {
				if fin[0].Failed != c.failedReport || fin[0].Job != 1 {
					t.Fatalf("finished %+v, want failed=%v", fin[0], c.failedReport)
				}
				if !c.failedReport && string(fin[0].Output) != "out" {
					t.Fatalf("output %q not passed through", fin[0].Output)
				}
			}
			if err := checkInvariants(b); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestBadOutcomeChangesNothing(t *testing.T) {
	b, _ := oneJob(t, Config{Jitter: -1, RetryJitter: -1}, 0)
	err := result(b, epoch, 1, 1, Outcome{Kind: 9})
	if err == nil || isNotRecorded(err) {
		t.Fatalf("bad kind: err %v, want an error for the outcome kind", err)
	}
	if j := b.jobs.get(1); j.state != Dispatched || b.workerOf(j) == nil {
		t.Fatalf("job %s after a bad outcome, want dispatched", j.state)
	}
}

// TestWorkerDeathCharges: a worker's death is charged to the jobs it held
// only when it had reported a result since it registered (the death
// policy); oneJob's worker reported one per earlier internal failure.
func TestWorkerDeathCharges(t *testing.T) {
	cases := []struct {
		name     string
		failures int // earlier internal failures (results of the worker), max 3
		state    JobState
		charged  int
	}{
		{"death before any result: requeued uncharged", 0, Queued, 0},
		{"death of a proven worker is charged: its retry delay", 1, Backoff, 1},
		{"charged death at the limit fails", 2, Failed, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, now := oneJob(t, Config{Jitter: -1, RetryJitter: -1}, c.failures)
			b.Lost(now, 1)
			j := b.jobs.get(1)
			if j.state != c.state || int(b.jobFailures(j)) != c.failures+c.charged {
				t.Fatalf("job %s with %d failures, want %s with %d", j.state, b.jobFailures(j), c.state, c.failures+c.charged)
			}
			if want := now.Add(2 * time.Second); c.state == Backoff && !b.retryTime(j).Equal(want) {
				t.Fatalf("retry at %v after a second failure, want %v", b.retryTime(j), want)
			}
			// Leaving or eviction are not charged, and go back at once.
			b2, _ := oneJob(t, Config{Jitter: -1, RetryJitter: -1}, c.failures)
			b2.Left(epoch, 1)
			if j := b2.jobs.get(1); j.state != Queued || int(b2.jobFailures(j)) != c.failures {
				t.Fatalf("after leaving: job %s with %d failures, want queued with %d", j.state, b2.jobFailures(j), c.failures)
			}
			b3, _ := oneJob(t, Config{Jitter: -1, RetryJitter: -1}, c.failures)
			if n, err := b3.Evict(epoch, "w"); err != nil || n != 1 {
				t.Fatalf("evict: %d, %v", n, err)
			}
			if j := b3.jobs.get(1); j.state != Queued || int(b3.jobFailures(j)) != c.failures {
				t.Fatalf("after eviction: job %s with %d failures, want queued with %d", j.state, b3.jobFailures(j), c.failures)
			}
		})
	}
}

// TestLRU checks that the least recently used ready worker is served first
// and that a worker never gets more than its free slots.
func TestLRU(t *testing.T) {
	s := newScript(t)
	for i, slots := range []int{1, 2, 1} {
		if err := s.b.Register(s.now, sess(i+1), WorkerInfo{ID: "w" + strconv.Itoa(i+1), Slots: slots}, nil); err != nil {
			t.Fatal(err)
		}
	}
	submit := func(n int) {
		for range n {
			s.b.Submit(s.now, Spec{})
		}
	}
	order := func() []string {
		var out []string
		for _, a := range s.b.Dispatch(s.now, nil) {
			out = append(out, a.Worker)
		}
		return out
	}
	submit(10)
	if got, want := order(), []string{"w1", "w2", "w3", "w2"}; !slices.Equal(got, want) {
		t.Fatalf("first round %v, want %v", got, want)
	}
	// w3 then w1 finish: w1 was used before w3, so w1 is served first.
	for _, r := range []struct {
		s int
		j JobID
	}{{3, 3}, {1, 1}} {
		if err := result(s.b, s.now, sess(r.s), r.j, Outcome{Kind: OK}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := order(), []string{"w1", "w3"}; !slices.Equal(got, want) {
		t.Fatalf("second round %v, want %v", got, want)
	}
	if got := order(); len(got) != 0 {
		t.Fatalf("all full, still dispatched to %v", got)
	}
}

// TestBackoffSchedule checks the host back-off: exponential from
// BackoffStart, doubling, capped; Retry-After honoured and capped; jitter
// within bounds; the level forgiven after a quiet period.
func TestBackoffSchedule(t *testing.T) {
	cases := []struct {
		name        string
		retryAfter  []time.Duration // per consecutive throttle; 0 = not given
		wantLast    time.Duration
		forgiveWait time.Duration // wait before the last throttle, after the previous back-off ended
	}{
		{"first throttle", []time.Duration{0}, time.Minute, 0},
		{"doubling", []time.Duration{0, 0, 0}, 4 * time.Minute, 0},
		{"capped", []time.Duration{0, 0, 0, 0, 0, 0, 0, 0}, 30 * time.Minute, 0},
		{"retry-after honoured", []time.Duration{0, 7 * time.Second}, 7 * time.Second, 0},
		{"retry-after capped", []time.Duration{2 * time.Hour}, 30 * time.Minute, 0},
		{"level survives a short quiet", []time.Duration{0, 0, 0}, 4 * time.Minute, 59 * time.Minute},
		{"forgiven after the quiet period", []time.Duration{0, 0, 0}, time.Minute, time.Hour},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, _ := oneJob(t, Config{Jitter: -1, RetryJitter: -1, BackoffCap: 30 * time.Minute, BackoffForgive: time.Hour}, 0)
			now := epoch
			var got time.Duration
			for i, ra := range c.retryAfter {
				if i == len(c.retryAfter)-1 && c.forgiveWait > 0 {
					now = now.Add(c.forgiveWait)
					b.Tick(now)
					if len(b.Dispatch(now, nil)) != 0 {
						t.Fatal("dispatched a job already held")
					}
				}
				if err := result(b, now, 1, 1, Outcome{Kind: Throttled, RetryAfter: ra}); err != nil {
					t.Fatal(err)
				}
				got = time.Duration(b.retryAt(b.jobs.get(1)) - ns(now))
				now = tm(b.retryAt(b.jobs.get(1)))
				b.Tick(now)
				if as := b.Dispatch(now, nil); len(as) != 1 {
					t.Fatalf("throttle %d: job not back after its back-off", i)
				}
			}
			if got != c.wantLast {
				t.Fatalf("last back-off %v, want %v", got, c.wantLast)
			}
		})
	}
	t.Run("jitter within bounds", func(t *testing.T) {
		b, _ := oneJob(t, Config{Jitter: 0.2, Rand: rand.New(rand.NewPCG(5, 6)), BackoffForgive: time.Nanosecond}, 0)
		now := epoch
		seen := map[time.Duration]bool{}
		for range 200 {
			if err := result(b, now, 1, 1, Outcome{Kind: Throttled}); err != nil {
				t.Fatal(err)
			}
			d := time.Duration(b.retryAt(b.jobs.get(1)) - ns(now))
			if d < 48*time.Second || d > 72*time.Second {
				t.Fatalf("jittered first back-off %v outside 60s ± 20%%", d)
			}
			seen[d] = true
			now = tm(b.retryAt(b.jobs.get(1))).Add(time.Second) // quiet long enough to be forgiven
			b.Tick(now)
			if len(b.Dispatch(now, nil)) != 1 {
				t.Fatal("job not back")
			}
		}
		if len(seen) < 100 {
			t.Fatalf("only %d distinct back-offs in 200: no jitter?", len(seen))
		}
	})
}

func TestHostBackoffHoldsQueuedJobs(t *testing.T) {
	s := newScript(t)
	if err := s.b.Register(s.now, 1, WorkerInfo{ID: "w"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"a", "a", "b", "a"} {
		s.b.Submit(s.now, Spec{Host: h})
	}
	s.b.Dispatch(s.now, nil) // job 1 (host a)
	if err := result(s.b, s.now, 1, 1, Outcome{Kind: Throttled, RetryAfter: time.Minute}); err != nil {
		t.Fatal(err)
	}
	var tt admin.Totals
	s.b.Totals(&tt)
	if tt.Backoff != 3 || tt.Queued != 1 {
		t.Fatalf("backoff %d queued %d, want 3 and 1 (host b's job)", tt.Backoff, tt.Queued)
	}
	// A job submitted for a backed-off host waits too.
	s.b.Submit(s.now, Spec{Host: "a"})
	if j := s.b.jobs.get(5); j.state != Backoff {
		t.Fatalf("new job for a held host is %s, want backoff", j.state)
	}
	if as := s.b.Dispatch(s.now, nil); len(as) != 1 || as[0].Job != 3 {
		t.Fatalf("dispatch %v, want only job 3 (host b)", as)
	}
	if d, ok := s.b.NextDeadline(); !ok || !d.Equal(s.now.Add(time.Minute)) {
		t.Fatalf("next deadline %v %v, want in 1m", d, ok)
	}
	s.b.Tick(s.now.Add(time.Minute))
	s.b.Totals(&tt)
	if tt.Backoff != 0 || tt.Queued != 4 {
		t.Fatalf("after the back-off: backoff %d queued %d, want 0 and 4", tt.Backoff, tt.Queued)
	}
}

func TestDoneRetention(t *testing.T) {
	b, err := New(Config{Jitter: -1, RetryJitter: -1, DoneRetention: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Register(epoch, 1, WorkerInfo{ID: "w"}, nil); err != nil {
		t.Fatal(err)
	}
	const n = 3 * chunkSize
	for i := range n {
		b.Submit(epoch, Spec{Key: id.Key{URL: "u" + strconv.Itoa(i)}})
		as := b.Dispatch(epoch, nil)
		if err := result(b, epoch, 1, as[0].Job, Outcome{Kind: OK}); err != nil {
			t.Fatal(err)
		}
	}
	var tt admin.Totals
	b.Totals(&tt)
	if tt.Done != n {
		t.Fatalf("done %d, want %d", tt.Done, n)
	}
	if _, ok := b.Job(1); ok {
		t.Fatal("job 1 still has a record")
	}
	if _, ok := b.Job(n); !ok {
		t.Fatal("the latest done job lost its record")
	}
	if p := b.Jobs(admin.Query{}); p.Total != 2 || len(p.Jobs) != 2 || p.Jobs[0].JobID != n-1 {
		t.Fatalf("jobs view %+v, want the 2 latest", p)
	}
	if b.jobs.chunks[0] != nil || b.jobs.chunks[1] != nil {
		t.Fatal("chunks of forgotten jobs not released")
	}
	if err := b.Requeue(epoch, 1); !IsUnknown(err) {
		t.Fatalf("requeue of a forgotten job: %v, want unknown", err)
	}
	if err := checkInvariants(b); err != nil {
		t.Fatal(err)
	}
}

func TestLostRecordsKept(t *testing.T) {
	b, err := New(Config{Jitter: -1, RetryJitter: -1, LostWorkers: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 4; i++ {
		if err := b.Register(epoch, sess(i), WorkerInfo{ID: "w" + strconv.Itoa(i)}, nil); err != nil {
			t.Fatal(err)
		}
		b.Lost(epoch, sess(i))
	}
	var ids []string
	for _, r := range b.Workers(admin.Query{}).Workers {
		ids = append(ids, r.ID+" "+r.State)
	}
	if want := []string{"w3 lost", "w4 lost"}; !slices.Equal(ids, want) {
		t.Fatalf("workers %v, want %v", ids, want)
	}
	if err := b.Drain(epoch, "w3"); !IsWrongState(err) {
		t.Fatalf("drain of a lost worker: %v, want wrong state", err)
	}
	if n, err := b.Evict(epoch, "w3"); err != nil || n != 0 {
		t.Fatalf("evict lost record: %d, %v", n, err)
	}
	if got := b.Workers(admin.Query{}).Total; got != 1 {
		t.Fatalf("%d records after evicting one of 2", got)
	}
	if closed := b.TakeClosed(nil); len(closed) != 0 {
		t.Fatalf("closed %v: a lost worker has no session to close", closed)
	}
}

func TestWorkersQuery(t *testing.T) {
	s := newScript(t)
	for i, name := range []string{"c", "a", "b"} {
		if err := s.b.Register(s.now.Add(time.Duration(i)*time.Second), sess(i+1), WorkerInfo{ID: name, Host: "m" + name, Slots: i + 1}, nil); err != nil {
			t.Fatal(err)
		}
	}
	s.b.Submit(s.now, Spec{})
	s.b.Dispatch(s.now, nil) // to c, the first registered
	cases := []struct {
		q    admin.Query
		want []string
	}{
		{admin.Query{}, []string{"a", "b", "c"}},
		{admin.Query{Desc: true}, []string{"c", "b", "a"}},
		{admin.Query{Sort: "since"}, []string{"c", "a", "b"}},
		{admin.Query{Sort: "used", Desc: true}, []string{"c", "b", "a"}},
		{admin.Query{Filter: "state=busy"}, []string{"c"}},
		{admin.Query{Filter: "state=idle"}, []string{"a", "b"}},
		{admin.Query{Filter: "host=mb"}, []string{"b"}},
		{admin.Query{Filter: "ma"}, []string{"a"}},
		{admin.Query{Offset: 1, Limit: 1}, []string{"b"}},
	}
	for _, c := range cases {
		var got []string
		for _, r := range s.b.Workers(c.q).Workers {
			got = append(got, r.ID)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Workers(%+v) = %v, want %v", c.q, got, c.want)
		}
	}
}

// TestIdleTreesDropped checks that a sort index nobody queries is dropped
// after about 2n changes, and rebuilt correctly by the next query.
func TestIdleTreesDropped(t *testing.T) {
	b := oneWorker(t, 0)
	for i := range 100 {
		b.Submit(epoch, Spec{Key: id.Key{URL: "u" + strconv.Itoa(i%7)}})
	}
	b.Jobs(admin.Query{Sort: "url"})
	if b.trees[sortURL] == nil {
		t.Fatal("query by url built no index")
	}
	cycle := func() {
		as := b.Dispatch(epoch, nil)
		for _, a := range as {
			if err := result(b, epoch, 1, a.Job, Outcome{Kind: Internal}); err != nil {
				t.Fatal(err)
			}
		}
		b.Submit(epoch, Spec{Key: id.Key{URL: "v"}})
	}
	for b.changes < 1<<16 {
		cycle()
		if b.changes%1000 == 0 {
			b.Jobs(admin.Query{Sort: "url"}) // in use: kept
		}
	}
	if b.trees[sortURL] == nil {
		t.Fatal("an index in use was dropped")
	}
	start := b.changes
	for b.trees[sortURL] != nil && b.changes-start < 1<<20 {
		cycle()
	}
	idle := b.changes - start
	if limit := uint64(2*b.jobs.n + 1<<16); b.trees[sortURL] != nil || idle > limit+10 {
		t.Fatalf("idle index kept for %d changes (dropped: %v), limit %d", idle, b.trees[sortURL] == nil, limit)
	}
	p := b.Jobs(admin.Query{Sort: "url", Desc: true, Limit: 3})
	if b.trees[sortURL] == nil || p.Total != b.jobs.n || p.Jobs[0].URL != "v" {
		t.Fatalf("rebuilt index answers %+v", p)
	}
	if err := checkInvariants(b); err != nil {
		t.Fatal(err)
	}
}

// TestBadInputs feeds malformed or out-of-range inputs; each must be
// refused or ignored without a panic and leave the broker consistent.
func TestBadInputs(t *testing.T) {
	s := newScript(t)
	b := s.b
	if err := b.Register(s.now, 1, WorkerInfo{ID: "w", Headers: map[string]string{"threads": "x"}}, []Run{{0, 1}, {5, 0}, {5, 1}, {1 << 60, 1 << 30}}); err != nil {
		t.Fatal(err)
	}
	j := b.Submit(s.now, Spec{Host: "other", Headers: map[string]string{"threads": "lots", "": ""}})
	b.Submit(s.now, Spec{})
	b.Dispatch(s.now, nil)
	steps := []struct {
		name string
		do   func() error
		ok   func(error) bool
	}{
		{"result for job 0", func() error { return result(b, s.now, 1, 0, Outcome{}) }, isNotRecorded},
		{"result for a huge job id", func() error { return result(b, s.now, 1, 1<<62, Outcome{}) }, isNotRecorded},
		{"result from session 0", func() error { return result(b, s.now, 0, 2, Outcome{}) }, isNotRecorded},
		{"negative retry-after", func() error {
			return result(b, s.now, 1, 2, Outcome{Kind: Throttled, RetryAfter: -time.Hour})
		}, func(err error) bool { return err == nil }},
		{"requeue job 0", func() error { return b.Requeue(s.now, 0) }, IsUnknown},
		{"evict empty id", func() error { _, err := b.Evict(s.now, ""); return err }, IsUnknown},
		{"drain unknown", func() error { return b.Drain(s.now, "nobody") }, IsUnknown},
		{"undrain unknown", func() error { return b.Undrain(s.now, "nobody") }, IsUnknown},
		{"register with duplicate held jobs", func() error {
			return b.Register(s.now, 2, WorkerInfo{ID: "v"}, []Run{{j, 1}, {j, 1}, {j, 2}})
		}, func(err error) bool { return err == nil }},
	}
	for _, st := range steps {
		if err := st.do(); !st.ok(err) {
			t.Errorf("%s: unexpected error %v", st.name, err)
		}
		if err := checkInvariants(b); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
	}
	if r, _ := b.Job(j); r.State != "queued" || r.Worker != "" || r.Attempts != 0 {
		t.Fatalf("never-dispatched job claimed three times over is %s on %q (%d attempts), want queued: no run of it exists to claim", r.State, r.Worker, r.Attempts)
	}
	// Time going backwards and zero times are taken as given.
	b.Tick(time.Time{})
	b.Lost(time.Time{}, 2)
	b.Lost(time.Time{}, 2)
	b.Tick(s.now.Add(-time.Hour))
	for _, q := range []admin.Query{
		{Offset: -5, Limit: -1},
		{Limit: 1 << 30},
		{Sort: "nonsense", Filter: "state=bogus host= worker= ="},
		{Filter: "state=,,, =x"},
	} {
		b.Jobs(q)
		b.Retries(q)
		b.Workers(q)
	}
	if err := checkInvariants(b); err != nil {
		t.Fatal(err)
	}
}

// Every job order the console may ask for is served (admin.Sorts), and the
// worker and throttles orders are the jobs' own: dispatched jobs by their
// worker's id with the jobs no worker runs last; throttled jobs by count.
func TestJobSorts(t *testing.T) {
	for _, v := range []admin.View{admin.ViewJobs, admin.ViewRetries} {
		for _, name := range admin.Sorts[v] {
			if !slices.Contains(sortNames[:], name) {
				t.Errorf("%s sort %q is not a broker order", v, name)
			}
		}
	}
	s := newScript(t)
	for i, name := range []string{"wb", "wa"} {
		if err := s.b.Register(s.now, sess(i+1), WorkerInfo{ID: name, Slots: 1}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []string{"http://a.test/1", "http://b.test/2", "http://c.test/3"} {
		s.b.Submit(s.now, Spec{Key: id.Key{URL: u}, Host: u[7:13]})
	}
	s.b.Dispatch(s.now, nil) // jobs 1 and 2 to the two workers, job 3 waits
	urls := func(q admin.Query) []string {
		var got []string
		for _, r := range s.b.Jobs(q).Jobs {
			got = append(got, r.URL+"@"+r.Worker)
		}
		return got
	}
	byWorker := urls(admin.Query{Sort: "worker"})
	if len(byWorker) != 3 || !strings.HasSuffix(byWorker[0], "@wa") || !strings.HasSuffix(byWorker[1], "@wb") || !strings.HasSuffix(byWorker[2], "@") {
		t.Fatalf("by worker: %v, want wa's job, wb's job, then the queued one", byWorker)
	}
	if got := urls(admin.Query{Sort: "worker", Desc: true}); got[0] != byWorker[2] || got[2] != byWorker[0] {
		t.Fatalf("by worker, reversed: %v", got)
	}
	// Throttle the job wa runs: it leads the throttles order, reversed.
	var waJob JobID
	for _, r := range s.b.Jobs(admin.Query{}).Jobs {
		if r.Worker == "wa" {
			waJob = JobID(r.JobID)
		}
	}
	if err := result(s.b, s.now, sess(2), waJob, Outcome{Kind: Throttled, RetryAfter: time.Minute}); err != nil {
		t.Fatal(err)
	}
	p := s.b.Jobs(admin.Query{Sort: "throttles", Desc: true, Limit: 1})
	if len(p.Jobs) != 1 || JobID(p.Jobs[0].JobID) != waJob || p.Jobs[0].Throttles != 1 {
		t.Fatalf("most throttled: %+v, want job %d with 1 throttle", p.Jobs, waJob)
	}
	// The job left wa: no longer first by worker.
	if got := urls(admin.Query{Sort: "worker"}); strings.HasSuffix(got[0], "@wa") {
		t.Fatalf("by worker after the throttle: %v, want wa's job gone", got)
	}
}

// result reports outcome o for the current attempt of job jid from session
// s, as the worker holding it would; any status but Recorded is an error.
func result(b *Broker, now time.Time, s id.Session, jid JobID, o Outcome) error {
	attempt := 0
	if j := b.jobs.get(jid); j != nil {
		attempt = int(b.jobAttempts(j))
	}
	st, err := b.Result(now, s, Run{Job: jid, Attempt: attempt}, o)
	if err != nil {
		return err
	}
	if st != Recorded {
		return fmt.Errorf("result for job %d attempt %d: %v: %w", jid, attempt, st, errNotRecorded)
	}
	return nil
}

// errNotRecorded: result's outcome was not applied.
var errNotRecorded = errors.New("not recorded")

// isNotRecorded reports whether result refused the outcome.
func isNotRecorded(err error) bool { return errors.Is(err, errNotRecorded) }

// TestSmallPagesConfig: Config.SmallPages reaches the memory of the
// broker's tables.
func TestSmallPagesConfig(t *testing.T) {
	for _, small := range []bool{false, true} {
		b, err := New(Config{SmallPages: small})
		if err != nil {
			t.Fatal(err)
		}
		if got := b.jobs.mem.Small(); got != small {
			t.Errorf("Config.SmallPages %v: the broker's memory has small pages %v", small, got)
		}
	}
}
