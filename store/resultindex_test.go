package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"drover/coord/id"
)

// resultModel is what a store holds of its results, for an oracle: every
// result kept, in cursor order, with its stored value's size.
type resultModel struct {
	crawler []string
	at      []time.Time
	size    []int64
	seq     []uint64
}

// TestResultTrimMatchesDrop: with chunks of a few results (so that trims
// go by the summaries, read chunks back, drop some crawlers' results of a
// chunk and merge what is left), every trim deletes exactly what
// Retention.Drop over every result kept would, by age and by size, with
// crawls of their own limits, finish times out of cursor order, and new
// results between trims.
func TestResultTrimMatchesDrop(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { resultTrimMatchesDrop(t, seed) })
	}
}

func resultTrimMatchesDrop(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 21))
	s, err := OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.results.size = 1 + rng.IntN(6)
	crawlers := []string{"a", "b", "c"}[:1+rng.IntN(3)]
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	var m resultModel
	var cursor uint64
	for round := range 12 {
		b := s.NewBatch()
		for range rng.IntN(60) {
			cursor++
			now = now.Add(time.Duration(rng.IntN(10)) * time.Second)
			// Finishes a little out of cursor order, now and then.
			at := now.Add(-time.Duration(rng.IntN(3)) * time.Second * time.Duration(rng.IntN(2)))
			r := ResultRecord{Cursor: cursor, Job: cursor, Key: id.Key{Crawler: crawlers[rng.IntN(len(crawlers))], Processor: "p", URL: "http://x/"},
				Outcome: "ok", At: at, Output: make([]byte, rng.IntN(40))}
			if err := b.PutResult(&r); err != nil {
				t.Fatal(err)
			}
			m.crawler, m.at, m.seq = append(m.crawler, r.Key.Crawler), append(m.at, at), append(m.seq, cursor)
			m.size = append(m.size, int64(len(encodeResult(nil, &r))))
		}
		done := make(chan error, 1)
		s.Apply(b, func(err error) { done <- err })
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		p := randomRetention(rng, crawlers)
		drop := make([]bool, len(m.seq))
		p.Drop(now, len(m.seq), func(i int) (string, time.Time, int64) { return m.crawler[i], m.at[i], m.size[i] }, drop)
		want := 0
		var next resultModel
		for i, d := range drop {
			if d {
				want++
				continue
			}
			next.crawler, next.at, next.size, next.seq = append(next.crawler, m.crawler[i]), append(next.at, m.at[i]), append(next.size, m.size[i]), append(next.seq, m.seq[i])
		}
		m = next
		n, kept, err := s.TrimResults(now, p)
		if err != nil {
			t.Fatal(err)
		}
		var got []uint64
		if err := s.ReadResults(0, ^uint64(0), func(r *ResultRecord) bool { got = append(got, r.Cursor); return true }); err != nil {
			t.Fatal(err)
		}
		if n != want || !slices.Equal(got, m.seq) {
			t.Fatalf("round %d, policy %+v: deleted %d, kept %v; want %d deleted, %v kept", round, p, n, got, want, m.seq)
		}
		var bytes int64
		for _, sz := range m.size {
			bytes += sz
		}
		if kept.Count != len(m.seq) || kept.Bytes != bytes || len(m.seq) > 0 && (kept.First != m.seq[0] || kept.Last != m.seq[len(m.seq)-1] || !kept.Oldest.Equal(m.at[0])) {
			t.Fatalf("round %d: kept %+v; want %d results of %d bytes from %v", round, kept, len(m.seq), bytes, m.seq)
		}
		if max := 2*len(m.seq)/s.results.size + 1; len(s.results.chunks) > max {
			t.Fatalf("round %d: %d results kept in %d chunks of %d, want at most %d (two chunks that fit in one are merged)",
				round, len(m.seq), len(s.results.chunks), s.results.size, max)
		}
	}
}

// randomRetention is a policy for crawlers: no limit, an age, a size, or
// both, for all and for some crawlers on their own.
func randomRetention(rng *rand.Rand, crawlers []string) *Retention {
	limits := func() ResultLimits {
		var l ResultLimits
		if rng.IntN(2) == 0 {
			l.MaxAge = time.Duration(1+rng.IntN(300)) * time.Second
		}
		if rng.IntN(2) == 0 {
			l.MaxBytes = int64(1 + rng.IntN(4000))
		}
		return l
	}
	p := &Retention{Default: limits()}
	for _, c := range crawlers {
		if rng.IntN(3) == 0 {
			if p.PerCrawler == nil {
				p.PerCrawler = map[string]ResultLimits{}
			}
			p.PerCrawler[c] = limits()
		}
	}
	return p
}

// TestResultIndexBounded: the retention index of a million results kept
// takes a few hundred chunks, not an entry per result (24 bytes each made
// it 48 MB for two million, growing with every job done).
func TestResultIndexBounded(t *testing.T) {
	s, err := OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 200_000
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for lo := 1; lo <= n; lo += 10_000 {
		b := s.NewBatch()
		for c := lo; c < lo+10_000; c++ {
			r := ResultRecord{Cursor: uint64(c), Job: uint64(c), Key: id.Key{Crawler: "c", Processor: "p", URL: "http://x/"}, Outcome: "ok", At: t0.Add(time.Duration(c) * time.Millisecond)}
			if err := b.PutResult(&r); err != nil {
				t.Fatal(err)
			}
		}
		done := make(chan error, 1)
		s.Apply(b, func(err error) { done <- err })
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	_, kept, err := s.TrimResults(t0.Add(time.Hour), &Retention{Default: ResultLimits{MaxBytes: 1 << 30}})
	if err != nil || kept.Count != n {
		t.Fatalf("trim: kept %+v, %v; want all %d", kept, err, n)
	}
	if got, max := len(s.results.chunks), n/resultChunkSize+1; got > max {
		t.Fatalf("%d results indexed in %d chunks, want at most %d", n, got, max)
	}
}
