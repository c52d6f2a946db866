package crawl

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// afterParent is a parent context with an AfterFunc method, as a
// worker's job context is: it counts the functions registered.
type afterParent struct {
	context.Context // Background: Value and Deadline
	mu              sync.Mutex
	done            chan struct{}
	err             error
	fs              map[int]func()
	next, added     int
}

func newAfterParent() *afterParent {
	return &afterParent{Context: context.Background(), done: make(chan struct{}), fs: map[int]func(){}}
}

func (p *afterParent) Done() <-chan struct{} { return p.done }

func (p *afterParent) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

func (p *afterParent) AfterFunc(f func()) func() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	p.added++
	id := p.next
	p.fs[id] = f
	return func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		_, ok := p.fs[id]
		delete(p.fs, id)
		return ok
	}
}

func (p *afterParent) cancel() {
	p.mu.Lock()
	p.err = context.Canceled
	close(p.done)
	fs := p.fs
	p.fs = nil
	p.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

func (p *afterParent) registered() (now, ever int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.fs), p.added
}

// A fetch's context with a timeout, under the values a fetch carries,
// links to a parent with AfterFunc through it (no goroutine per fetch),
// unlinks when it ends, and is cancelled with the parent.
func TestFetchContextLinksThroughAfterFunc(t *testing.T) {
	f := newFetcher(t, testConfig())
	p := newAfterParent()
	ctx := f.withGuard(WithSeed(p, "http://127.0.0.1/"), "http://127.0.0.1/a")
	if SeedOf(ctx) != "http://127.0.0.1/" || guarded(ctx) {
		t.Fatalf("values: seed %q, guarded %v; want the seed, not guarded (a loopback seed)", SeedOf(ctx), guarded(ctx))
	}
	child, cancel := context.WithTimeout(ctx, time.Hour)
	if now, ever := p.registered(); now != 1 || ever != 1 {
		t.Fatalf("after WithTimeout: %d functions registered with the parent (%d ever), want 1", now, ever)
	}
	cancel()
	if now, _ := p.registered(); now != 0 {
		t.Fatalf("after the child's cancel: %d functions still registered, want 0", now)
	}

	child, cancel = context.WithTimeout(ctx, time.Hour)
	defer cancel()
	p.cancel() // runs the registered functions before it returns
	select {
	case <-child.Done():
	default:
		t.Fatal("the parent was cancelled, the child is not done")
	}
	if !errors.Is(child.Err(), context.Canceled) {
		t.Fatalf("child.Err() = %v, want context.Canceled", child.Err())
	}
}

// Under a standard parent the child is one of its children, as with
// context.WithValue: cancelled with it at once.
func TestFetchContextUnderStandardParent(t *testing.T) {
	parent, cancelParent := context.WithCancelCause(context.Background())
	ctx := WithSeed(parent, "http://a.test/")
	child, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	stop := errors.New("stopped")
	cancelParent(stop)
	select {
	case <-child.Done():
	default:
		t.Fatal("the parent was cancelled, the child is not done")
	}
	if !errors.Is(context.Cause(child), stop) || !errors.Is(context.Cause(ctx), stop) {
		t.Fatalf("causes: child %v, value context %v; want %v", context.Cause(child), context.Cause(ctx), stop)
	}
	if SeedOf(child) != "http://a.test/" {
		t.Fatalf("SeedOf(child) = %q", SeedOf(child))
	}
}
