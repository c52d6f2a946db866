package store

import (
	"path/filepath"
	"testing"
	"time"
)

// TestTakeClean: a store says it was closed cleanly only on the Open right
// after one that ended with MarkClean, under each sync policy; a close
// without the mark (what a crash leaves), or an Open in between, does not.
func TestTakeClean(t *testing.T) {
	for _, sync := range []Sync{SyncAlways, SyncBatch, SyncNone} {
		t.Run(string(sync), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "store")
			var s *Store
			open := func() {
				t.Helper()
				var err error
				if s, err = Open(Options{Path: path, Sync: sync, Log: quiet}); err != nil {
					t.Fatal(err)
				}
			}
			closeS := func() {
				t.Helper()
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			steps := []struct {
				mark bool // MarkClean before Close
				want bool // TakeClean of the Open that follows
			}{
				{false, false}, // closed without the mark
				{true, true},
				{false, false}, // closed without the mark after a clean start
				{true, true},
				{true, true},
			}
			open()
			if s.TakeClean() {
				t.Fatal("a new store: TakeClean true, want false")
			}
			for i, st := range steps {
				r := keyRec(i, KeyQueued, time.Unix(1_700_000_000, 0))
				commitT(t, s, func(b *Batch) error { return b.PutKey(&r) })
				if st.mark {
					if err := s.MarkClean(); err != nil {
						t.Fatal(err)
					}
				}
				closeS()
				open()
				if got := s.TakeClean(); got != st.want {
					t.Fatalf("step %d (marked %v): TakeClean %v, want %v", i, st.mark, got, st.want)
				}
				if s.TakeClean() {
					t.Fatalf("step %d: TakeClean true twice, want once", i)
				}
			}
			// The mark speaks for the next Open only.
			if err := s.MarkClean(); err != nil {
				t.Fatal(err)
			}
			closeS()
			open()
			closeS()
			open()
			if s.TakeClean() {
				t.Fatal("a mark two Opens back: TakeClean true, want false")
			}
			closeS()
		})
	}
}
