package server

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"drover/coord"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/net/wire"
	"drover/net/zsock"
	"drover/store"
)

// openStore opens a store in dir with the given sync policy.
func openStore(t *testing.T, dir string, sync store.Sync) *store.Store {
	t.Helper()
	st, err := store.Open(store.Options{Path: dir, Sync: sync})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// testHeartbeat is the test servers' heartbeat unless a test gives one.
const testHeartbeat = 2 * time.Second

// runServer starts a server on ephemeral loopback ports (no events unless
// opts.Events says so); stop cancels Run and returns what it returned
// (also called at cleanup, once).
func runServer(t testing.TB, opts Options) (*Server, func() error) {
	t.Helper()
	return runBuilt(t, newServer(t, opts))
}

// newServer makes a server as runServer does, without running it: its
// coordinator may be read until runBuilt runs it.
func newServer(t testing.TB, opts Options) *Server {
	t.Helper()
	opts.Peers, opts.Admin = zsock.Ephemeral, zsock.Ephemeral
	if opts.Events == "" {
		opts.Events = "-"
	}
	if opts.Coord.Heartbeat == 0 {
		// Long enough that a loaded machine never stalls a live peer past
		// heartbeat × liveness; raw clients in these tests do not beat.
		opts.Coord.Heartbeat = testHeartbeat
		opts.Coord.MinHeartbeat = 10 * time.Millisecond
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runBuilt runs s until the returned stop is called (or the test ends).
func runBuilt(t testing.TB, s *Server) (*Server, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var stopped bool
	var runErr error
	stop := func() error {
		if !stopped {
			stopped = true
			cancel()
			runErr = <-done
		}
		return runErr
	}
	t.Cleanup(func() { stop() })
	return s, stop
}

func hello(t *testing.T, c *rawClient, role wire.Role, name string, slots uint32, held ...wire.Run) {
	t.Helper()
	c.send(&wire.Hello{Req: 1, Role: role, ID: name, Host: "test", Slots: slots, Held: held})
	expect[*wire.Welcome](t, c.recv())
}

// TestStoreRestartRestoresSubmits submits jobs to a server with a store,
// stops it, starts a new one on the same store and has a worker complete
// the restored jobs; the keys stay deduplicated across the restart.
func TestStoreRestartRestoresSubmits(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	urls := []string{"http://a.test/1", "http://a.test/2", "http://a.test/3"}

	st := openStore(t, dir, store.SyncAlways)
	s1, stop1 := runServer(t, Options{Store: st})
	if r := s1.Restored(); r.JobsQueued != 0 || r.KeysQueued != 0 {
		t.Fatalf("fresh store restored %s: want nothing", r)
	}
	p := dial(t, s1.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p1", 0)
	items := make([]wire.SubmitItem, len(urls))
	for i, u := range urls {
		items[i] = wire.SubmitItem{Key: key(u), Payload: []byte(u)}
	}
	p.send(&wire.Submit{Req: 2, Jobs: items})
	sub := expect[*wire.Submitted](t, p.recv())
	for i, it := range sub.Items {
		if it.Status != wire.SubmitAccepted {
			t.Fatalf("item %d: %s, want accepted", i, it.Status)
		}
	}
	if err := stop1(); err != nil {
		t.Fatalf("first server: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st2 := openStore(t, dir, store.SyncAlways)
	t.Cleanup(func() { st2.Close() })
	s2, stop2 := runServer(t, Options{Store: st2})
	if r := s2.Restored(); r.JobsQueued != 3 || r.KeysQueued != 3 || r.LastJob != 3 {
		t.Fatalf("restored %s: want 3 queued jobs and keys, last job id 3", r)
	}
	w := dial(t, s2.PeersEndpoint())
	hello(t, w, wire.RoleWorker, "w1", 3)
	var jobs []wire.JobItem
	for len(jobs) < 3 {
		jobs = append(jobs, expect[*wire.Job](t, w.recv()).Jobs...)
	}
	res := make([]wire.ResultItem, len(jobs))
	for i, j := range jobs {
		if string(j.Payload) != j.Key.URL {
			t.Errorf("job %d: payload %q, want the restored %q", j.JobID, j.Payload, j.Key.URL)
		}
		res[i] = wire.ResultItem{JobID: j.JobID, Attempt: j.Attempt, Outcome: wire.OutcomeOK}
	}
	w.send(&wire.Result{Req: 5, Items: res})
	ok := expect[*wire.ResultOK](t, w.recv())
	for _, it := range ok.Items {
		if it.Status != wire.ResultRecorded {
			t.Fatalf("result-ok %+v: want every result recorded", ok.Items)
		}
	}
	p2 := dial(t, s2.PeersEndpoint())
	hello(t, p2, wire.RoleProducer, "p2", 0)
	p2.send(&wire.Submit{Req: 3, Jobs: items[:1]})
	dup := expect[*wire.Submitted](t, p2.recv())
	if dup.Items[0].Status != wire.SubmitDuplicate {
		t.Fatalf("resubmit after restart: %+v, want duplicate", dup.Items[0])
	}
	if err := stop2(); err != nil {
		t.Fatalf("second server: %v", err)
	}
	// The third start sees the jobs done.
	st2.Close()
	st3 := openStore(t, dir, store.SyncAlways)
	t.Cleanup(func() { st3.Close() })
	s3, _ := runServer(t, Options{Store: st3})
	if r := s3.Restored(); r.JobsDone != 3 || r.KeysDone != 3 || r.JobsQueued != 0 {
		t.Fatalf("restored after completion %s: want 3 done jobs and keys", r)
	}
}

// TestStoreAcksHeldUntilDurable closes the store under a running server
// and sends each message whose acknowledgement promises durability: the
// acknowledgement, held for a batch that cannot be written, becomes ERROR
// 500, and Run stops with the store's error.
func TestStoreAcksHeldUntilDurable(t *testing.T) {
	u := key("http://a.test/")
	cases := []struct {
		name string
		msg  func(c *rawClient) wire.Message // sent after the store is closed
	}{
		{"submit", func(*rawClient) wire.Message {
			return &wire.Submit{Req: 7, Jobs: []wire.SubmitItem{{Key: u}}}
		}},
		{"queue", func(c *rawClient) wire.Message {
			c.send(&wire.Request{Req: 6, Keys: []id.Key{u}})
			expect[*wire.Verdicts](c.t, c.recv()) // a REQUEST verdict is not held: no write
			return &wire.Queue{Req: 7, Keys: []id.Key{u}}
		}},
		{"done", func(*rawClient) wire.Message {
			return &wire.Done{Req: 7, Items: []wire.DoneItem{{Key: u, Outcome: wire.DoneOK}}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t, filepath.Join(t.TempDir(), "store"), store.SyncAlways)
			s, stop := runServer(t, Options{Store: st})
			p := dial(t, s.PeersEndpoint())
			hello(t, p, wire.RoleProducer, "p1", 0)
			m := tc.msg(p)
			// Every batch so far is durable once a held acknowledgement
			// comes: the store closes with nothing left to write.
			p.send(&wire.Done{Req: 5, Items: []wire.DoneItem{{Key: key("http://barrier.test/"), Outcome: wire.DoneOK}}})
			expect[*wire.Verdicts](t, p.recv())
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			p.send(m)
			e := expect[*wire.Error](t, p.recv())
			if e.Req != 7 || e.Code != wire.CodeInternal {
				t.Fatalf("error %+v: want request 7, code 500", e)
			}
			if err := stop(); err == nil {
				t.Fatal("Run returned nil after the store failed, want the store's error")
			}
		})
	}
}

// TestStoreReclaim restores a job that was dispatched to worker w-gone when
// the coordinator died: w-gone reconnecting with the job held gets it back
// (its RESULT is recorded, the job is not dispatched again); with nobody
// reclaiming it, another worker gets it after the reclaim timeout,
// uncharged, as attempt 3 (attempt 2 may have left unrecorded: skipped).
func TestStoreReclaim(t *testing.T) {
	cases := []struct {
		name   string
		worker string
		held   []wire.Run
	}{
		{"reclaimed by its worker", "w-gone", []wire.Run{{JobID: 1, Attempt: 1}}},
		{"requeued after the timeout", "w-other", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			st := openStore(t, dir, store.SyncAlways)
			t.Cleanup(func() { st.Close() })
			at := time.Now().Add(-time.Minute).UTC()
			k := key("http://a.test/")
			b := st.NewBatch()
			b.PutMeta(coord.MetaLastJob, 1)
			b.PutKey(&store.KeyRecord{FP: k.Fingerprint(), Key: k, State: store.KeyQueued, At: at})
			b.PutJob(&store.JobRecord{ID: 1, FP: k.Fingerprint(), Key: k, Host: "a.test", State: store.JobDispatched,
				Attempts: 1, Worker: "w-gone", Created: at, Updated: at,
				History: []store.Attempt{{Worker: "w-gone", At: at}}})
			if err := st.Commit(b); err != nil {
				t.Fatal(err)
			}
			s, stop := runServer(t, Options{Store: st, Coord: coord.Config{
				Heartbeat: testHeartbeat, MinHeartbeat: 10 * time.Millisecond, ReclaimTimeout: 3 * time.Second}})
			if r := s.Restored(); len(r.Reclaim) != 1 || r.Reclaim[0] != 1 || r.Workers[0] != "w-gone" {
				t.Fatalf("restored %s: want job 1 awaiting reclaim by w-gone", r)
			}
			w := dial(t, s.PeersEndpoint())
			hello(t, w, wire.RoleWorker, tc.worker, 1, tc.held...)
			attempt := uint32(1) // the reclaimed run goes on
			if tc.held == nil {
				j := expect[*wire.Job](t, w.recv())
				// Attempt 2 may have left unrecorded before the crash: skipped.
				if len(j.Jobs) != 1 || j.Jobs[0].JobID != 1 || j.Jobs[0].Attempt != 3 {
					t.Fatalf("job %+v: want job 1 requeued after the reclaim timeout, attempt 3", j.Jobs)
				}
				attempt = 3
			}
			w.send(&wire.Result{Req: 3, Items: []wire.ResultItem{{JobID: 1, Attempt: attempt, Outcome: wire.OutcomeOK}}})
			// A JOB here would mean job 1 was dispatched again.
			ok := expect[*wire.ResultOK](t, w.recv())
			if ok.Items[0].Status != wire.ResultRecorded {
				t.Fatalf("result-ok %+v: want recorded (a stale result means job 1 was not reclaimed)", ok.Items)
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			r, found, err := st.GetJob(1)
			if err != nil || !found {
				t.Fatalf("job 1 in the store: %v %v", found, err)
			}
			if r.State != store.JobDone || r.Failures != 0 {
				t.Fatalf("job 1 stored as %s with %d failures, want done, uncharged", r.State, r.Failures)
			}
		})
	}
}

// TestStoreSweep: done job records past the ledger's done TTL are deleted
// from the store by the server's sweeper; younger ones stay.
func TestStoreSweep(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "store"), store.SyncNone)
	t.Cleanup(func() { st.Close() })
	now := time.Now().UTC()
	b := st.NewBatch()
	b.PutMeta(coord.MetaLastJob, 2)
	for i, age := range []time.Duration{2 * time.Hour, time.Minute} {
		k := key(fmt.Sprintf("http://a.test/%d", i))
		b.PutJob(&store.JobRecord{ID: uint64(i + 1), FP: k.Fingerprint(), Key: k, Host: "a.test", State: store.JobDone,
			Attempts: 1, Created: now.Add(-age), Updated: now.Add(-age)})
	}
	if err := st.Commit(b); err != nil {
		t.Fatal(err)
	}
	cfg := coord.Config{Heartbeat: testHeartbeat, MinHeartbeat: 10 * time.Millisecond}
	cfg.Ledger.DoneTTL = time.Hour
	runServer(t, Options{Store: st, Coord: cfg, SweepEvery: 20 * time.Millisecond})
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, found, err := st.GetJob(1)
		if err != nil {
			t.Fatal(err)
		}
		if !found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the expired done job 1 is still in the store")
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
	if _, found, err := st.GetJob(2); err != nil || !found {
		t.Fatalf("job 2, done a minute ago: found %v, %v; want it kept (TTL 1h)", found, err)
	}
}

// TestBeforeCommitAfterOnFinished: the store batch that records a job done
// is made after OnFinished got the job, and BeforeCommit's function runs
// before that batch is written (what drover crawl relies on to keep its
// results file ahead of the store).
func TestBeforeCommitAfterOnFinished(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "store"), store.SyncAlways)
	u := key("http://a.test/")
	var mu sync.Mutex
	var finished []string // OnFinished so far
	var before [][]string // for each batch, in write order: what OnFinished had had
	s, stop := runServer(t, Options{Store: st,
		OnFinished: func(f broker.Finished) {
			mu.Lock()
			finished = append(finished, f.Key.URL)
			mu.Unlock()
		},
		BeforeCommit: func() func() {
			mu.Lock()
			seen := slices.Clone(finished)
			mu.Unlock()
			return func() {
				mu.Lock()
				before = append(before, seen)
				mu.Unlock()
			}
		}})
	w := dial(t, s.PeersEndpoint())
	hello(t, w, wire.RoleWorker, "w1", 1)
	p := dial(t, s.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p1", 0)
	p.send(&wire.Submit{Req: 2, Jobs: []wire.SubmitItem{{Key: u}}})
	expect[*wire.Submitted](t, p.recv())
	j := expect[*wire.Job](t, w.recv())
	w.send(&wire.Result{Req: 3, Items: []wire.ResultItem{{JobID: j.Jobs[0].JobID, Attempt: j.Jobs[0].Attempt, Outcome: wire.OutcomeOK}}})
	expect[*wire.ResultOK](t, w.recv()) // sent once the batch recording it done is written
	mu.Lock()
	last := before[len(before)-1]
	mu.Unlock()
	if !slices.Contains(last, u.URL) {
		t.Fatalf("batches were made with OnFinished having had %q; the last (the job done) should include %s", before, u.URL)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
