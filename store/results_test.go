package store

import (
	"bytes"
	"slices"
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
	n, kept, err := s.TrimResults(t0.Add(5*time.Minute), &Retention{Default: ResultLimits{MaxAge: 3 * time.Minute}})
	if err != nil || n != 2 || kept.First != 3 || kept.Count != 8 {
		t.Fatalf("trim by age: deleted %d, kept %+v, %v; want 2 deleted, 3..10 kept", n, kept, err)
	}
	// Size: keep what fits in 3 values.
	n, kept, err = s.TrimResults(t0, &Retention{Default: ResultLimits{MaxBytes: 3 * kept.Bytes / int64(kept.Count)}})
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

// TestResultsTrimPerCrawler: a crawl's own limits hold its results only;
// the default ones hold the others, whose sizes no longer include the
// crawl's; the deletions leave gaps in the cursors, which reads skip.
func TestResultsTrimPerCrawler(t *testing.T) {
	s, err := Open(Options{Path: t.TempDir(), Sync: SyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := s.NewBatch()
	// Cursors 1..12, one a minute: crawlers a, b, c in turn.
	crawlers := []string{"a", "b", "c"}
	for i := uint64(1); i <= 12; i++ {
		r := ResultRecord{Cursor: i, Job: i, Key: id.Key{Crawler: crawlers[(i-1)%3], Processor: "p", URL: "http://x/"},
			Outcome: "ok", At: t0.Add(time.Duration(i) * time.Minute), Output: bytes.Repeat([]byte{'x'}, 100)}
		if err := b.PutResult(&r); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	s.Apply(b, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	size := func() int64 { // one stored value
		_, kept, err := s.TrimResults(t0, &Retention{})
		if err != nil {
			t.Fatal(err)
		}
		return kept.Bytes / int64(kept.Count)
	}()
	// At t0+13m: a keeps 5 minutes (its 10 only: 1, 4, 7 are older), b
	// keeps one value (11), c and the others (none) share the default
	// of 10 minutes (3 is older; 6, 9, 12 kept).
	p := &Retention{
		Default:    ResultLimits{MaxAge: 10 * time.Minute},
		PerCrawler: map[string]ResultLimits{"a": {MaxAge: 5 * time.Minute}, "b": {MaxBytes: size}},
	}
	n, kept, err := s.TrimResults(t0.Add(13*time.Minute), p)
	if err != nil || n != 7 || kept.Count != 5 || kept.First != 6 || kept.Last != 12 {
		t.Fatalf("trim: deleted %d, kept %+v, %v; want 7 deleted, 5 kept from 6 to 12", n, kept, err)
	}
	var got []uint64
	if err := s.ReadResults(0, ^uint64(0), func(r *ResultRecord) bool { got = append(got, r.Cursor); return true }); err != nil {
		t.Fatal(err)
	}
	if want := []uint64{6, 9, 10, 11, 12}; !slices.Equal(got, want) {
		t.Fatalf("kept %v, want %v", got, want)
	}
	// The default size limit counts the crawls without their own: a and
	// c (6, 9, 10, 12) in two values keep 10 and 12; b's 11 stays.
	p.Default.MaxBytes = 2 * size
	if n, _, err = s.TrimResults(t0.Add(13*time.Minute), p); err != nil || n != 2 {
		t.Fatalf("trim by the default size: deleted %d, %v; want 2", n, err)
	}
	got = got[:0]
	if err := s.ReadResults(0, ^uint64(0), func(r *ResultRecord) bool { got = append(got, r.Cursor); return true }); err != nil {
		t.Fatal(err)
	}
	if want := []uint64{10, 11, 12}; !slices.Equal(got, want) {
		t.Fatalf("kept %v, want %v", got, want)
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
