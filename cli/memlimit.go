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
	if residentJobs <= 0 || doneCache <= 0 {
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
