package cli

import "testing"

// TestMemorySizing: a serve that bounds both its queued jobs and its done
// keys in memory gets a soft memory limit that grows with the bounds and
// the small block cache and memtables; one that bounds either not at all gets no limit
// and the store's default cache.
func TestMemorySizing(t *testing.T) {
	for _, c := range []struct {
		resident, done int
		limit, cache   int64
		memTable       int64
	}{
		{0, 1_000_000, 0, 0, 0},
		{100_000, 0, 0, 0, 0},
		{-1, 10, 0, 0, 0},
		{100_000, 1_000_000, 80<<20 + 100_000*512 + 1_000_000*64, boundedCacheBytes, boundedMemTableBytes}, // make frontier's serve: 190 MiB
		{1_000_000, 1_000_000, 80<<20 + 1_000_000*512 + 1_000_000*64, boundedCacheBytes, boundedMemTableBytes},
	} {
		if got := memoryLimit(c.resident, c.done); got != c.limit {
			t.Errorf("memoryLimit(%d, %d) = %d, want %d", c.resident, c.done, got, c.limit)
		}
		if cache, mt := storeSizes(c.resident, c.done); cache != c.cache || mt != c.memTable {
			t.Errorf("storeSizes(%d, %d) = %d, %d, want %d, %d", c.resident, c.done, cache, mt, c.cache, c.memTable)
		}
	}
}
