package zsock

/*
#include <malloc.h>

// drv_tune_malloc keeps the C allocator from handing memory back to the
// kernel after every message (see below). It returns how many of the two
// settings took (glibc takes both), or -1 without glibc (other C libraries
// may lack them).
static int drv_tune_malloc(int mmap_threshold, int trim_threshold) {
#if defined(__GLIBC__) && defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)
	return mallopt(M_MMAP_THRESHOLD, mmap_threshold) + mallopt(M_TRIM_THRESHOLD, trim_threshold);
#else
	return -1;
#endif
}

// drv_trim_malloc hands the free pages of every arena back to the kernel
// (glibc's malloc_trim); 1 if it released some, 0 if none, -1 without
// glibc.
static int drv_trim_malloc(void) {
#if defined(__GLIBC__)
	return malloc_trim(0);
#else
	return -1;
#endif
}
*/
import "C"

import (
	"os"
	"strings"
	"sync"
)

// libzmq allocates each message it receives with malloc, in its I/O
// thread's arena, and the reactor frees it (zmq_msg_close) once copied
// into Go memory; and each message sent, which its I/O thread frees once
// written (a client's REQUEST of 1,000 keys: about 90 KB). A message of a
// batch of 1,000 keys is 60-80 KB: freed, it joined the top of the arena, which then passed glibc's trim
// threshold (128 KiB), so nearly every message ended in
// madvise(MADV_DONTNEED) and the next one faulted its pages back in:
// under a REQUEST+QUEUE load about a fifth of the server's CPU time, most
// of it in the kernel.
// glibc raises that threshold by itself only after freeing a message
// above its mmap threshold, which messages of this size never are.
//
// So: messages up to 1 MiB come from the arenas, and an arena keeps up to
// 2 MiB of free memory at its top. The cost is at most that much resident
// memory per arena that held messages (the I/O thread's, and those of the
// threads that send).
const (
	mallocMmapThreshold = 1 << 20
	mallocTrimThreshold = 2 << 20
)

var tuneOnce = sync.OnceValue(func() int {
	if operatorTuned() {
		return 0
	}
	return int(C.drv_tune_malloc(mallocMmapThreshold, mallocTrimThreshold))
})

// TuneAllocator sets the C allocator's thresholds above, once per
// process, and returns how many settings took: 2 with glibc, -1 without
// it, 0 when the operator set the allocator through the environment
// (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_ or a glibc.malloc
// tunable in GLIBC_TUNABLES), which is then left alone. The coordinator
// (net/server) calls it, and so does every connection of the Go clients
// and workers (net/internal/conn): a program that uses them gets these
// thresholds too (at most 2 MiB more resident per arena; a client of
// REQUEST+QUEUE batches spent a fifth of its ZeroMQ I/O thread's time in
// those page faults).
func TuneAllocator() int { return tuneOnce() }

func operatorTuned() bool {
	for _, v := range []string{"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"} {
		if _, ok := os.LookupEnv(v); ok {
			return true
		}
	}
	return strings.Contains(os.Getenv("GLIBC_TUNABLES"), "glibc.malloc.")
}

// TrimAllocator hands the C allocator's free memory back to the system
// (glibc's malloc_trim, which also releases whole free pages inside its
// arenas, not only at their tops): it returns 1 if that released some
// memory, 0 if none, -1 without glibc. A store's block cache (Pebble allocates its
// blocks and memtables with malloc) frees and allocates blocks of many
// sizes from every thread's arena; glibc hands back only the top of an
// arena, so the free chunks between live ones stay resident: a serve
// paging millions of queued jobs through its store held 80-120 MB of
// such free memory. A call takes the arenas' locks while it walks their
// free chunks: call it now and then, off the latency-critical goroutines.
func TrimAllocator() int { return int(C.drv_trim_malloc()) }
