package server

import (
	"testing"
	"time"

	"drover/admin"
	"drover/coord/broker"
	"drover/coord/id"
)

// fakeClusterCrawls holds crawls as the cluster would, counting its reads.
type fakeClusterCrawls struct {
	crawls []admin.Crawl
	reads  int
}

func (f *fakeClusterCrawls) SaveCrawl(c admin.Crawl) error { return nil }

func (f *fakeClusterCrawls) ReadCrawls() ([]admin.Crawl, error) {
	f.reads++
	return append([]admin.Crawl(nil), f.crawls...), nil
}

func (f *fakeClusterCrawls) PublishCrawlJobs(map[string]broker.CrawlJobs) error { return nil }

func (f *fakeClusterCrawls) AddFailed(string, int) {}

// TestClusterCrawlsReadOncePerSync: view crawls on a coordinator whose
// crawls the cluster holds answers from the last read of the cluster's
// crawls (about once a second), with no read of its own: each read marks
// the consoles to be told CHANGED, and a console re-queries at each, so a
// read per query made round trips on the reactor every ChangedEvery
// without end.
func TestClusterCrawlsReadOncePerSync(t *testing.T) {
	f := &fakeClusterCrawls{crawls: []admin.Crawl{{Name: "site", Scope: "host", State: "running", Pages: 5, Done: 3, Queued: 2}}}
	s := newServer(t, Options{ClusterCrawls: f})
	if f.reads != 1 {
		t.Fatalf("%d reads of the cluster's crawls at New, want 1", f.reads)
	}
	for range 3 {
		page := s.crawls.query(admin.Query{View: admin.ViewCrawls})
		if len(page.Crawls) != 1 || page.Crawls[0].Done != 3 || page.Crawls[0].Queued != 2 {
			t.Fatalf("view crawls: %+v, want site with the cluster's figures (3 done, 2 queued)", page.Crawls)
		}
	}
	if f.reads != 1 {
		t.Errorf("%d reads of the cluster's crawls after 3 queries, want still 1 (the queries answer from the last)", f.reads)
	}

	f.crawls[0].Done = 4
	if err := s.crawls.sync(time.Now()); err != nil {
		t.Fatal(err)
	}
	if page := s.crawls.query(admin.Query{View: admin.ViewCrawls}); page.Crawls[0].Done != 4 {
		t.Errorf("view crawls after the read: %d done, want 4", page.Crawls[0].Done)
	}
}

// TestClusterCrawlRate: a crawl held by the cluster shows as its pages per
// second the growth of the cluster's done count between reads, over the
// whole seconds before now, as a crawl held here shows its finishes; a
// crawl's count when first read is no growth, and the jobs finished here
// are in the cluster's count only (not counted twice).
func TestClusterCrawlRate(t *testing.T) {
	f := &fakeClusterCrawls{crawls: []admin.Crawl{{Name: "site", Scope: "host", State: "running", Done: 1000}}}
	s := newServer(t, Options{ClusterCrawls: f})
	t0 := time.Unix(1_900_000_000, 0)
	read := func(at time.Time, done int) {
		t.Helper()
		f.crawls[0].Done = done
		if err := s.crawls.sync(at); err != nil {
			t.Fatal(err)
		}
	}
	rate := func(at time.Time) float64 { return s.crawls.clusterRow(at, s.crawls.byName["site"]).PagesPerSec }
	read(t0, 1000)
	if r := rate(t0.Add(time.Second)); r != 0 {
		t.Errorf("rate after the first read: %v/s, want 0 (the 1000 done before are no growth)", r)
	}
	read(t0.Add(time.Second), 1010)
	s.crawls.countDone([]broker.Finished{{Key: id.Key{Crawler: "site"}}}) // one of those, finished here
	read(t0.Add(2*time.Second), 1030)
	if r := rate(t0.Add(3 * time.Second)); r != 15 {
		t.Errorf("rate: %v/s, want 15 (10 then 20 done in two seconds)", r)
	}
}
