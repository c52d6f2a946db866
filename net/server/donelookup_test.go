package server

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"drover/coord"
	"drover/coord/id"
	"drover/coord/ledger"
	"drover/net/wire"
	"drover/store"
)

// doneCacheOpts are server options with a real store and a done set of
// ten keys.
func doneCacheOpts(st *store.Store) Options {
	// The silent raw clients must outlive a 1,000-key step on a loaded
	// machine under the race detector.
	return Options{Store: st, Coord: coord.Config{Heartbeat: testHeartbeat, Ledger: ledger.Config{DoneCache: 10}}}
}

// checkAllDone re-requests and resubmits every key over a real socket:
// each must be answered done, none accepted (so none dispatched again).
func checkAllDone(t *testing.T, s *Server, keys []id.Key, name string) {
	t.Helper()
	p := dial(t, s.PeersEndpoint())
	hello(t, p, wire.RoleProducer, name, 0)
	p.send(&wire.Request{Req: 2, Keys: keys})
	vs := expect[*wire.Verdicts](t, p.recv())
	if len(vs.Items) != len(keys) {
		t.Fatalf("%s: %d verdicts for %d keys", name, len(vs.Items), len(keys))
	}
	for i, it := range vs.Items {
		if it.Verdict != wire.VerdictNo || it.Reason != string(ledger.ReasonDone) {
			t.Fatalf("%s: request %s: %s %q, want no done", name, keys[i].URL, it.Verdict, it.Reason)
		}
	}
	items := make([]wire.SubmitItem, len(keys))
	for i, k := range keys {
		items[i] = wire.SubmitItem{Key: k}
	}
	p.send(&wire.Submit{Req: 3, Jobs: items})
	sub := expect[*wire.Submitted](t, p.recv())
	for i, it := range sub.Items {
		if it.Status != wire.SubmitDuplicate || it.Reason != string(ledger.ReasonDone) {
			t.Fatalf("%s: resubmit %s: %s %q, want duplicate done", name, keys[i].URL, it.Status, it.Reason)
		}
	}
	// A key never seen is a miss in the store and is granted.
	p.send(&wire.Request{Req: 4, Keys: []id.Key{key("http://never.test/" + name)}})
	if v := expect[*wire.Verdicts](t, p.recv()); v.Items[0].Verdict != wire.VerdictOK {
		t.Fatalf("%s: request of a new key: %+v, want ok", name, v.Items[0])
	}
}

// TestDoneCacheOverSocket works 1,000 keys through a server whose done set
// keeps ten in memory, then asks for every one again over the peers
// socket: each is answered done from the store, none is dispatched again;
// a server restarted on the same store with the same tiny cache answers
// the same without restoring the done keys into memory.
func TestDoneCacheOverSocket(t *testing.T) {
	const n = 1000
	dir := filepath.Join(t.TempDir(), "store")
	keys := make([]id.Key, n)
	items := make([]wire.SubmitItem, n)
	for i := range keys {
		keys[i] = key(fmt.Sprintf("http://cache.test/%d", i))
		items[i] = wire.SubmitItem{Key: keys[i]}
	}

	st := openStore(t, dir, store.SyncBatch)
	s1, stop1 := runServer(t, doneCacheOpts(st))
	p := dial(t, s1.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p", 0)
	w := dial(t, s1.PeersEndpoint())
	hello(t, w, wire.RoleWorker, "w", n)
	p.send(&wire.Submit{Req: 2, Jobs: items})
	for i, it := range expect[*wire.Submitted](t, p.recv()).Items {
		if it.Status != wire.SubmitAccepted {
			t.Fatalf("submit %d: %s, want accepted", i, it.Status)
		}
	}
	var jobs []wire.JobItem
	for len(jobs) < n {
		jobs = append(jobs, expect[*wire.Job](t, w.recv()).Jobs...)
	}
	res := make([]wire.ResultItem, len(jobs))
	for i, j := range jobs {
		res[i] = wire.ResultItem{JobID: j.JobID, Attempt: j.Attempt, Outcome: wire.OutcomeOK}
	}
	w.send(&wire.Result{Req: 3, Items: res})
	for _, it := range expect[*wire.ResultOK](t, w.recv()).Items {
		if it.Status != wire.ResultRecorded {
			t.Fatalf("result %+v: want recorded", it)
		}
	}
	checkAllDone(t, s1, keys, "again")
	if err := stop1(); err != nil {
		t.Fatalf("first server: %v", err)
	}
	// Run has returned: its state may be read.
	if look := s1.dur.look.stats; look.Hits < n-10 || look.Lookups < look.Hits {
		t.Fatalf("store lookups %+v: want at least %d done keys answered from the store (the cache holds 10)", look, n-10)
	}
	dc, _ := s1.c.DoneCache()
	if dc.InMemory > 10+n/10 {
		t.Fatalf("done cache %+v: want about 10 keys in memory", dc)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st2 := openStore(t, dir, store.SyncBatch)
	t.Cleanup(func() { st2.Close() })
	s2 := newServer(t, doneCacheOpts(st2))
	if r := s2.Restored(); r.KeysDone != n || r.KeysInStore != n || r.JobsDone != n {
		t.Fatalf("restored %s: want %d done keys left in the store and %d done jobs", r, n, n)
	}
	// Read before Run starts: the coordinator is the reactor's once it runs.
	if dc, _ := s2.c.DoneCache(); dc.InMemory != 0 || dc.Stored != n {
		t.Fatalf("after the restore, done cache %+v: want none in memory, %d in the store", dc, n)
	}
	_, stop2 := runBuilt(t, s2)
	checkAllDone(t, s2, keys, "restarted")
	if err := stop2(); err != nil {
		t.Fatalf("second server: %v", err)
	}
	if look := s2.dur.look.stats; look.Hits < n {
		t.Fatalf("store lookups after the restart %+v: want all %d answered from the store", look, n)
	}
}

// Done keys left in the store by a bounded done set stop counting once the
// store's sweeper expires them: the totals' done keys follow the TTL
// instead of growing for ever.
func TestStoredDoneKeysExpireFromTheTotals(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "store"), store.SyncNone)
	t.Cleanup(func() { st.Close() })
	now := time.Now().UTC()
	b := st.NewBatch()
	for i, age := range []time.Duration{3 * time.Hour, 2 * time.Hour, time.Minute} {
		k := key(fmt.Sprintf("http://a.test/%d", i))
		if err := b.PutKey(&store.KeyRecord{FP: k.Fingerprint(), Key: k, State: store.KeyDone, At: now.Add(-age)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Commit(b); err != nil {
		t.Fatal(err)
	}
	cfg := coord.Config{Heartbeat: testHeartbeat, MinHeartbeat: 10 * time.Millisecond}
	cfg.Ledger.DoneTTL, cfg.Ledger.DoneCache = time.Hour, 10
	s, _ := runServer(t, Options{Store: st, Coord: cfg, SweepEvery: 20 * time.Millisecond})
	con := dial(t, s.AdminEndpoint())
	con.send(&wire.Hello{Req: 1, Role: wire.RoleConsole, ID: "watch", ReadOnly: true})
	expect[*wire.Welcome](t, con.recv())
	req := uint64(1)
	for deadline := time.Now().Add(10 * time.Second); ; {
		req++
		con.send(&wire.Status{Req: req})
		var tot *wire.Totals
		for tot == nil {
			if m, ok := con.recv().(*wire.Totals); ok {
				tot = m
			}
		}
		if tot.Totals.KeysDone == 1 {
			break // the two expired keys are gone, the young one stays
		}
		if time.Now().After(deadline) {
			t.Fatalf("done keys %d 10 s after start, want 1 (two of three expired by the sweep)", tot.Totals.KeysDone)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
}

// startHooked runs a server on ephemeral loopback ports with the test
// hooks hook sets (before Run, so the reactor sees them); stop ends it and
// returns Run's error.
func startHooked(t *testing.T, opts Options, hook func(*Server)) (*Server, func() error) {
	t.Helper()
	s := newServer(t, opts)
	hook(s)
	return runBuilt(t, s)
}

// startGated runs a server whose done-set lookups wait while the returned
// gate is closed; stop ends it and returns Run's error (the test's end
// opens the gate first, so a failure leaves no lookup waiting).
func startGated(t *testing.T, opts Options) (*Server, *gatedStore, func() error) {
	t.Helper()
	g := &gatedStore{}
	s, stop := startHooked(t, opts, func(s *Server) {
		s.hooks.look = func() {
			if wait := g.beforeCommit(); wait != nil {
				wait()
			}
		}
	})
	t.Cleanup(g.open) // runs first
	return s, g, stop
}

// TestLookupsDoNotBlockTheReactor: while a message's done-set lookups are
// held up in the store (a gate before the lookup goroutine's reads), the
// reactor serves everyone else — a HELLO is welcomed, another producer's
// SUBMIT of a key in memory is answered — and the waiting producer's next
// message waits behind its first: once the reads go on, both are answered
// in the order sent, the done key found in the store answered duplicate.
func TestLookupsDoNotBlockTheReactor(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st := openStore(t, dir, store.SyncAlways)
	t.Cleanup(func() { st.Close() })
	done := key("http://lookup.test/done")
	at := time.Now().Add(-time.Minute).UTC()
	b := st.NewBatch()
	b.PutKey(&store.KeyRecord{FP: done.Fingerprint(), Key: done, State: store.KeyDone, At: at})
	if err := st.Commit(b); err != nil {
		t.Fatal(err)
	}
	opts := doneCacheOpts(st)
	opts.Coord.Heartbeat = testHeartbeat
	s, g, _ := startGated(t, opts)

	known := key("http://lookup.test/known")
	pb := dial(t, s.PeersEndpoint())
	hello(t, pb, wire.RoleProducer, "pb", 0)
	pb.send(&wire.Submit{Req: 2, Jobs: []wire.SubmitItem{{Key: known}}})
	expect[*wire.Submitted](t, pb.recv())

	g.close()
	pa := dial(t, s.PeersEndpoint())
	hello(t, pa, wire.RoleProducer, "pa", 0)
	fresh := key("http://lookup.test/fresh")
	pa.send(&wire.Submit{Req: 2, Jobs: []wire.SubmitItem{{Key: done}, {Key: fresh}}})
	pa.send(&wire.Submit{Req: 3, Jobs: []wire.SubmitItem{{Key: known}}}) // no lookup, but after req 2
	g.waitGated(t)

	// Everyone else is served meanwhile.
	w := dial(t, s.PeersEndpoint())
	hello(t, w, wire.RoleWorker, "w", 1)
	pb.send(&wire.Submit{Req: 3, Jobs: []wire.SubmitItem{{Key: known}}})
	if it := expect[*wire.Submitted](t, pb.recv()).Items[0]; it.Status != wire.SubmitDuplicate {
		t.Fatalf("pb's resubmit of a key in memory: %+v, want duplicate", it)
	}
	if m, err := pa.recvWithin(300 * time.Millisecond); err == nil {
		t.Fatalf("pa got %s %+v while its lookups were held", m.Command(), m)
	}

	g.open()
	first := expect[*wire.Submitted](t, pa.recv())
	if first.Req != 2 || first.Items[0].Status != wire.SubmitDuplicate || first.Items[1].Status != wire.SubmitAccepted {
		t.Fatalf("pa's first answer %+v: want request 2, the done key duplicate, the fresh one accepted", first)
	}
	if second := expect[*wire.Submitted](t, pa.recv()); second.Req != 3 {
		t.Fatalf("pa's second answer is for request %d, want 3 (its messages in order)", second.Req)
	}
}

// TestStepsStayBounded: a producer pipelines 8 SUBMITs of 5,000 new keys
// while the store lookups are held, so all of them wait looked up at once
// when the gate opens. The reactor takes them in steps of at most
// stepItemBudget items (a message is never split), not in one step of
// 40,000, and answers every one in order.
func TestStepsStayBounded(t *testing.T) {
	const batches, per = 8, 5000
	st := openStore(t, filepath.Join(t.TempDir(), "store"), store.SyncBatch)
	t.Cleanup(func() { st.Close() })
	opts := doneCacheOpts(st)
	opts.Coord.Ledger.StoredFilter = -1 // every new key is looked up: the lookups are what the gate holds
	// The raw producer sends no heartbeats while 40,000 jobs are taken in:
	// on a loaded machine under the race detector that is tens of seconds.
	opts.Coord.Heartbeat = 30 * time.Second
	s, g, stop := startGated(t, opts)

	p := dial(t, s.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p", 0)
	g.close()
	for b := range batches {
		jobs := make([]wire.SubmitItem, per)
		for i := range jobs {
			jobs[i] = wire.SubmitItem{Key: key(fmt.Sprintf("http://bounded.test/%d/%d", b, i))}
		}
		p.send(&wire.Submit{Req: uint64(10 + b), Jobs: jobs})
	}
	g.waitGated(t)
	deadline := time.Now().Add(time.Minute)
	for s.ReactorStats().Messages < 1+batches { // the HELLO and every SUBMIT read (and parked)
		if time.Now().After(deadline) {
			t.Fatalf("the server read %d messages, want %d", s.ReactorStats().Messages, 1+batches)
		}
		time.Sleep(5 * time.Millisecond) // polls the condition; bounded by the deadline
	}
	g.open()
	for b := range batches {
		// 40,000 jobs under the race detector on a loaded machine: seconds.
		m, err := p.recvWithin(2 * time.Minute)
		if err != nil {
			t.Fatalf("answer %d: %v", b, err)
		}
		sm := expect[*wire.Submitted](t, m)
		if sm.Req != uint64(10+b) || len(sm.Items) != per || sm.Items[0].Status != wire.SubmitAccepted {
			t.Fatalf("answer %d: request %d with %d items (first %+v), want request %d with %d accepted", b, sm.Req, len(sm.Items), sm.Items[0], 10+b, per)
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if max := s.stats.MaxStepItems; max > stepItemBudget+per-1 || max < per {
		t.Fatalf("the largest step took in %d items, want %d to %d (the budget %d, a message never split)", max, per, stepItemBudget+per-1, stepItemBudget)
	}
	t.Logf("largest step: %d items, %d steps", s.stats.MaxStepItems, s.stats.Steps)
}

// TestParkedOnceInTheBudget: a message parked for its lookups and released
// in the step that read it counts once against the step's budget
// (stepItemBudget), not twice. The step hook holds the step until the
// lookup goroutine has handed the SUBMIT back, so it is released at once.
func TestParkedOnceInTheBudget(t *testing.T) {
	const n = 100
	st := openStore(t, filepath.Join(t.TempDir(), "store"), store.SyncNone)
	t.Cleanup(func() { st.Close() })
	opts := doneCacheOpts(st)
	opts.Coord.Ledger.StoredFilter = -1     // every new key is looked up
	opts.Coord.Heartbeat = 30 * time.Second // no heartbeat answer joins the SUBMIT's step
	var gaveUp atomic.Bool                  // the hook's wait ran out: the test would prove nothing
	s, stop := startHooked(t, opts, func(s *Server) {
		s.hooks.step = func() { // the reactor's: it may read s.dur.look
			l := &s.dur.look
			if len(l.parked) == 0 {
				return
			}
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
				l.looker.mu.Lock()
				back := len(l.looker.back)
				l.looker.mu.Unlock()
				if back > 0 {
					return
				}
				time.Sleep(time.Millisecond) // polls the lookup goroutine; bounded by the deadline
			}
			gaveUp.Store(true)
		}
	})
	p := dial(t, s.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p", 0)
	jobs := make([]wire.SubmitItem, n)
	for i := range jobs {
		jobs[i] = wire.SubmitItem{Key: key(fmt.Sprintf("http://once.test/%d", i))}
	}
	p.send(&wire.Submit{Req: 2, Jobs: jobs})
	if sm := expect[*wire.Submitted](t, p.recv()); len(sm.Items) != n || sm.Items[0].Status != wire.SubmitAccepted {
		t.Fatalf("answer: %d items (first %+v), want %d accepted", len(sm.Items), sm.Items[0], n)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if gaveUp.Load() {
		t.Fatal("the lookup goroutine never handed the parked SUBMIT back within the step: nothing was tested")
	}
	if l := s.dur.look.stats.Lookups; l < n {
		t.Fatalf("%d keys looked up, want %d (the SUBMIT parked)", l, n)
	}
	if max := s.stats.MaxStepItems; max != n {
		t.Fatalf("the largest step took in %d items, want %d (the SUBMIT once)", max, n)
	}
}

// TestParkedItemsBounded: while the lookup goroutine is held up, a
// producer's pipelined SUBMITs park (the first waits for its lookups, the
// others behind it); once the parked messages carry their budget of jobs
// the reactor reads no more, even when woken, and every job is accepted
// once the lookups go on (with a budget of 2,000 jobs set for the test).
// Without the bound the reactor reads every message into parked ones.
func TestParkedItemsBounded(t *testing.T) {
	const budget, per = 2_000, 250
	const msgs = 3 * budget / per // three budgets' worth
	st := openStore(t, filepath.Join(t.TempDir(), "store"), store.SyncNone)
	t.Cleanup(func() { st.Close() })
	opts := doneCacheOpts(st)
	opts.Coord.Ledger.StoredFilter = -1     // every new key is looked up
	opts.Coord.Heartbeat = 30 * time.Second // the raw producer is silent
	var (
		most     atomic.Int64 // the most items parked at once
		full     = make(chan uint64, 1)
		next     = make(chan struct{}, 1)
		fullStep atomic.Uint64
		gaveUp   atomic.Bool
		first    sync.Once
	)
	s, stop := startHooked(t, opts, func(s *Server) {
		s.dur.look.budget = budget
		s.hooks.step = func() { // the reactor's
			items := s.dur.look.items
			most.Store(max(most.Load(), int64(items)))
			switch at := fullStep.Load(); {
			case at == 0 && items >= budget:
				fullStep.Store(s.stats.Steps)
				full <- s.stats.Steps
			case at != 0 && s.stats.Steps > at:
				select {
				case next <- struct{}{}:
				default:
				}
			}
		}
		s.hooks.look = func() { // the lookup goroutine's: hold the first batch
			first.Do(func() {
				select {
				case <-full:
				case <-time.After(time.Minute):
					gaveUp.Store(true)
					return
				}
				// Wake the reactor for a step with the parked budget full.
				select {
				case s.dur.ring <- struct{}{}:
				default:
				}
				select {
				case <-next:
				case <-time.After(time.Minute):
					gaveUp.Store(true)
				}
			})
		}
	})
	p := dial(t, s.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p", 0)
	for m := range msgs {
		jobs := make([]wire.SubmitItem, per)
		for i := range jobs {
			jobs[i] = wire.SubmitItem{Key: key(fmt.Sprintf("http://parked.test/%d/%d", m, i))}
		}
		p.send(&wire.Submit{Req: uint64(2 + m), Jobs: jobs})
	}
	for m := range msgs {
		sm := expect[*wire.Submitted](t, p.recv())
		if sm.Req != uint64(2+m) || len(sm.Items) != per {
			t.Fatalf("answer %d: req %d with %d items, want req %d with %d", m, sm.Req, len(sm.Items), 2+m, per)
		}
		for i, it := range sm.Items {
			if it.Status != wire.SubmitAccepted {
				t.Fatalf("answer %d item %d: %+v, want accepted", m, i, it)
			}
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if gaveUp.Load() {
		t.Fatal("the parked messages never reached their budget, or the reactor never stepped after: nothing was tested")
	}
	if got, limit := most.Load(), int64(budget+per-1); got > limit {
		t.Fatalf("%d jobs parked at once, want at most %d (the budget %d and one message of %d)", got, limit, budget, per)
	}
}
