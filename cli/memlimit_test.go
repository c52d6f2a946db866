package cli

import "testing"

// TestMemoryLimit: a serve that bounds both its queued jobs and its done
// keys in memory gets a limit that grows with the bounds; one that bounds
// either not at all gets none.
func TestMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		resident, done int
		want           int64
	}{
		{0, 1_000_000, 0},
		{100_000, 0, 0},
		{-1, 10, 0},
		{100_000, 1_000_000, 80<<20 + 100_000*512 + 1_000_000*64}, // make frontier's serve: 190 MiB
		{1_000_000, 1_000_000, 80<<20 + 1_000_000*512 + 1_000_000*64},
	} {
		if got := memoryLimit(c.resident, c.done); got != c.want {
			t.Errorf("memoryLimit(%d, %d) = %d, want %d", c.resident, c.done, got, c.want)
		}
	}
}

// TestStoreCacheBytes: a serve that bounds both its queued jobs and its
// done keys in memory opens its store with the small block cache; one that
// bounds either not at all keeps the store's default.
func TestStoreCacheBytes(t *testing.T) {
	for _, c := range []struct {
		resident, done int
		want           int64
	}{
		{0, 1_000_000, 0},
		{100_000, 0, 0},
		{100_000, 1_000_000, boundedCacheBytes},
	} {
		if got := storeCacheBytes(c.resident, c.done); got != c.want {
			t.Errorf("storeCacheBytes(%d, %d) = %d, want %d", c.resident, c.done, got, c.want)
		}
	}
}
