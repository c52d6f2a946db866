package cli

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"drover/net/zsock"
)

// A serve takes work in bursts: a producer sends a million keys, then
// nothing for a while. During the burst the Go heap grows to twice what
// is live before each collection (GOGC), and the C allocator keeps the
// buffers libzmq received messages into; both stay resident afterwards
// (at 1M requested keys, 15–25 B of RSS per key on top of the ledger's
// tables). Once a burst is over, serve gives that memory back: after an
// interval in which the heap allocated little, following one in which it
// allocated much, it collects and returns every free page
// (debug.FreeOSMemory) and trims the C allocator's arenas
// (zsock.TrimAllocator). A serve that is busy or idle throughout never
// pays for it.
const (
	idleMemEvery = 250 * time.Millisecond
	idleMemQuiet = 256 << 10 // allocated in an interval that counts as quiet
	idleMemBurst = 16 << 20  // allocated since the last return that is worth returning
)

// idleReturn decides, interval after interval, when to return memory.
type idleReturn struct {
	last  uint64 // heap bytes allocated (cumulative) at the last interval
	since uint64 // allocated since memory was last returned
}

// step takes the cumulative bytes the heap allocated so far and says
// whether memory is to be returned now.
func (r *idleReturn) step(allocated uint64) bool {
	d := allocated - r.last
	r.last = allocated
	r.since += d
	if d < idleMemQuiet && r.since >= idleMemBurst {
		r.since = 0
		return true
	}
	return false
}

// returnIdleMemory returns memory after each burst of work (above) until
// ctx ends.
func returnIdleMemory(ctx context.Context) {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	var r idleReturn
	metrics.Read(s)
	r.last = s[0].Value.Uint64()
	t := time.NewTicker(idleMemEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(s)
		if r.step(s[0].Value.Uint64()) {
			debug.FreeOSMemory()
			zsock.TrimAllocator()
		}
	}
}
