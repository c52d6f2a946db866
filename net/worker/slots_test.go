package worker

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"drover/net/wire"
)

// At most n jobs run at once, in the order they came, each reported once.
// Every handler holds its slot until the test lets one go, so the check is
// made with the slots full each time, not left to timing.
func TestSlotsBoundAndOrder(t *testing.T) {
	const n, jobs = 3, 60
	p := startSlots(n)
	defer p.close()
	var running atomic.Int32
	var mu sync.Mutex
	var started []uint64
	release := make(chan struct{})
	results := make(chan uint64, jobs)
	for i := range jobs {
		p.push(&task{ctx: context.Background(), j: Job{ID: uint64(i)},
			run: func(ctx context.Context, j Job) Result {
				mu.Lock()
				started = append(started, j.ID)
				mu.Unlock()
				running.Add(1)
				<-release
				running.Add(-1)
				return OK([]byte{byte(j.ID)})
			},
			done: func(_ *task, r Result) { results <- uint64(r.Output[0]) }})
	}
	seen := map[uint64]bool{}
	for left := jobs; left > 0; left-- {
		// The slots fill up to n (fewer at the end), and no further.
		want := int32(min(n, left))
		for deadline := time.Now().Add(5 * time.Second); running.Load() != want; {
			if running.Load() > n || time.Now().After(deadline) {
				t.Fatalf("%d jobs running with %d left, want %d", running.Load(), left, want)
			}
			runtime.Gosched() // polling with a deadline
		}
		mu.Lock()
		if len(started) != jobs-left+int(want) {
			t.Fatalf("%d jobs started with %d running and %d done, want %d", len(started), want, jobs-left, jobs-left+int(want))
		}
		mu.Unlock()
		release <- struct{}{}
		select {
		case id := <-results:
			if seen[id] {
				t.Fatalf("job %d reported twice", id)
			}
			seen[id] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of %d jobs reported within 5s", len(seen), jobs)
		}
	}
	// Slots take jobs in order: a job never starts before one queued n or
	// more places ahead of it.
	for i, id := range started {
		if int(id) > i+n-1 || int(id) < i-n+1 {
			t.Fatalf("job %d started %dth: not in queue order", id, i)
		}
	}
}

// A job cancelled while it waits for a slot is reported at once as not
// started, with its cause, and never runs.
func TestSlotsCancelWhileQueued(t *testing.T) {
	p := startSlots(1)
	defer p.close()
	release := make(chan struct{})
	p.push(&task{ctx: context.Background(), run: func(context.Context, Job) Result { <-release; return OK(nil) }, done: func(*task, Result) {}})
	ctx, cancel := context.WithCancelCause(context.Background())
	got := make(chan Result, 1)
	ran := atomic.Bool{}
	queued := &task{ctx: ctx, run: func(context.Context, Job) Result { ran.Store(true); return OK(nil) }, done: func(_ *task, r Result) { got <- r }}
	p.push(queued)
	// What session.cancelJob does.
	cancel(ErrCancelled)
	if p.remove(queued) {
		queued.finish(Internal(fmt.Errorf("not started: %w", ErrCancelled)))
	}
	select {
	case r := <-got:
		if r.outcome() != wire.OutcomeInternal {
			t.Fatalf("outcome %v, want internal", r.outcome())
		}
		if r.Error != "not started: "+ErrCancelled.Error() {
			t.Fatalf("error %q, want not started with the cause", r.Error)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a job cancelled in the queue was not reported while the slot stayed busy")
	}
	close(release)
	if ran.Load() {
		t.Fatal("the cancelled job ran")
	}
}
