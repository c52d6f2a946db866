package store

import (
	"bytes"
	"testing"
	"time"

	"drover/coord/id"
)

func TestResultsRoundTripAndTrim(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Path: dir, Sync: SyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := s.NewBatch()
	for i := uint64(1); i <= 10; i++ {
		r := ResultRecord{Cursor: i, Job: 100 + i, Key: id.Key{Crawler: "c", Processor: "p", URL: "http://x/" + string(rune('a'+i))},
			Outcome: "ok", Attempt: 1, Worker: "w", At: t0.Add(time.Duration(i) * time.Minute), Output: bytes.Repeat([]byte{byte(i)}, 100)}
		if err := b.PutResult(&r); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	s.Apply(b, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(Options{Path: dir}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	last, err := s.LastResultCursor()
	if err != nil || last != 10 {
		t.Fatalf("LastResultCursor = %d, %v; want 10", last, err)
	}
	var got []uint64
	if err := s.ReadResults(3, 7, func(r *ResultRecord) bool {
		if r.Job != 100+r.Cursor || len(r.Output) != 100 || r.Output[0] != byte(r.Cursor) || r.Key.Crawler != "c" {
			t.Errorf("result %d read back as %+v", r.Cursor, r)
		}
		got = append(got, r.Cursor)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0] != 4 || got[3] != 7 {
		t.Fatalf("ReadResults(3, 7] = %v, want 4..7", got)
	}
	// Older than 3 minutes at t0+5m: cursors 1 and 2.
	n, kept, err := s.TrimResults(t0.Add(5*time.Minute), 3*time.Minute, 0)
	if err != nil || n != 2 || kept.First != 3 || kept.Count != 8 {
		t.Fatalf("trim by age: deleted %d, kept %+v, %v; want 2 deleted, 3..10 kept", n, kept, err)
	}
	// Size: keep what fits in 3 values.
	n, kept, err = s.TrimResults(t0, 0, 3*kept.Bytes/int64(kept.Count))
	if err != nil || n != 5 || kept.First != 8 || kept.Last != 10 {
		t.Fatalf("trim by size: deleted %d, kept %+v, %v; want 5 deleted, 8..10 kept", n, kept, err)
	}
	got = got[:0]
	if err := s.ReadResults(0, ^uint64(0), func(r *ResultRecord) bool { got = append(got, r.Cursor); return true }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != 8 {
		t.Fatalf("after trims: %v, want 8 9 10", got)
	}
	if last, _ := s.LastResultCursor(); last != 10 {
		t.Fatalf("LastResultCursor after trims = %d, want 10 (cursors are never reused)", last)
	}
}

func TestResultRefused(t *testing.T) {
	s, err := OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.NewBatch()
	if err := b.PutResult(&ResultRecord{At: time.Now()}); err == nil {
		t.Fatal("PutResult with cursor 0: no error")
	}
}

func FuzzDecodeResult(f *testing.F) {
	r := ResultRecord{Cursor: 1, Job: 2, Key: id.Key{Crawler: "c", Processor: "p", URL: "u"}, Outcome: "ok", At: time.Unix(1, 0), Output: []byte("out")}
	f.Add(encodeResult(nil, &r))
	f.Add([]byte{resultVersion})
	f.Fuzz(func(t *testing.T, v []byte) {
		var got ResultRecord
		if decodeResult(v, &got) != nil {
			return
		}
		again := encodeResult(nil, &got)
		var back ResultRecord
		if err := decodeResult(again, &back); err != nil {
			t.Fatalf("re-encoded %x does not decode: %v", again, err)
		}
	})
}
