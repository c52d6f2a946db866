package ledger

import (
	"runtime"
	"unsafe"
)

// The ledger's big tables — records, waiters, URL bytes and the index —
// live outside the Go heap, in memory mapped from the operating system
// (rawmem_unix.go; elsewhere, ordinary Go memory). They hold no Go pointer,
// so the garbage collector need not see them, and keeping them out of its
// heap keeps them out of its pacing: with 1M keys held, a heap of 100 MB
// would let the collector wait for another 100 MB of garbage before it
// runs, and the process would hold about twice what the ledger needs.
// Outside the heap, RSS is what the tables use plus a small Go heap
// (issue 21: at most 128 bytes per requested key).
//
// A small ledger (the first 4 MiB) uses ordinary Go memory: tests make
// thousands of them. Beyond, slab chunks are carved from regions of at
// least 4 MiB (two huge pages: rawmem_unix.go) that are never given back
// while the ledger lives (slabs never shrink), and an index table of 512
// KiB or more has a region of its own, given back when it grows. When the Ledger becomes unreachable, a
// cleanup unmaps everything (a ledger is owned by one coordinator for its
// whole life; nothing of these tables is handed out).

// rawMem hands out zeroed, 8-byte aligned memory that holds no Go pointer.
type rawMem struct {
	regions [][]byte // every mapped region still in use
	cur     []byte   // the unused end of the newest slab region
	onHeap  int      // bytes handed out from the Go heap
}

const (
	regionMin = 4 << 20
	heapFirst = 4 << 20 // what a ledger takes from the Go heap before mapping memory
	tableMin  = 512 << 10
)

// newRawMem returns the memory of ledger l, unmapped once l is unreachable.
func newRawMem(l *Ledger) *rawMem {
	m := &rawMem{}
	runtime.AddCleanup(l, func(m *rawMem) { m.freeAll() }, m)
	return m
}

// alloc returns n zeroed bytes for a slab chunk.
func (m *rawMem) alloc(n int) []byte {
	n = (n + 7) &^ 7
	if m.onHeap+n <= heapFirst {
		m.onHeap += n
		return make([]byte, n)
	}
	if len(m.cur) < n {
		m.cur = m.region(max(regionMin, n))
	}
	b := m.cur[:n:n]
	m.cur = m.cur[n:]
	return b
}

// table returns n zeroed bytes for an index table, given back with
// release.
func (m *rawMem) table(n int) []byte {
	if n < tableMin {
		return make([]byte, n)
	}
	return m.region(n)
}

// region maps n zeroed bytes (rounded up to whole pages) of their own.
func (m *rawMem) region(n int) []byte {
	r := mapRegion(n)
	m.regions = append(m.regions, r)
	return r
}

// release gives back a table table returned (Go memory is left to the
// garbage collector).
func (m *rawMem) release(r []byte) {
	for i := range m.regions {
		if unsafe.SliceData(m.regions[i]) == unsafe.SliceData(r) {
			unmapRegion(m.regions[i])
			m.regions[i] = m.regions[len(m.regions)-1]
			m.regions[len(m.regions)-1] = nil
			m.regions = m.regions[:len(m.regions)-1]
			return
		}
	}
}

func (m *rawMem) freeAll() {
	for _, r := range m.regions {
		unmapRegion(r)
	}
	m.regions, m.cur = nil, nil
}

// viewAs is b seen as n values of T, a type without Go pointers whose
// alignment is at most 8.
func viewAs[T any](b []byte, n int) []T {
	var zero T
	if uintptr(len(b)) < uintptr(n)*unsafe.Sizeof(zero) {
		panic("ledger: raw memory too small for its view")
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}
