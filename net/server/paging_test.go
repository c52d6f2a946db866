package server

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"drover/coord/id"
	"drover/coord/ledger"
	"drover/net/wire"
	"drover/net/zsock"
	"drover/store"
)

// hosts is how many hosts the jobs of TestPagingKeepsTheQueue spread over:
// job id j (from 1) is on host (j-1) % hosts.
const hosts = 7

// TestPagingKeepsTheQueue submits many more jobs than a server with a small
// ResidentJobs keeps in memory: the totals count them all, a paged-out key
// is still a duplicate (and a REQUEST for it is answered no), a worker gets
// the jobs in submission order (per host) while they are paged back in, and
// after a restart (which reads back only the resident ones) the rest
// follow, in order, each exactly once.
func TestPagingKeepsTheQueue(t *testing.T) {
	const (
		n        = 6000
		resident = 500
		first    = 2000 // done before the restart
	)
	dir := filepath.Join(t.TempDir(), "store")
	url := func(i int) string { return fmt.Sprintf("http://h%d.test/page/%d", i%hosts, i) }

	st := openStore(t, dir, store.SyncNone)
	s1, stop1 := runServer(t, Options{Store: st, ResidentJobs: resident})
	p := dial(t, s1.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p1", 0)
	for lo := 0; lo < n; lo += 1000 {
		items := make([]wire.SubmitItem, 1000)
		for i := range items {
			items[i] = wire.SubmitItem{Key: key(url(lo + i)), Payload: []byte(url(lo + i))}
		}
		p.send(&wire.Submit{Req: uint64(2 + lo), Jobs: items})
		for i, it := range expect[*wire.Submitted](t, p.recv()).Items {
			if it.Status != wire.SubmitAccepted || it.JobID != uint64(lo+i+1) {
				t.Fatalf("job %d: %+v, want accepted as job %d", lo+i, it, lo+i+1)
			}
		}
	}
	waitFor(t, "jobs paged out", func() bool { return s1.Paging().Out >= n-resident })
	if tt := totals(t, s1); tt.Queued != n || tt.KeysQueued != n {
		t.Fatalf("totals: %d queued jobs, %d queued keys; want %d of each", tt.Queued, tt.KeysQueued, n)
	}
	// Dedup holds for keys only in the store.
	p.send(&wire.Submit{Req: 100, Jobs: []wire.SubmitItem{{Key: key(url(n - 1))}}})
	if it := expect[*wire.Submitted](t, p.recv()).Items[0]; it.Status != wire.SubmitDuplicate {
		t.Fatalf("resubmit of a paged-out key: %+v, want duplicate", it)
	}
	p.send(&wire.Request{Req: 101, Keys: []id.Key{key(url(n - 2))}})
	if v := expect[*wire.Verdicts](t, p.recv()).Items[0]; v.Verdict != wire.VerdictNo || v.Reason != string(ledger.ReasonQueued) {
		t.Fatalf("request of a paged-out key: %+v, want no queued", v)
	}

	got := drain(t, s1, "w1", first)
	hostFIFO(t, "before the restart", got, 0)
	if s1.Paging().In == 0 {
		t.Fatal("nothing was paged in while the worker ran")
	}
	if err := stop1(); err != nil {
		t.Fatal(err)
	}
	st.Close()

	st2 := openStore(t, dir, store.SyncNone)
	t.Cleanup(func() { st2.Close() })
	s2, _ := runServer(t, Options{Store: st2, ResidentJobs: resident})
	if r := s2.Restored(); r.JobsQueued != n-first || r.JobsDone != first {
		t.Fatalf("restored %s: want %d queued jobs and %d done", r, n-first, first)
	}
	if tt := totals(t, s2); tt.Queued != n-first || tt.KeysQueued != n-first || tt.Done != first {
		t.Fatalf("totals after the restart: %d queued jobs, %d queued keys, %d done; want %d, %d, %d", tt.Queued, tt.KeysQueued, tt.Done, n-first, n-first, first)
	}
	// Each remaining job comes once, and in its host's order those the
	// first worker could not have been given (the ones it got beyond its
	// count went back to the queue when it left, or wait for it to reclaim
	// them: they come when the broker says).
	done1 := got
	got = drain(t, s2, "w2", n-first)
	seen := make(map[int]bool, n)
	for _, j := range done1 {
		seen[j] = true
	}
	for i, j := range got {
		if seen[j] || j < 1 || j > n {
			t.Fatalf("after the restart job %d came as number %d: a repeat or out of range", j, i+1)
		}
		seen[j] = true
	}
	hostFIFO(t, "after the restart", got, slices.Max(done1)+64)
	tt := totals(t, s2)
	if tt.Queued != 0 || tt.KeysQueued != 0 || tt.Done != n || tt.KeysDone != n {
		t.Fatalf("totals at the end: %+v; want %d done jobs and keys, nothing queued", tt, n)
	}
}

// drain has one worker of 8 slots finish the next count jobs it gets,
// checking their payloads, and leave; the jobs it got beyond those go back
// to the queue when it leaves. It returns the ids of the jobs it finished,
// in the order it got them.
func drain(t *testing.T, s *Server, name string, count int) []int {
	t.Helper()
	w := dial(t, s.PeersEndpoint())
	hello(t, w, wire.RoleWorker, name, 8)
	var got []int
	acked := 0
	for acked < count {
		m := w.recv()
		if ok, isOK := m.(*wire.ResultOK); isOK {
			acked += len(ok.Items)
			continue
		}
		j, isJob := m.(*wire.Job)
		if !isJob {
			continue
		}
		res := make([]wire.ResultItem, 0, len(j.Jobs))
		for _, it := range j.Jobs {
			if string(it.Payload) != it.Key.URL {
				t.Fatalf("job %d: payload %q, want %q", it.JobID, it.Payload, it.Key.URL)
			}
			if len(got) == count {
				break // left for the next worker
			}
			got = append(got, int(it.JobID))
			res = append(res, wire.ResultItem{JobID: it.JobID, Attempt: it.Attempt, Outcome: wire.OutcomeOK})
		}
		if len(res) > 0 {
			w.send(&wire.Result{Req: uint64(len(got)), Items: res})
		}
	}
	w.send(&wire.Disconnect{Req: 1, Code: 200, Reason: "done"})
	return got
}

// hostFIFO checks that the jobs above from came in id order per host (the
// broker's queues are per host, served in turn).
func hostFIFO(t *testing.T, when string, got []int, from int) {
	t.Helper()
	last := map[int]int{}
	for i, j := range got {
		if j <= from {
			continue
		}
		h := (j - 1) % hosts
		if j < last[h] {
			t.Fatalf("%s job %d came as number %d, after job %d of its host (FIFO per host)", when, j, i+1, last[h])
		}
		last[h] = j
	}
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPagedKeyReadOffTheReactor: a REQUEST for a key paged out with its job
// has the key's record read back by the lookup goroutine, not the reactor.
// While that read is held up, the reactor welcomes another producer; once
// it goes on, the REQUEST is answered no (queued).
func TestPagedKeyReadOffTheReactor(t *testing.T) {
	const n, resident = 200, 20
	url := func(i int) string { return fmt.Sprintf("http://off.test/page/%d", i) }
	s, reading, release := heldPagingServer(t, resident, key(url(n-1)).Fingerprint())

	p := dial(t, s.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p1", 0)
	items := make([]wire.SubmitItem, n)
	for i := range items {
		items[i] = wire.SubmitItem{Key: key(url(i))}
	}
	p.send(&wire.Submit{Req: 2, Jobs: items})
	expect[*wire.Submitted](t, p.recv())
	waitFor(t, "jobs paged out", func() bool { return s.Paging().Out >= n-resident })

	p.send(&wire.Request{Req: 3, Keys: []id.Key{key(url(n - 1))}})
	select {
	case <-reading:
	case <-time.After(time.Minute):
		t.Fatal("the paged-out key's record was not read back within a minute")
	}
	other := dial(t, s.PeersEndpoint())
	hello(t, other, wire.RoleProducer, "p2", 0) // the reactor is free
	release()
	if v := expect[*wire.Verdicts](t, p.recv()).Items[0]; v.Verdict != wire.VerdictNo || v.Reason != string(ledger.ReasonQueued) {
		t.Fatalf("request of a paged-out key: %+v, want no queued", v)
	}
}

// TestParkedResubmitAfterPageOut: a SUBMIT parked behind its session's
// earlier message (which waits for a paged-out key's record) names keys
// another session then submits, which become durable and would be paged
// out before it reaches the coordinator: it is answered duplicate for
// them, as a resent SUBMIT must be, and no second job is made. Before, the
// coordinator took the keys paging had put out for absent and made a
// second job of each (a 2,000,000-line submit that lost its session twice
// left 20,000 keys with two jobs each).
func TestParkedResubmitAfterPageOut(t *testing.T) {
	const n, resident = 40, 10
	url := func(i int) string { return fmt.Sprintf("http://resent.test/page/%d", i) }
	s, reading, release := heldPagingServer(t, resident, key(url(n-1)).Fingerprint())

	a := dial(t, s.PeersEndpoint())
	hello(t, a, wire.RoleProducer, "a", 0)
	items := make([]wire.SubmitItem, n)
	for i := range items {
		items[i] = wire.SubmitItem{Key: key(url(i))}
	}
	a.send(&wire.Submit{Req: 2, Jobs: items})
	expect[*wire.Submitted](t, a.recv())
	waitFor(t, "jobs paged out", func() bool { return s.Paging().Out >= n-resident })

	// b's first SUBMIT waits for the paged-out key's record; its second
	// (new keys) parks behind it.
	b := dial(t, s.PeersEndpoint())
	hello(t, b, wire.RoleProducer, "b", 0)
	b.send(&wire.Submit{Req: 2, Jobs: []wire.SubmitItem{{Key: key(url(n - 1))}}})
	select {
	case <-reading:
	case <-time.After(time.Minute):
		t.Fatal("the paged-out key's record was not read back within a minute")
	}
	fresh := make([]wire.SubmitItem, 5)
	for i := range fresh {
		fresh[i] = wire.SubmitItem{Key: key(fmt.Sprintf("http://resent.test/new/%d", i))}
	}
	read := s.r.counters.messages.Load()
	b.send(&wire.Submit{Req: 3, Jobs: fresh})
	waitFor(t, "b's second SUBMIT read", func() bool { return s.r.counters.messages.Load() > read })

	// c submits the same new keys: accepted, durable, and past the
	// resident limit, so paging would put them out at once.
	c := dial(t, s.PeersEndpoint())
	hello(t, c, wire.RoleProducer, "c", 0)
	c.send(&wire.Submit{Req: 2, Jobs: fresh})
	for i, it := range expect[*wire.Submitted](t, c.recv()).Items {
		if it.Status != wire.SubmitAccepted {
			t.Fatalf("c's job %d: %+v, want accepted", i, it)
		}
	}
	steps := s.r.counters.steps.Load()
	waitFor(t, "two more reactor steps (a page-out after c's jobs were durable)", func() bool { return s.r.counters.steps.Load() >= steps+2 })

	release()
	if it := expect[*wire.Submitted](t, b.recv()).Items[0]; it.Status != wire.SubmitDuplicate {
		t.Fatalf("b's resubmit of a paged-out key: %+v, want duplicate", it)
	}
	for i, it := range expect[*wire.Submitted](t, b.recv()).Items {
		if it.Status != wire.SubmitDuplicate {
			t.Fatalf("b's job %d, a key c queued while it waited: %+v, want duplicate", i, it)
		}
	}
	if tt := totals(t, s); tt.Queued != n+len(fresh) || tt.KeysQueued != n+len(fresh) {
		t.Fatalf("totals: %d queued jobs, %d queued keys; want %d of each (one job per key)", tt.Queued, tt.KeysQueued, n+len(fresh))
	}
}

// heldPagingServer runs a durable server keeping resident queued jobs in
// memory, whose read-back of target's record (off the reactor) waits: reading
// is closed when it starts, release lets it go on (also at the test's end).
func heldPagingServer(t *testing.T, resident int, target id.Fingerprint) (s *Server, reading chan struct{}, release func()) {
	t.Helper()
	st := openStore(t, filepath.Join(t.TempDir(), "store"), store.SyncNone)
	t.Cleanup(func() { st.Close() })
	opts := Options{Store: st, ResidentJobs: resident}
	opts.Peers, opts.Admin, opts.Events = zsock.Ephemeral, zsock.Ephemeral, "-"
	opts.Coord.Heartbeat = testHeartbeat
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	reading, gate := make(chan struct{}), make(chan struct{})
	var held, released sync.Once
	s.hooks.queued = func(fp id.Fingerprint) {
		if fp == target {
			held.Do(func() { close(reading); <-gate })
		}
	}
	_, stop := runBuilt(t, s)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("server run: %v", err)
		}
	})
	release = func() { released.Do(func() { close(gate) }) }
	t.Cleanup(release) // runs first
	return s, reading, release
}
