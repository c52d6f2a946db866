package job

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"drover/coord/broker"
	"drover/coord/id"
	"drover/crawl"
)

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
