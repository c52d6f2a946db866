package worker

import (
	"context"
	"fmt"
	"sync"
)

// slots runs jobs on Options.Slots long-lived goroutines, in the order they
// came. A goroutine per job would start each on a small stack that the
// handler (an HTTP fetch, an HTML parse) grows by copying, job after job;
// a slot's goroutine keeps its stack.
type slots struct {
	mu     sync.Mutex
	cond   sync.Cond
	queue  []*task
	closed bool
}

// task is a job waiting for, or running in, a slot.
type task struct {
	ctx  context.Context
	j    Job
	r    *running // the session's record of the job (nil in tests)
	run  func(ctx context.Context, j Job) Result
	done func(t *task, res Result) // called once: with the handler's result, or "not started"
}

// finish reports how t ended.
func (t *task) finish(res Result) { t.done(t, res) }

// startSlots starts n slot goroutines.
func startSlots(n int) *slots {
	p := &slots{}
	p.cond.L = &p.mu
	for range n {
		go p.serve()
	}
	return p
}

// push queues t. A job cancelled while it waits (CANCEL, eviction,
// shutdown) is taken out with remove by whoever cancels it.
func (p *slots) push(t *task) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		go t.finish(Internal(fmt.Errorf("not started: %w", ErrShutdown)))
		return
	}
	p.queue = append(p.queue, t)
	p.cond.Signal()
}

// remove takes t out of the queue, reporting whether it was still there.
func (p *slots) remove(t *task) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, q := range p.queue {
		if q == t {
			p.queue = append(p.queue[:i], p.queue[i+1:]...)
			return true
		}
	}
	return false
}

// next waits for a task; nil once closed.
func (p *slots) next() *task {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.queue) == 0 && !p.closed {
		p.cond.Wait()
	}
	if p.closed {
		return nil
	}
	t := p.queue[0]
	p.queue[0] = nil
	p.queue = p.queue[1:]
	return t
}

func (p *slots) serve() {
	for t := p.next(); t != nil; t = p.next() {
		if t.ctx.Err() != nil {
			t.finish(Internal(fmt.Errorf("not started: %w", context.Cause(t.ctx))))
			continue
		}
		t.finish(t.run(t.ctx, t.j))
	}
}

// close ends the slot goroutines once their handlers return; jobs still
// queued are dropped (the worker is stopping).
func (p *slots) close() {
	p.mu.Lock()
	p.closed = true
	p.queue = nil
	p.mu.Unlock()
	p.cond.Broadcast()
}
