package job

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"drover/admin"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/crawl"
	"drover/net/worker"
)

// fetchFunc is a Fetcher made of a function.
type fetchFunc func(ctx context.Context, u string) crawl.Page

func (f fetchFunc) Fetch(ctx context.Context, u string) crawl.Page { return f(ctx, u) }

// Mark's function returns only once every record added before the mark is
// in the results file (what a store batch waits for: see
// server.Options.BeforeCommit), and at once when the writer has stopped.
func TestSinkMarkWaitsForTheRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "pages.jsonl")
		w, err := crawl.OpenJSONL(path)
		if err != nil {
			t.Fatal(err)
		}
		s := newSink(w, false) // its writer is started below
		for i, u := range []string{"http://a.test/", "http://a.test/b"} {
			rec := crawl.Record{URL: u, FinalURL: u, Status: 200, Outcome: crawl.OK}
			s.Add(broker.Finished{Job: broker.JobID(i + 1), Key: id.Key{Crawler: "c", Processor: "p", URL: u}, Output: rec.AppendJSON(nil)})
		}
		wait := s.Mark()
		returned := make(chan struct{})
		go func() {
			wait()
			close(returned)
		}()
		synctest.Wait() // the waiter is blocked for good: nothing writes
		select {
		case <-returned:
			t.Fatal("the mark's wait returned before its records were written")
		default:
		}

		go s.run()
		<-returned
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "\n"); n != 2 {
			t.Fatalf("results file has %d records when the wait returned, want 2:\n%s", n, b)
		}

		later := s.Mark() // nothing added since: returns at once
		later()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s.Add(broker.Finished{Job: 3, Failed: true}) // after the writer stopped: never written
		s.Mark()()                                   // but waiting for it must not hang
	})
}

// Pages the private-address guard refused are counted apart (fast path and
// kept records alike) and the summary says how many.
func TestSinkCountsRefused(t *testing.T) {
	for _, keep := range []bool{false, true} {
		s := NewSink(nil, keep)
		ok := crawl.Record{URL: "http://a.test/", Status: 200, Outcome: crawl.OK}
		refused := crawl.Record{URL: "http://internal.test/", Outcome: crawl.OK, Refused: true, Error: "refused: internal.test resolves to 10.0.0.1"}
		for i, r := range []crawl.Record{ok, refused} {
			s.Add(broker.Finished{Job: broker.JobID(i + 1), Key: id.Key{Crawler: "c", Processor: "p", URL: r.URL}, Output: r.AppendJSON(nil)})
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		s.Summary(&out, admin.Totals{}, time.Second, true)
		pages, _, failed := s.Counts()
		if s.Refused() != 1 || pages != 1 || failed != 0 || !strings.Contains(out.String(), "refused:           1 on private addresses") {
			t.Errorf("keep=%v: refused %d, pages %d, failed %d, summary:\n%s\nwant 1 refused, 1 page, the summary saying so", keep, s.Refused(), pages, failed, out.String())
		}
	}
}

// The handler tells the fetcher which crawl a job belongs to (its seed),
// which the private-address guard judges by.
func TestHandlerFetchesWithTheSeed(t *testing.T) {
	var got string
	f := fetchFunc(func(ctx context.Context, u string) crawl.Page {
		got = crawl.SeedOf(ctx)
		return crawl.Page{URL: u, Outcome: crawl.OK}
	})
	h := Handler(f, crawl.DefaultConfig("test"), "w")
	h(context.Background(), worker.Job{Key: id.Key{Crawler: Crawler, Processor: Processor, URL: "http://a.test/x"},
		Payload: []byte(`{"depth":2,"seed":"http://a.test/"}`)})
	if got != "http://a.test/" {
		t.Fatalf("fetched with seed %q, want the payload's http://a.test/", got)
	}
}
