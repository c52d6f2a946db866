package crawl

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// stdJSON is the record as encoding/json makes it with HTML escaping off.
func stdJSON(t testing.TB, r Record) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// AppendJSON makes exactly encoding/json's document, for ordinary records,
// every awkward string, and thousands of random ones.
func TestRecordAppendJSON(t *testing.T) {
	at := time.Date(2026, 11, 29, 21, 30, 0, 123456789, time.UTC)
	cases := []Record{
		{},
		{URL: "http://a.test/", FinalURL: "http://a.test/", Status: 200, ContentType: "text/html; charset=utf-8",
			Title: "Home & <friends>", Depth: 2, LinksOut: 10, Bytes: 1234, FetchMS: 0.351, Worker: "local-1",
			Attempt: 1, FetchedAt: at, Outcome: OK},
		{URL: "http://a.test/x?q=\"quoted\"&b=\\", Title: "tab\there\nnewline\r\x00\x01\x1f\x7f", Outcome: Internal,
			Error: "connection reset", FetchMS: 1e-7},
		{URL: "http://a.test/\u2028\u2029", Title: "bad utf8 \xff\xfe ok é 漢字 🚀", Disallowed: true, FetchMS: 1e21,
			Outcome: External, Status: -1, Bytes: -5},
		{FetchMS: 12345678.5, FetchedAt: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "é", "\"", "\\", "\n", "\x00", "\x1f", "<", "&", "\u2028", "\xff", "漢", "🚀", "\t", "/"}
	randStr := func() string {
		var sb strings.Builder
		for range rng.IntN(20) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return sb.String()
	}
	for range 2000 {
		cases = append(cases, Record{URL: randStr(), FinalURL: randStr(), Status: rng.IntN(600), ContentType: randStr(),
			Title: randStr(), Depth: rng.IntN(50), LinksOut: rng.IntN(500), Bytes: rng.Int64N(1 << 40),
			FetchMS: float64(rng.IntN(1e7)) / 1000, Worker: randStr(), Attempt: rng.IntN(5),
			FetchedAt: at.Add(time.Duration(rng.Int64N(1e15))), Outcome: Outcome(randStr()),
			Disallowed: rng.IntN(2) == 0, Error: randStr(), Canonical: randStr(),
			NoIndex: rng.IntN(2) == 0, NoFollow: rng.IntN(2) == 0, Parent: randStr(),
			WARCFile: randStr(), WARCOffset: rng.Int64N(3), WARCResponseOffset: rng.Int64N(1 << 40)})
	}
	for i, r := range cases {
		got, want := r.AppendJSON(nil), stdJSON(t, r)
		if !bytes.Equal(got, want) {
			t.Fatalf("case %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// BenchmarkRecordJSON compares AppendJSON with encoding/json (same run).
func BenchmarkRecordJSON(b *testing.B) {
	r := Record{URL: "http://a.test/p/123", FinalURL: "http://a.test/p/123", Status: 200, ContentType: "text/html; charset=utf-8",
		Title: "page 123", Depth: 3, LinksOut: 10, Bytes: 400, FetchMS: 0.351, Worker: "local-1", Attempt: 1,
		FetchedAt: time.Now().UTC(), Outcome: OK}
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			stdJSON(b, r)
		}
	})
	b.Run("append", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = r.AppendJSON(buf[:0])
		}
	})
}
