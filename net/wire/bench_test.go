package wire

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"drover/coord/id"
)

// Benchmarks of the codec on batches of the size drover sends: 100 jobs per
// SUBMIT, JOB and RESULT, 1000 keys per REQUEST. Each reports records/s; run
// with -benchmem to see that allocations do not grow with the batch.

func benchSubmit(n int) *Submit { return &Submit{Req: 1, Jobs: submitItems(n, 64)} }
func benchJob(n int) *Job {
	jobs := jobItems(n)
	return &Job{Jobs: jobs}
}
func benchResult(n, links int) *Result { return &Result{Req: 1, Items: resultItems(n, links)} }
func benchRequest(n int) *Request {
	keys := make([]id.Key, n)
	for i := range keys {
		keys[i] = key(i)
	}
	return &Request{Req: 1, Keys: keys}
}

func benchDecode(b *testing.B, m Message, records int) {
	frames := mustEncode(b, m)
	b.SetBytes(int64(len(frames[3])))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Decode(frames); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(records)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

func benchEncode(b *testing.B, m Message, records int) {
	var e Encoder
	frames, err := e.Encode(m)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(frames[3])))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := e.Encode(m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(records)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkDecodeSubmit100(b *testing.B)        { benchDecode(b, benchSubmit(100), 100) }
func BenchmarkDecodeJob100(b *testing.B)           { benchDecode(b, benchJob(100), 100) }
func BenchmarkDecodeResult100(b *testing.B)        { benchDecode(b, benchResult(100, 0), 100) }
func BenchmarkDecodeResult100Links10(b *testing.B) { benchDecode(b, benchResult(100, 10), 100) }
func BenchmarkDecodeRequest1000(b *testing.B)      { benchDecode(b, benchRequest(1000), 1000) }

func BenchmarkEncodeSubmit100(b *testing.B)        { benchEncode(b, benchSubmit(100), 100) }
func BenchmarkEncodeJob100(b *testing.B)           { benchEncode(b, benchJob(100), 100) }
func BenchmarkEncodeResult100(b *testing.B)        { benchEncode(b, benchResult(100, 0), 100) }
func BenchmarkEncodeResult100Links10(b *testing.B) { benchEncode(b, benchResult(100, 10), 100) }
func BenchmarkEncodeRequest1000(b *testing.B)      { benchEncode(b, benchRequest(1000), 1000) }

// BenchmarkEncodeAllocSubmit100 is the allocating Encode (fresh frames).
func BenchmarkEncodeAllocSubmit100(b *testing.B) {
	m := benchSubmit(100)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(100*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// TestDecodeAllocationsDoNotGrowWithBatch pins the allocation claim: a
// batch of 100 costs the same number of allocations as a batch of 2.
func TestDecodeAllocationsDoNotGrowWithBatch(t *testing.T) {
	for _, tt := range []struct {
		name       string
		small, big Message
		max        float64
	}{
		// message, reader, records, strings, headers (and links)
		{"SUBMIT", benchSubmit(2), benchSubmit(100), 5},
		{"JOB", benchJob(2), benchJob(100), 5},
		{"RESULT", benchResult(2, 3), benchResult(100, 3), 6},
		{"REQUEST", benchRequest(2), benchRequest(1000), 4},
	} {
		small, big := mustEncode(t, tt.small), mustEncode(t, tt.big)
		a := testing.AllocsPerRun(20, func() { _, _ = Decode(small) })
		z := testing.AllocsPerRun(20, func() { _, _ = Decode(big) })
		if a != z || z > tt.max {
			t.Errorf("%s: %v allocations for a small batch, %v for a big one; want equal and at most %v", tt.name, a, z, tt.max)
		}
		var e Encoder
		if _, err := e.Encode(tt.big); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(20, func() { _, _ = e.Encode(tt.big) }); n != 0 {
			t.Errorf("%s: Encoder.Encode allocates %v times per message, want 0", tt.name, n)
		}
	}
}

// benchVerdicts is a VERDICTS of n items as a REQUEST's answer: half ok
// (no reason), half no ("queued").
func benchVerdicts(n int) *Verdicts {
	items := make([]VerdictItem, n)
	for i := range items {
		items[i] = VerdictItem{Fingerprint: key(i).Fingerprint(), Verdict: VerdictOK}
		if i%2 == 1 {
			items[i].Verdict, items[i].Reason = VerdictNo, "queued"
		}
	}
	return &Verdicts{Req: 1, Items: items}
}

func BenchmarkDecodeVerdicts1000(b *testing.B) { benchDecode(b, benchVerdicts(1000), 1000) }
func BenchmarkEncodeVerdicts1000(b *testing.B) { benchEncode(b, benchVerdicts(1000), 1000) }

// BenchmarkEncodeRequestScattered encodes REQUESTs of 1,000 keys picked
// at random from a million, as a crawler's repeats are: their strings are
// far apart in memory, so the encoder's copies wait on cache misses.
func BenchmarkEncodeRequestScattered(b *testing.B) {
	all := make([]id.Key, 1_000_000)
	for i := range all {
		all[i] = id.Key{Crawler: "news", Processor: "html", URL: fmt.Sprintf("https://host-%d.example.com/section/%d/page-%d.html", i%97, i%1000, i)}
	}
	r := rand.New(rand.NewPCG(1, 2))
	batches := make([]*Request, 64)
	for i := range batches {
		keys := make([]id.Key, 1000)
		for j := range keys {
			keys[j] = all[r.IntN(len(all))]
		}
		batches[i] = &Request{Req: 1, Keys: keys}
	}
	var e Encoder
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if _, err := e.Encode(batches[i%len(batches)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(1000*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
