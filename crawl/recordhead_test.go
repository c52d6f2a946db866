package crawl

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// stdHead is what encoding/json reads of the head.
func stdHead(b []byte) (RecordHead, error) {
	var h RecordHead
	err := json.Unmarshal(b, &h)
	return h, err
}

// ReadRecordHead agrees with encoding/json on every record AppendJSON
// writes (and takes the fast path for them), and on records written
// otherwise: spacing, key order, letter case, nesting, nulls, escapes,
// broken documents.
func TestReadRecordHead(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "é", "\"", "\\", "\n", "\x00", "<", "&", "\u2028", "\xff", "漢", "/", "\"status\":1,"}
	randStr := func() string {
		var sb strings.Builder
		for range rng.IntN(12) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return sb.String()
	}
	at := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	for i := range 3000 {
		r := Record{URL: randStr(), FinalURL: randStr(), Status: rng.IntN(700) - 50, ContentType: randStr(),
			Title: randStr(), Depth: rng.IntN(9), FetchMS: float64(rng.IntN(1e6)) / 1000, Worker: randStr(),
			FetchedAt: at, Outcome: Outcome(randStr()), Disallowed: rng.IntN(2) == 0, Refused: rng.IntN(2) == 0, Error: randStr()}
		b := r.AppendJSON(nil)
		want, err := stdHead(b)
		if err != nil {
			t.Fatalf("record %d: encoding/json: %v", i, err)
		}
		got, ok := scanRecordHead(b)
		if !ok {
			t.Fatalf("record %d %s: fast path refused an AppendJSON record", i, b)
		}
		if got != want {
			t.Fatalf("record %d %s:\n got %+v\nwant %+v", i, b, got, want)
		}
	}
	for _, doc := range []string{
		` { "status" : 200 , "url" : "http://a/" , "outcome":"ok" } `,
		`{"URL":"http://a/","status":200}`,
		`{"url":"http://a/","Status":404}`,
		`{"url":"a","extra":{"status":500},"status":200}`,
		`{"url":"a","list":[1,2],"status":200}`,
		`{"url":"a","disallowed":null}`,
		`{"url":"a","disallowed":true,"disallowed":false}`,
		`{"url":"a","refused":true}`,
		`{"url":"a","refused":null}`,
		`{"url":"a","refused":"yes"}`,
		`{"url":"a","Refused":true}`,
		`{"url":"\u0068ttp:\/\/a\/\n","outcome":"o\"k"}`,
		`{"url":"a","status":1.5}`,
		`{"url":"a","status":01}`,
		`{"url":"a","status":-7}`,
		`{"url":"a","status":"200"}`,
		`{"url":"a","status":true}`,
		`{"url":"a" "status":1}`,
		`{"url":"a",}`,
		`{"url":"a"}x`,
		`{"url":"a\q"}`,
		`{"url":"a\u12"}`,
		`{}`,
		``,
		`[]`,
		`{"url":"unterminated`,
	} {
		want, werr := stdHead([]byte(doc))
		got, gerr := ReadRecordHead([]byte(doc))
		if (werr != nil) != (gerr != nil) || werr == nil && got != want {
			t.Errorf("%s:\n got %+v, %v\nwant %+v, %v", doc, got, gerr, want, werr)
		}
	}
}

// BenchmarkRecordHead compares the fast path with encoding/json on a
// typical record (same run).
func BenchmarkRecordHead(b *testing.B) {
	rec := Record{URL: "http://a.test/p/123", FinalURL: "http://a.test/p/123", Status: 200, ContentType: "text/html; charset=utf-8",
		Title: "page 123", Depth: 3, LinksOut: 10, Bytes: 400, FetchMS: 0.351, Worker: "local-1", Attempt: 1,
		FetchedAt: time.Now().UTC(), Outcome: OK}.AppendJSON(nil)
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := stdHead(rec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			if _, err := ReadRecordHead(rec); err != nil {
				b.Fatal(err)
			}
		}
	})
}
