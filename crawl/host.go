package crawl

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// hostState is the politeness state of one host: a semaphore of PerHost
// fetch slots and the earliest time the next fetch may start.
type hostState struct {
	slots chan struct{}

	mu   sync.Mutex
	next time.Time // earliest start of the next fetch
}

// host returns the state of a host, creating it on first use.
func (f *Fetcher) host(name string) *hostState {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.hosts[name]
	if h == nil {
		h = &hostState{slots: make(chan struct{}, f.cfg.PerHost)}
		f.hosts[name] = h
	}
	return h
}

// acquire waits for a free slot on the host and then for the host's next
// start time, which it moves delay further on. Fetch starts on one host
// are so spaced at least delay apart, whatever the number of slots. It
// returns the function that frees the slot, or ctx's error (holding
// nothing) when ctx ends first.
func (h *hostState) acquire(ctx context.Context, clock Clock, delay time.Duration) (release func(), err error) {
	select {
	case h.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("no free slot: %w", context.Cause(ctx))
	}
	release = func() { <-h.slots }

	h.mu.Lock()
	now := clock.Now()
	start := now
	if h.next.After(start) {
		start = h.next
	}
	h.next = start.Add(delay)
	h.mu.Unlock()

	wait := start.Sub(now)
	if wait <= 0 {
		return release, nil
	}
	t := clock.NewTimer(wait)
	select {
	case <-t.C():
		return release, nil
	case <-ctx.Done():
		t.Stop()
		h.mu.Lock()
		if h.next.Equal(start.Add(delay)) { // nobody queued behind us: give the turn back
			h.next = start
		}
		h.mu.Unlock()
		release()
		return nil, fmt.Errorf("waiting %s for the host's politeness delay: %w", wait, context.Cause(ctx))
	}
}
