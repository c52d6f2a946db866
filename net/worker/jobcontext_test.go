package worker

import (
	"context"
	"drover/net/wire"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestJobContextCancelReachesDerived: cancelling a job's context cancels
// what a handler derived from it, and context.Cause says why at every
// level, while Err stays a context.Canceled.
func TestJobContextCancelReachesDerived(t *testing.T) {
	for _, cause := range []error{ErrCancelled, ErrShutdown, fmt.Errorf("%w: reason", ErrEvicted)} {
		t.Run(cause.Error(), func(t *testing.T) {
			var c jobContext
			child, cancel := context.WithTimeout(&c, time.Hour)
			defer cancel()
			grand, cancel2 := context.WithCancel(child)
			defer cancel2()
			if c.Err() != nil || child.Err() != nil || context.Cause(&c) != nil {
				t.Fatalf("cancelled before cancel: %v %v %v", c.Err(), child.Err(), context.Cause(&c))
			}
			c.cancel(cause)
			for name, ctx := range map[string]context.Context{"job": &c, "derived": child, "derived twice": grand} {
				select {
				case <-ctx.Done():
				default:
					t.Fatalf("%s context not done after cancel", name)
				}
				if !errors.Is(ctx.Err(), context.Canceled) {
					t.Errorf("%s: Err %v, want a context.Canceled", name, ctx.Err())
				}
				if got := context.Cause(ctx); !errors.Is(got, cause) || got.Error() != cause.Error() {
					t.Errorf("%s: cause %v, want %v", name, got, cause)
				}
			}
			c.cancel(ErrCancelled) // only the first counts
			if !errors.Is(context.Cause(&c), cause) {
				t.Fatalf("second cancel changed the cause to %v", context.Cause(&c))
			}
		})
	}
}

// TestJobContextDerivedEndsFirst: a derived context that ends before the
// job (a fetch's timeout, cancelled when the fetch returns) unregisters,
// and the job's own end cancels with context.Canceled.
func TestJobContextDerivedEndsFirst(t *testing.T) {
	var c jobContext
	for range 3 {
		_, cancel := context.WithTimeout(&c, time.Hour)
		cancel()
	}
	c.mu.Lock()
	n := len(c.afters)
	c.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d functions still registered after the derived contexts ended", n)
	}
	c.cancel(nil)
	if !errors.Is(c.Err(), context.Canceled) || !errors.Is(context.Cause(&c), context.Canceled) {
		t.Fatalf("Err %v, cause %v: want context.Canceled", c.Err(), context.Cause(&c))
	}
}

// TestJobContextAlreadyCancelled: Done before and after the cancel, and
// contexts or functions attached after it.
func TestJobContextAlreadyCancelled(t *testing.T) {
	var c jobContext
	c.cancel(ErrEvicted)
	<-c.Done() // cancelled before anyone asked for Done: a closed channel
	child, cancel := context.WithCancel(&c)
	defer cancel()
	<-child.Done()
	if !errors.Is(context.Cause(child), ErrEvicted) {
		t.Fatalf("cause %v, want ErrEvicted", context.Cause(child))
	}
	ran := make(chan struct{})
	stop := context.AfterFunc(&c, func() { close(ran) })
	<-ran
	if stop() {
		t.Fatal("stop reported it kept a function from running that ran")
	}
}

// TestJobContextAfterFunc: context.AfterFunc on a job's context runs once
// the job is cancelled, not before, and not at all once stopped.
func TestJobContextAfterFunc(t *testing.T) {
	var c jobContext
	ran := make(chan string, 2)
	context.AfterFunc(&c, func() { ran <- "kept" })
	stop := context.AfterFunc(&c, func() { ran <- "stopped" })
	if !stop() {
		t.Fatal("stop before the cancel reported nothing to stop")
	}
	select {
	case got := <-ran:
		t.Fatalf("%q ran before the cancel", got)
	default:
	}
	c.cancel(ErrCancelled)
	if got := <-ran; got != "kept" {
		t.Fatalf("ran %q, want kept", got)
	}
	select {
	case got := <-ran:
		t.Fatalf("%q ran too", got)
	case <-time.After(10 * time.Millisecond):
	}
}

// TestJobContextValue: the job's context carries its progress reporter
// and nothing else.
func TestJobContextValue(t *testing.T) {
	r := &reporter{run: wire.Run{JobID: 7, Attempt: 1}}
	c := jobContext{rep: r}
	if got := (&c).Value(progressKey{}); got != r {
		t.Fatalf("progress reporter %v, want %v", got, r)
	}
	child := context.WithValue(&c, struct{ k int }{1}, "v")
	if got, _ := child.Value(progressKey{}).(*reporter); got != r {
		t.Fatal("a derived context lost the progress reporter")
	}
	if c.Value("other") != nil {
		t.Fatal("a key the job context does not have has a value")
	}
	if d, ok := c.Deadline(); ok || !d.IsZero() {
		t.Fatalf("deadline %v %v, want none", d, ok)
	}
}

// TestJobContextConcurrent: contexts derived and ended while the job is
// cancelled (run with -race).
func TestJobContextConcurrent(t *testing.T) {
	var c jobContext
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				ctx, cancel := context.WithTimeout(&c, time.Hour)
				if c.Err() != nil {
					<-ctx.Done()
				}
				cancel()
			}
		}()
	}
	c.cancel(ErrShutdown)
	wg.Wait()
}

// TestJobContextDerivingAllocatesLess: what this type is for. Deriving a
// timeout context from a job's context and ending it allocates less than
// from the standard cancellable context it replaces (whose children map is
// made per job).
func TestJobContextDerivingAllocatesLess(t *testing.T) {
	derive := func(parent context.Context) {
		_, cancel := context.WithTimeout(parent, time.Hour)
		cancel()
	}
	std := testing.AllocsPerRun(200, func() {
		ctx, cancel := context.WithCancelCause(context.WithValue(context.Background(), progressKey{}, &reporter{}))
		derive(ctx)
		cancel(nil)
	})
	own := testing.AllocsPerRun(200, func() {
		r := &running{}
		r.ctx.rep = &r.rep
		derive(&r.ctx)
		r.ctx.cancel(nil)
	})
	if own >= std {
		t.Fatalf("job context and a derived timeout: %.0f allocations, the standard contexts %.0f", own, std)
	}
	t.Logf("allocations: job context %.0f, standard %.0f", own, std)
}
