package worker

import (
	"context"
	"sync"
	"time"
)

// jobContext is a job's context. It lives in the job's record (running),
// carries the job's progress reporter, and is cancelled with a cause. It
// is a type of its own rather than context.WithCancelCause over
// context.WithValue for what a handler derives from it: a context made
// with context.WithTimeout (say, an HTTP fetch's) registers with its
// parent, and with a standard parent that means a map of children made for
// every job. jobContext implements AfterFunc instead, which the context
// package uses to link a child: one small registration, removed when the
// child ends.
//
// Once cancelled, Err returns the cause itself (wrapped so that
// errors.Is(err, context.Canceled) holds), and so context.Cause, which
// for a context of a type of its own answers Err, says why: ErrCancelled,
// ErrEvicted, ErrShutdown, or context.Canceled once the handler returned.
type jobContext struct {
	rep     *reporter
	mu      sync.Mutex
	done    chan struct{} // made by the first Done (or closedChan if cancelled first)
	err     error
	afters  []afterFunc // in afters0 while there is one
	afters0 [1]afterFunc
	nextID  uint64
}

// afterFunc is a function registered with AfterFunc.
type afterFunc struct {
	id uint64
	f  func()
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// cancelled is a job context's error: the cause, and context.Canceled.
type cancelled struct{ cause error }

func (e cancelled) Error() string   { return e.cause.Error() }
func (e cancelled) Unwrap() []error { return []error{e.cause, context.Canceled} }

func (c *jobContext) Deadline() (time.Time, bool) { return time.Time{}, false }

func (c *jobContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
	}
	return c.done
}

func (c *jobContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *jobContext) Value(key any) any {
	if _, ok := key.(progressKey); ok {
		return c.rep
	}
	return nil
}

// AfterFunc arranges for f to be called once c is cancelled (at once, in
// its own goroutine, if it already is); stop unregisters f, reporting
// whether that kept it from being called. The context package uses it to
// link the contexts derived from c.
func (c *jobContext) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	c.nextID++
	id := c.nextID
	if c.afters == nil {
		c.afters = c.afters0[:0]
	}
	c.afters = append(c.afters, afterFunc{id: id, f: f})
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, a := range c.afters {
			if a.id == id {
				c.afters = append(c.afters[:i], c.afters[i+1:]...)
				return true
			}
		}
		return false
	}
}

// cancel cancels c with cause (context.Canceled when nil); only the first
// call counts. The functions registered with AfterFunc are called here,
// outside the lock: they cancel derived contexts, which unregister.
func (c *jobContext) cancel(cause error) {
	if cause == nil {
		cause = context.Canceled
	}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = cancelled{cause}
	if c.done == nil {
		c.done = closedChan
	} else {
		close(c.done)
	}
	afters := c.afters
	c.afters = nil
	c.mu.Unlock()
	for _, a := range afters {
		a.f()
	}
}
