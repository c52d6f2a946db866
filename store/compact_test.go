package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"drover/coord/id"
)

func TestCompact(t *testing.T) {
	s, err := OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	b := s.NewBatch()
	fp := id.Key{Crawler: "c", Processor: "p", URL: "http://compact.test/"}.Fingerprint()
	if err := b.PutKey(&KeyRecord{FP: fp, State: KeyDone, At: time.Unix(1700000000, 0)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(context.Background()); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	if st, _, ok, err := s.LookupKey(fp); err != nil || !ok || st != KeyDone {
		t.Fatalf("after Compact, LookupKey = %v, %v, %v; want done", st, ok, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Compact after Close: %v, want ErrClosed", err)
	}
}
