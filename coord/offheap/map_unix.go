//go:build unix

package offheap

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// mapRegion maps n bytes (rounded up to whole pages) of private anonymous
// memory: zeroed, and resident only once touched.
//
// With huge set, a region of a huge page or more asks for transparent
// huge pages (MADV_HUGEPAGE; a hint, ignored where they are off); without,
// it asks for none (MADV_NOHUGEPAGE: Mem.SmallPages). An index is probed
// at random and slabs fill a page after another, so with 4 KiB pages
// most probes of a big ledger missed the TLB and each new page of records
// cost a page fault. Both halved what a request of a new key costs at 1M
// keys. The cost: up to one huge page per table in use beyond what is
// touched (the unused end of the newest chunk region), a few bytes per key.
func mapRegion(n int, huge bool) []byte {
	page := unix.Getpagesize()
	n = (n + page - 1) &^ (page - 1)
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		// As the Go runtime does when the OS refuses memory.
		panic(fmt.Sprintf("offheap: map %d bytes: %v", n, err))
	}
	switch {
	case !huge:
		_ = unix.Madvise(b, unix.MADV_NOHUGEPAGE) // refused where THP is off: small pages all the same
	case n >= hugePage:
		_ = unix.Madvise(b, unix.MADV_HUGEPAGE) // a hint: where it is refused, small pages serve
	}
	return b
}

// hugePage is the size of a transparent huge page on x86-64 and arm64
// with 4 KiB pages.
const hugePage = 2 << 20

func unmapRegion(b []byte) { _ = unix.Munmap(b) }
