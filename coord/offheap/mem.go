// Package offheap keeps big pointer-free tables outside the Go heap (issue
// 21). Two owners use it: the ledger (coord/ledger: its key records and
// waiters in chunks, its fingerprint index, its URLs in Strings) and the
// job broker (coord/broker: its job records in blocks, its key index, its
// URLs in Strings).
//
// The tables hold no pointer into the Go heap, so the garbage collector
// need not see them, and keeping them out of its heap keeps them out of its
// pacing: with 1M keys held, a heap of 100 MB would let the collector wait
// for another 100 MB of garbage before it runs, and the process would hold
// about twice what the tables need. Outside the heap, RSS is what the
// tables use plus a small Go heap.
//
// A small owner uses ordinary Go memory: its chunks (Alloc) and blocks
// (Block) come from the Go heap until it has taken 4 MiB of them (tests
// make thousands of owners), and so does every table (Table) under 512
// KiB. Beyond, chunks are carved from regions of at least 4 MiB (two huge
// pages: map_unix.go) that are never given back while the owner lives, and
// a table of 512 KiB or more and every further block has a region of its
// own, given back by Release. When the owner becomes unreachable, a
// cleanup unmaps everything (nothing of this memory may be handed out
// beyond the owner).
package offheap

import (
	"fmt"
	"reflect"
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
// whose only pointers, if any, are to T: links between records that the
// same owner keeps in its own memory (the broker's job lists), which the
// garbage collector need not see. View panics on a T with any other
// pointer (a string, a slice, a pointer to another type): what it points
// at would be collected while still in use.
func View[T any](b []byte, n int) []T {
	var zero T
	if t := reflect.TypeFor[T](); !pointerFree(t, t) || t.Align() > 8 {
		panic(fmt.Sprintf("offheap: a view of %v, which holds pointers to other types or is aligned to more than 8 bytes", t))
	}
	if uintptr(len(b)) < uintptr(n)*unsafe.Sizeof(zero) {
		panic("offheap: memory too small for its view")
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// pointerFree says whether a value of type t holds no pointer but to
// values of type self.
func pointerFree(t, self reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Array:
		return t.Len() == 0 || pointerFree(t.Elem(), self)
	case reflect.Pointer:
		return t.Elem() == self
	case reflect.Struct:
		for i := range t.NumField() {
			if !pointerFree(t.Field(i).Type, self) {
				return false
			}
		}
		return true
	}
	return false
}
