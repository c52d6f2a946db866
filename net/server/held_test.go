package server

import (
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"drover/admin"
	"drover/coord"
	"drover/net/wire"
	"drover/store"
)

// gatedStore holds the store's batches while closed: BeforeCommit gives
// each batch made while the gate is closed a function that waits for it to
// open, and counts them. Batches are written in order, so the later ones
// wait too.
type gatedStore struct {
	mu     sync.Mutex
	gate   chan struct{} // nil: open
	gated  int           // batches made while closed
	events []admin.Event // OnEvent so far
}

func (g *gatedStore) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate, g.gated = make(chan struct{}), 0
}

func (g *gatedStore) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gate != nil {
		close(g.gate)
		g.gate = nil
	}
}

func (g *gatedStore) beforeCommit() func() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gate == nil {
		return nil
	}
	g.gated++
	gate := g.gate
	return func() { <-gate }
}

// waitGated waits until a batch was made while the gate is closed.
func (g *gatedStore) waitGated(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		g.mu.Lock()
		n := g.gated
		g.mu.Unlock()
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no store batch made while the gate was closed")
		}
		time.Sleep(5 * time.Millisecond) // polling with a deadline
	}
}

func (g *gatedStore) onEvent(ev admin.Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.events = append(g.events, ev)
}

// waitCount waits until n events of the kind were seen (events follow the
// step's acknowledgements and JOBs: they may come a moment after).
func (g *gatedStore) waitCount(t *testing.T, kind string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); g.count(kind) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d %s events within 10s, want %d", g.count(kind), kind, n)
		}
		time.Sleep(5 * time.Millisecond) // polling with a deadline
	}
}

// count counts the events of the given kind so far.
func (g *gatedStore) count(kind string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, ev := range g.events {
		if string(ev.Kind) == kind {
			n++
		}
	}
	return n
}

// TestHeldUntilDurable: with a store, a JOB does not leave, and the events
// of a step (job.submitted, job.dispatched, job.done) are not published,
// before the step's batch is durable; once it is they all go, with the
// acknowledgements, and job.done exactly once.
func TestHeldUntilDurable(t *testing.T) {
	g := &gatedStore{}
	st := openStore(t, filepath.Join(t.TempDir(), "store"), store.SyncAlways)
	t.Cleanup(func() { st.Close() })
	t.Cleanup(g.open) // a failure must not leave the store's writer waiting
	s, stop := runServer(t, Options{Store: st, BeforeCommit: g.beforeCommit, OnEvent: g.onEvent,
		Coord: coord.Config{Heartbeat: 2 * time.Second}}) // the silent client outlives the waits
	w := dial(t, s.PeersEndpoint())
	hello(t, w, wire.RoleWorker, "w1", 1)
	p := dial(t, s.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p1", 0)

	// The submit's step accepts the job and dispatches it: one batch.
	g.close()
	p.send(&wire.Submit{Req: 2, Jobs: []wire.SubmitItem{{Key: key("http://a.test/")}}})
	g.waitGated(t)
	if m, err := w.recvWithin(300 * time.Millisecond); err == nil {
		t.Fatalf("worker got %s %+v before the dispatch was durable", m.Command(), m)
	}
	if n := g.count("job.dispatched") + g.count("job.submitted"); n != 0 {
		t.Fatalf("%d job events published before their batch was durable", n)
	}
	g.open()
	expect[*wire.Submitted](t, p.recv())
	j := expect[*wire.Job](t, w.recv())
	if len(j.Jobs) != 1 || j.Jobs[0].Attempt != 1 {
		t.Fatalf("job %+v: want one job, attempt 1", j.Jobs)
	}
	g.waitCount(t, "job.submitted", 1)
	g.waitCount(t, "job.dispatched", 1)

	g.close()
	w.send(&wire.Result{Req: 3, Items: []wire.ResultItem{{JobID: j.Jobs[0].JobID, Attempt: j.Jobs[0].Attempt, Outcome: wire.OutcomeOK}}})
	g.waitGated(t)
	if m, err := w.recvWithin(300 * time.Millisecond); err == nil {
		t.Fatalf("worker got %s %+v before the result was durable", m.Command(), m)
	}
	if n := g.count("job.done"); n != 0 {
		t.Fatalf("job.done published %d times before the job's done record was durable", n)
	}
	g.open()
	expect[*wire.ResultOK](t, w.recv())
	g.waitCount(t, "job.done", 1)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"job.submitted", "job.dispatched", "job.done"} {
		if n := g.count(kind); n != 1 {
			t.Errorf("%s published %d times, want once", kind, n)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	seqs := make([]uint64, len(g.events))
	for i, ev := range g.events {
		seqs[i] = ev.Seq
	}
	if !slices.IsSorted(seqs) || len(slices.Compact(slices.Clone(seqs))) != len(seqs) {
		t.Fatalf("event seqs %v: want strictly increasing", seqs)
	}
}
