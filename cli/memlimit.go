package cli

import (
	"log/slog"
	"os"
	"runtime/debug"
)

// Memory a durable serve needs, for its soft memory limit (issue 21).
const (
	memLimitBase     = 80 << 20 // the runtime, sockets, a step's buffers, the submit memo, the key filter
	memLimitPerJob   = 512      // a queued job in memory (store.resident_jobs), with room to spare
	memLimitPerDoneK = 64       // a done key in memory (store.done_cache)
)

// boundedCacheBytes is the store's block cache (Pebble's, on top of its
// memtables' share) in a serve that bounds both the queued jobs and the
// done keys it keeps in memory, instead of store.DefaultCacheBytes (64
// MiB). The block cache and the memtables live in C memory, which the soft
// memory limit does not see; such a serve's reads are mostly one pass over
// the queued jobs' records (paging them in) and the filter and index blocks
// of key lookups (a few MiB for millions of keys), so a larger cache buys
// little. Measured (2,000,000 jobs drained, 100,000 resident): the 64 MiB
// cache held 95 MiB of blocks (the memtables' unused share), with serve at
// 410-420 MB RSS.
const boundedCacheBytes = 16 << 20

// boundedMemTableBytes is each of Pebble's memtables in such a serve,
// instead of store.DefaultMemTableBytes (32 MiB). Pebble's C memory is at
// most its block cache plus three memtables (their reserve, which blocks
// use while the memtables do not): 16 + 3 × 32 = 112 MiB with the default
// memtables, 16 + 3 × 16 = 64 MiB with these. Measured (2,000,000 jobs
// drained, 100,000 resident, 32 MiB memtables): the cache held 50 MB of
// blocks beside a 32-64 MB memtable, with serve past 400 MB RSS.
const boundedMemTableBytes = 16 << 20

// storeSizes are the block cache and the memtable size of a serve's
// store: boundedCacheBytes and boundedMemTableBytes when it bounds both
// the queued jobs and the done keys in memory (as memoryLimit), 0 (the
// store's defaults) otherwise.
func storeSizes(residentJobs, doneCache int) (cache, memTable int64) {
	if !boundsBoth(residentJobs, doneCache) {
		return 0, 0
	}
	return boundedCacheBytes, boundedMemTableBytes
}

// boundsBoth reports whether a serve keeps both its queued jobs and its
// done keys in memory bounded (store.resident_jobs, store.done_cache): its
// memory is then sized by memoryLimit and storeCacheBytes.
func boundsBoth(residentJobs, doneCache int) bool { return residentJobs > 0 && doneCache > 0 }

// memoryLimit is the soft memory limit (runtime/debug.SetMemoryLimit) of a
// serve on a durable store that bounds both the queued jobs and the done
// keys it keeps in memory: what those bounds let it hold, with room to
// spare. The Go runtime's default lets the heap grow to twice what is live
// before it collects, which a serve taking in millions of jobs turns into
// hundreds of megabytes it does not need; with a limit the collector runs
// sooner as the heap nears it, and returns freed memory to the system. It
// is 0 (no limit) when either bound is off: memory then grows with the
// work, and a limit would only make the collector run without end.
func memoryLimit(residentJobs, doneCache int) int64 {
	if !boundsBoth(residentJobs, doneCache) {
		return 0
	}
	return memLimitBase + int64(residentJobs)*memLimitPerJob + int64(doneCache)*memLimitPerDoneK
}

// setMemoryLimit gives the runtime memoryLimit's limit, unless GOMEMLIMIT
// names one (the runtime's own setting wins), and logs what it set.
func setMemoryLimit(log *slog.Logger, residentJobs, doneCache int) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if l := memoryLimit(residentJobs, doneCache); l > 0 {
		debug.SetMemoryLimit(l)
		log.Info("soft memory limit", "bytes", l, "from", "store.resident_jobs and store.done_cache (GOMEMLIMIT overrides)")
	}
}
