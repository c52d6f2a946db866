package server

import (
	"testing"
	"time"

	"drover/admin"
	"drover/coord/broker"
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
		page := s.queryCrawls(admin.Query{View: admin.ViewCrawls})
		if len(page.Crawls) != 1 || page.Crawls[0].Done != 3 || page.Crawls[0].Queued != 2 {
			t.Fatalf("view crawls: %+v, want site with the cluster's figures (3 done, 2 queued)", page.Crawls)
		}
	}
	if f.reads != 1 {
		t.Errorf("%d reads of the cluster's crawls after 3 queries, want still 1 (the queries answer from the last)", f.reads)
	}

	f.crawls[0].Done = 4
	if err := s.syncCrawls(time.Now()); err != nil {
		t.Fatal(err)
	}
	if page := s.queryCrawls(admin.Query{View: admin.ViewCrawls}); page.Crawls[0].Done != 4 {
		t.Errorf("view crawls after the read: %d done, want 4", page.Crawls[0].Done)
	}
}
