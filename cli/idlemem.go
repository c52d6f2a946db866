package cli

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/prometheus/procfs"

	"drover/net/zsock"
)

// serve gives memory back to the system; this is the one place that does,
// on two triggers.
//
// After a burst of work. A serve takes work in bursts: a producer sends a
// million keys, then nothing for a while. During the burst the Go heap
// grows to twice what is live before each collection (GOGC), and the C
// allocator keeps the buffers libzmq received messages into; both stay
// resident afterwards (at 1M requested keys, 15–25 B of RSS per key on top
// of the ledger's tables). Once a burst is over (an interval in which the
// heap allocated little, following one in which it allocated much) serve
// collects and returns every free page (debug.FreeOSMemory) and trims the
// C allocator's arenas (zsock.TrimAllocator). A serve that is busy or idle
// throughout never pays for it.
//
// When the memory outside the Go heap grew. A store's block cache and
// memtables live in C memory, and the free chunks their churn leaves
// between live ones stay resident (with paging, 80-120 MB of a
// 2,000,000-job drain, during which the heap is never quiet). When the
// process's resident memory outside what the Go runtime holds has grown
// by idleMemCGrowth since memory was last given back, serve trims the C
// allocator (no collection). A trim takes the arenas' locks while it walks
// their free chunks, so it runs only after such growth, not on a timer: a
// trim that finds the growth was live memory (a fuller cache, queued jobs'
// records) costs one walk per idleMemCGrowth.
const (
	idleMemEvery   = 250 * time.Millisecond
	idleMemQuiet   = 256 << 10 // allocated in an interval that counts as quiet
	idleMemBurst   = 16 << 20  // allocated since the last return that is worth returning
	idleMemCGrowth = 16 << 20  // growth outside the Go heap worth a trim
)

// memReturn is what returnIdleMemory does in an interval.
type memReturn int

const (
	returnNothing memReturn = iota
	returnCFree             // trim the C allocator
	returnAll               // collect, return the heap's free pages, trim
)

// idleReturn decides, interval after interval, when to return memory.
type idleReturn struct {
	last  uint64 // heap bytes allocated (cumulative) at the last interval
	since uint64 // allocated since memory was last returned
	cBase uint64 // resident outside the Go heap since the last return, at its lowest (0: not known)
}

// step takes the cumulative bytes the heap allocated so far and the
// resident bytes outside the Go heap (0: not known) and says what to
// return now. After a return, the caller reports what is resident then
// (returned).
func (r *idleReturn) step(allocated, cResident uint64) memReturn {
	d := allocated - r.last
	r.last = allocated
	r.since += d
	if d < idleMemQuiet && r.since >= idleMemBurst {
		r.since = 0
		return returnAll
	}
	if cResident == 0 {
		return returnNothing
	}
	if r.cBase == 0 || cResident < r.cBase {
		r.cBase = cResident
	}
	if cResident-r.cBase >= idleMemCGrowth {
		return returnCFree
	}
	return returnNothing
}

// returned notes the resident bytes outside the Go heap after memory was
// returned: growth is counted from there.
func (r *idleReturn) returned(cResident uint64) { r.cBase = cResident }

// memSamples are the runtime metrics returnIdleMemory reads.
var memSamples = []string{
	"/gc/heap/allocs:bytes",
	"/memory/classes/total:bytes",         // mapped by the Go runtime
	"/memory/classes/heap/released:bytes", // of which returned to the system
}

// returnIdleMemory returns memory on the triggers above until ctx ends.
func returnIdleMemory(ctx context.Context) {
	s := make([]metrics.Sample, len(memSamples))
	for i, n := range memSamples {
		s[i].Name = n
	}
	self, selfErr := procfs.Self()
	outsideGo := func() uint64 { // resident outside the Go heap; 0: not known
		if selfErr != nil {
			return 0
		}
		st, err := self.Stat()
		if err != nil {
			return 0
		}
		goHeld := s[1].Value.Uint64() - s[2].Value.Uint64()
		return uint64(max(int64(st.ResidentMemory())-int64(goHeld), 0))
	}
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
		switch r.step(s[0].Value.Uint64(), outsideGo()) {
		case returnNothing:
			continue
		case returnAll:
			debug.FreeOSMemory()
		}
		zsock.TrimAllocator()
		metrics.Read(s)
		r.returned(outsideGo())
	}
}
