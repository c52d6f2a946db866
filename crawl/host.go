package crawl

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// pruneFloor is the size of the host and robots tables above which
// entries nobody uses are dropped, so that a long crawl over many hosts
// keeps memory bounded by the hosts in use rather than all hosts seen.
const pruneFloor = 4096

// hostState is the politeness state of one host: a semaphore of PerHost
// fetch slots (nil when PerHost is 0: no limit) and the earliest time the
// next fetch may start.
type hostState struct {
	slots chan struct{}
	users int // fetches between hostFor and their done; guarded by Fetcher.mu

	mu         sync.Mutex
	next       time.Time // earliest start of the next fetch
	localKnown bool      // local is known (see Fetcher.isLocal)
	local      bool
}

// hostFor returns the state of a host, creating it on first use, and
// counts the caller as a user until it calls hostDone.
func (f *Fetcher) hostFor(name string) *hostState {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.hosts[name]
	if h == nil {
		if len(f.hosts) >= f.pruneHostsAt {
			f.pruneHosts()
		}
		h = &hostState{}
		if f.cfg.PerHost > 0 {
			h.slots = make(chan struct{}, f.cfg.PerHost)
		}
		f.hosts[name] = h
	}
	h.users++
	return h
}

// hostDone ends a use of h begun by hostFor.
func (f *Fetcher) hostDone(h *hostState) {
	f.mu.Lock()
	h.users--
	f.mu.Unlock()
}

// pruneHosts drops hosts that nobody uses and whose delay has passed:
// forgetting them changes nothing. Called with f.mu held.
func (f *Fetcher) pruneHosts() {
	now := f.clock.Now()
	for name, h := range f.hosts {
		h.mu.Lock()
		idle := h.users == 0 && !h.next.After(now)
		h.mu.Unlock()
		if idle {
			delete(f.hosts, name)
		}
	}
	f.pruneHostsAt = max(pruneFloor, 2*len(f.hosts))
}

// pruneRobots drops robots.txt entries that have expired. Called with
// f.mu held.
func (f *Fetcher) pruneRobots() {
	now := f.clock.Now()
	for origin, e := range f.robots {
		if !now.Before(e.expires) {
			delete(f.robots, origin)
		}
	}
	f.pruneRobotsAt = max(pruneFloor, 2*len(f.robots))
}

// acquire waits for a free slot on the host and then for the host's next
// start time, which it moves delay further on. Fetch starts on one host
// are so spaced at least delay apart, whatever the number of slots. It
// returns the function that frees the slot, or ctx's error (holding
// nothing) when ctx ends first.
func (h *hostState) acquire(ctx context.Context, clock Clock, delay time.Duration) (release func(), err error) {
	release = func() {}
	if h.slots != nil { // nil: no local limit
		select {
		case h.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("no free slot: %w", context.Cause(ctx))
		}
		release = func() { <-h.slots }
	}

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
