//go:build !linux

package zsock

// TuneAllocator leaves the C allocator as it is off Linux (the thresholds
// it sets are glibc's): it returns -1, as it does without glibc.
func TuneAllocator() int { return -1 }

// TrimAllocator does nothing off Linux (malloc_trim is glibc's): it
// returns -1, as it does without glibc.
func TrimAllocator() int { return -1 }
