package store

import (
	"fmt"
	"slices"
	"testing"
)

// TestMemosRoundTrip writes, replaces and deletes submit memos and reads
// back what is left, in key order; names with a NUL are refused and fail
// their batch.
func TestMemosRoundTrip(t *testing.T) {
	s := memT(t)
	commitT(t, s, func(b *Batch) error {
		for _, p := range []string{"producer/b", "producer/a", "producer/a/x"} {
			for req := uint64(1); req <= 2; req++ {
				if err := b.PutMemo(p, req, fmt.Appendf(nil, "%s %d", p, req)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	commitT(t, s, func(b *Batch) error {
		if err := b.PutMemo("producer/b", 2, []byte("replaced")); err != nil {
			return err
		}
		return b.DeleteMemo("producer/a", 1)
	})
	var got []string
	if err := s.ReadMemos(func(p string, req uint64, v []byte) error {
		got = append(got, fmt.Sprintf("%s|%d|%s", p, req, v))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"producer/a|2|producer/a 2", "producer/a/x|1|producer/a/x 1", "producer/a/x|2|producer/a/x 2",
		"producer/b|1|producer/b 1", "producer/b|2|replaced"}
	if !slices.Equal(got, want) {
		t.Fatalf("memos %q, want %q", got, want)
	}
	b := s.NewBatch()
	if err := b.PutMemo("bad\x00name", 1, nil); err == nil {
		t.Fatal("a producer name with NUL was taken")
	}
	if err := s.Commit(b); err == nil {
		t.Fatal("a batch with a refused memo committed")
	}
}
