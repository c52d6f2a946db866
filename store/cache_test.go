package store

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"drover/coord/id"
)

// Lookups are served from the block cache. Pebble charges its memtables to
// the block cache; sized as CacheBytes alone (64 MiB against two 32 MiB
// memtables) the cache held nothing, and every lookup read a filter block
// from disk.
func TestLookupsUseTheBlockCache(t *testing.T) {
	// Scaled down: 1 MiB memtables and a 2 MiB cache, as 32 MiB memtables
	// are to the default 64 MiB.
	st, err := Open(Options{Path: t.TempDir(), Sync: SyncNone, CacheBytes: 2 << 20, MemTableBytes: 1 << 20, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Written as a busy store is, batch after batch, until Pebble has
	// rotated and flushed memtables.
	const n, per = 40_000, 2_000
	applied := make(chan error, n/per)
	for lo := 0; lo < n; lo += per {
		bt := st.NewBatch()
		for i := lo; i < lo+per; i++ {
			k := id.Key{Crawler: "c", Processor: "p", URL: fmt.Sprintf("http://d.test/%d", i)}
			if err := bt.PutKey(&KeyRecord{FP: k.Fingerprint(), Key: k, State: KeyDone, At: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		st.Apply(bt, func(err error) { applied <- err })
	}
	for range n / per {
		if err := <-applied; err != nil {
			t.Fatal(err)
		}
	}
	lookup := func() {
		for i := range 2000 {
			k := id.Key{Crawler: "c", Processor: "p", URL: fmt.Sprintf("http://d.test/%d", i*7)}
			if _, _, ok, err := st.LookupKey(k.Fingerprint()); err != nil || !ok {
				t.Fatalf("lookup %d: ok %v, %v", i, ok, err)
			}
			miss := id.Key{Crawler: "c", Processor: "p", URL: fmt.Sprintf("http://miss.test/%d", i)}
			if _, _, ok, err := st.LookupKey(miss.Fingerprint()); err != nil || ok {
				t.Fatalf("lookup of an unknown key: ok %v, %v", ok, err)
			}
		}
	}
	lookup()
	before := st.db.Metrics().BlockCache
	lookup()
	after := st.db.Metrics().BlockCache
	hits, misses := after.Hits-before.Hits, after.Misses-before.Misses
	if after.Count == 0 || hits == 0 || misses > hits/10 {
		t.Fatalf("second round of lookups: %d block cache hits, %d misses, %d blocks cached: want them served from the cache", hits, misses, after.Count)
	}
}
