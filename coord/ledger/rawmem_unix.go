//go:build unix

package ledger

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// mapRegion maps n bytes (rounded up to whole pages) of private anonymous
// memory: zeroed, and resident only once touched.
func mapRegion(n int) []byte {
	page := unix.Getpagesize()
	n = (n + page - 1) &^ (page - 1)
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		// As the Go runtime does when the OS refuses memory.
		panic(fmt.Sprintf("ledger: map %d bytes: %v", n, err))
	}
	return b
}

func unmapRegion(b []byte) { _ = unix.Munmap(b) }
