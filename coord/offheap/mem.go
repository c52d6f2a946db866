// Package offheap keeps big pointer-free tables outside the Go heap (issue
// 21): the ledger's records, index and URL bytes, the broker's job records
// and key index.
//
// The tables hold no pointer into the Go heap, so the garbage collector
// need not see them, and keeping them out of its heap keeps them out of its
// pacing: with 1M keys held, a heap of 100 MB would let the collector wait
// for another 100 MB of garbage before it runs, and the process would hold
// about twice what the tables need. Outside the heap, RSS is what the
// tables use plus a small Go heap.
//
// A small owner (the first 4 MiB) uses ordinary Go memory: tests make
// thousands of them. Beyond, chunks (Alloc) are carved from regions of at
// least 4 MiB (two huge pages: map_unix.go) that are never given back while
// the owner lives, and a table (Table) of 512 KiB or more and every block
// (Block) has a region of its own, given back by Release. When the owner
// becomes unreachable, a cleanup unmaps everything (nothing of this memory
// may be handed out beyond the owner).
package offheap

import (
	"runtime"
	"unsafe"
)

// Mem hands out zeroed, 8-byte aligned memory that holds no Go heap
// pointer. One goroutine uses it at a time.
type Mem struct {
	regions [][]byte // every mapped region still in use
	cur     []byte   // the unused end of the newest chunk region
	onHeap  int      // bytes handed out from the Go heap
	small   bool     // regions ask for no transparent huge pages (SmallPages)
}

const (
	regionMin = 4 << 20
	heapFirst = 4 << 20 // what an owner takes from the Go heap before mapping memory
	tableMin  = 512 << 10
)

// New returns memory for owner, unmapped once owner is unreachable.
func New[T any](owner *T) *Mem {
	m := &Mem{}
	runtime.AddCleanup(owner, func(m *Mem) { m.freeAll() }, m)
	return m
}

// SmallPages makes the regions mapped from now on ask the OS for no
// transparent huge pages (MADV_NOHUGEPAGE, even where THP is always on).
// By default a region of a huge page or more asks for them (MADV_HUGEPAGE,
// map_unix.go): probes and new records then miss the TLB and fault far
// less, but where THP defragmentation is on for such regions
// (defrag=madvise, the kernel's default) a fault may stall on memory
// compaction on a host whose memory is fragmented.
func (m *Mem) SmallPages() { m.small = true }

// Small says whether SmallPages was called.
func (m *Mem) Small() bool { return m.small }

// Alloc returns n zeroed bytes for a chunk that lives as long as the
// owner.
func (m *Mem) Alloc(n int) []byte {
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

// Block returns n zeroed bytes given back with Release: Go memory while
// the owner has taken less than the heap part (dropping it gives it back),
// then a region of its own.
func (m *Mem) Block(n int) []byte {
	n = (n + 7) &^ 7
	if m.onHeap+n <= heapFirst {
		m.onHeap += n
		return make([]byte, n)
	}
	return m.region(n)
}

// Table returns n zeroed bytes for a table given back with Release.
func (m *Mem) Table(n int) []byte {
	if n < tableMin {
		return make([]byte, n)
	}
	return m.region(n)
}

// region maps n zeroed bytes (rounded up to whole pages) of their own.
func (m *Mem) region(n int) []byte {
	r := mapRegion(n, !m.small)
	m.regions = append(m.regions, r)
	return r
}

// Release gives back what Table or Block returned (Go memory is left to the
// garbage collector). Nothing of it may be used after.
func (m *Mem) Release(r []byte) {
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

// Mapped is the memory mapped outside the Go heap (address space, touched
// or not), in bytes.
func (m *Mem) Mapped() int {
	n := 0
	for _, r := range m.regions {
		n += len(r)
	}
	return n
}

func (m *Mem) freeAll() {
	for _, r := range m.regions {
		unmapRegion(r)
	}
	m.regions, m.cur = nil, nil
}

// View is b seen as n values of T, a type whose alignment is at most 8 and
// that holds no pointer into the Go heap.
func View[T any](b []byte, n int) []T {
	var zero T
	if uintptr(len(b)) < uintptr(n)*unsafe.Sizeof(zero) {
		panic("offheap: memory too small for its view")
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}
