package server

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"drover/admin"
	"drover/net/wire"
	"drover/store"
)

// slowResults is a cluster's results whose adds wait, each, until the
// test lets them go, as over a slow Redis: adding tells the test an add
// began.
type slowResults struct {
	fakeClusterResults
	mu     sync.Mutex
	adding chan struct{}
	go_    chan struct{}
}

func (f *slowResults) Add(recs []store.ResultRecord) error {
	f.adding <- struct{}{}
	<-f.go_
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fakeClusterResults.Add(recs)
}

// slowCrawls is a cluster's crawls whose reads, once armed, wait until
// the test lets them go.
type slowCrawls struct {
	fakeClusterCrawls
	armed   chan struct{} // closed: reads wait
	reading chan struct{}
	go_     chan struct{}
}

func (f *slowCrawls) ReadCrawls() ([]admin.Crawl, error) {
	select {
	case <-f.armed:
		f.reading <- struct{}{}
		<-f.go_
	default:
	}
	return nil, nil
}

// A slow cluster does not hold the reactor: while the add of a job's
// result waits on the cluster, and then while a read of the crawls does,
// the worker that sent the result is acknowledged and given its next job
// (the reactor made those round trips itself, and dispatched nothing
// meanwhile). The job's job.done event waits for its result's cursor and
// goes out with it, before the events after it.
func TestSlowClusterDoesNotStallDispatch(t *testing.T) {
	res := &slowResults{adding: make(chan struct{}, 16), go_: make(chan struct{})}
	crawls := &slowCrawls{armed: make(chan struct{}), reading: make(chan struct{}, 16), go_: make(chan struct{})}
	events := make(chan admin.Event, 100)
	s := startServer(t, Options{
		Results: &ResultsOptions{}, ClusterResults: res, ClusterCrawls: crawls,
		OnEvent: func(ev admin.Event) { events <- ev },
	})
	t.Cleanup(func() { // the server stops only once its calls are answered
		select {
		case <-res.go_:
		default:
			close(res.go_)
		}
		select {
		case <-crawls.go_:
		default:
			close(crawls.go_)
		}
	})
	w := dial(t, s.PeersEndpoint())
	w.send(&wire.Hello{Req: 1, Role: wire.RoleWorker, ID: "w1", Host: "test", Slots: 1})
	expect[*wire.Welcome](t, w.recv())
	p := dial(t, s.PeersEndpoint())
	p.send(&wire.Hello{Req: 1, Role: wire.RoleProducer, ID: "p1"})
	expect[*wire.Welcome](t, p.recv())
	submitNumbered(t, p, 2, "http://a.test/", 3)

	// The first job's result: its add waits on the cluster.
	job := expect[*wire.Job](t, w.recv()).Jobs[0]
	w.send(&wire.Result{Req: 3, Items: []wire.ResultItem{{JobID: job.JobID, Attempt: job.Attempt, Outcome: wire.OutcomeOK}}})
	<-res.adding
	expect[*wire.ResultOK](t, w.recv())
	next := expect[*wire.Job](t, w.recv()).Jobs[0] // while the add waits
	close(res.go_)
	for found := false; !found; {
		select {
		case ev := <-events:
			if ev.Kind == admin.EventJobDone && ev.JobID == uint64(job.JobID) {
				if ev.Cursor != 1 {
					t.Fatalf("job %d's job.done event: cursor %d; want 1, its result's", job.JobID, ev.Cursor)
				}
				found = true
			}
		case <-time.After(recvDeadline):
			t.Fatalf("no job.done event for job %d", job.JobID)
		}
	}

	// The second job's result, while a read of the crawls waits.
	close(crawls.armed)
	<-crawls.reading
	w.send(&wire.Result{Req: 4, Items: []wire.ResultItem{{JobID: next.JobID, Attempt: next.Attempt, Outcome: wire.OutcomeOK}}})
	expect[*wire.ResultOK](t, w.recv())
	expect[*wire.Job](t, w.recv()) // while the read waits
	close(crawls.go_)
	// Both results reach the cluster, in order.
	deadline := time.Now().Add(recvDeadline)
	for {
		res.mu.Lock()
		n := len(res.kept)
		var first uint64
		if n > 0 {
			first = res.kept[0].Job
		}
		res.mu.Unlock()
		if n == 2 {
			if first != uint64(job.JobID) {
				t.Fatalf("the cluster got job %d's result first; want %d's", first, job.JobID)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster holds %d results; want 2", n)
		}
		time.Sleep(10 * time.Millisecond) // polling the goroutine's adds, with a deadline
	}
}

// gate holds a fake's calls until the test lets them go (closes
// release); each call tells the test it waits.
type gate struct {
	entered chan struct{}
	release chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 16), release: make(chan struct{})} }

func (g *gate) pass() {
	g.entered <- struct{}{}
	<-g.release
}

func (g *gate) open() {
	select {
	case <-g.release:
	default:
		close(g.release)
	}
}

// waitEntered waits until a call waits at g.
func (g *gate) waitEntered(t *testing.T, what string) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(recvDeadline):
		t.Fatalf("%s: no read of the cluster began", what)
	}
}

// slowJobs is a cluster's jobs whose walks wait at a gate.
type slowJobs struct {
	fakeClusterJobs
	g *gate
}

func (f *slowJobs) Jobs(cursor, parts string, host func(string) bool, match func(*admin.JobRow) bool, skip, limit int) ([]admin.JobRow, int, string, error) {
	f.g.pass()
	return f.fakeClusterJobs.Jobs(cursor, parts, host, match, skip, limit)
}

// slowEvents is a cluster's events whose reads wait at a gate.
type slowEvents struct {
	g   *gate
	evs []admin.Event
}

func (f *slowEvents) Add([]admin.Event) error { return nil }

func (f *slowEvents) Recent(int) ([]admin.Event, error) {
	f.g.pass()
	return f.evs, nil
}

// slowResultReads is a cluster's results whose reads wait at a gate.
type slowResultReads struct {
	g    *gate
	mu   sync.Mutex
	last uint64
}

func (f *slowResultReads) Add(recs []store.ResultRecord) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range recs {
		f.last++
		recs[i].Cursor = f.last
	}
	return nil
}

func (f *slowResultReads) Bounds() (uint64, uint64, error) {
	f.g.pass()
	return 1, 7, nil
}

func (f *slowResultReads) Read(after, upTo uint64, fn func(*store.ResultRecord) bool) error {
	fn(&store.ResultRecord{Cursor: 7, Job: 99, Key: key("http://other.test/r")})
	return nil
}

func (f *slowResultReads) Trim(time.Time, *store.Retention) (int, error) { return 0, nil }

// The admin views read from a slow cluster do not hold the reactor: while
// a page of view jobs and one of view events wait on the cluster (and a
// page of view results waits for a reader), a worker's result is
// acknowledged and it is given its next job (the reactor made those reads
// itself, and dispatched nothing meanwhile). Each page comes once the
// cluster answers, with the cluster's rows, to the request it answers.
func TestSlowClusterReadsDoNotStallDispatch(t *testing.T) {
	jobs := &slowJobs{g: newGate()}
	jobs.rows = []admin.JobRow{{Key: fmt.Sprintf("%032x", 1), URL: "http://other.test/q", State: "queued", QueueID: 100}}
	events := &slowEvents{g: newGate(), evs: []admin.Event{{Kind: admin.EventWorkerRegistered, Coordinator: "2", Worker: "elsewhere"}}}
	results := &slowResultReads{g: newGate()}
	s := startServer(t, Options{Results: &ResultsOptions{}, ClusterResults: results, ClusterEvents: events, ClusterJobs: jobs})
	t.Cleanup(func() { // the server stops only once its reads are answered
		jobs.g.open()
		events.g.open()
		results.g.open()
	})
	w := dial(t, s.PeersEndpoint())
	hello(t, w, wire.RoleWorker, "w1", 1)
	p := dial(t, s.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p1", 0)
	submitNumbered(t, p, 2, "http://a.test/", 3)
	job := expect[*wire.Job](t, w.recv()).Jobs[0]

	con := dial(t, s.InprocAdmin())
	con.send(&wire.Hello{Req: 1, Role: wire.RoleConsole, ID: "console"})
	expect[*wire.Welcome](t, con.recv())
	con.send(&wire.Query{Req: 2, Query: admin.Query{View: admin.ViewJobs, Filter: "state=queued"}})
	jobs.g.waitEntered(t, "view jobs")
	con.send(&wire.Query{Req: 3, Query: admin.Query{View: admin.ViewEvents}})
	events.g.waitEntered(t, "view events")
	con.send(&wire.Query{Req: 4, Query: admin.Query{View: admin.ViewResults}})

	// While the reads wait: a result acknowledged, the next job sent.
	w.send(&wire.Result{Req: 3, Items: []wire.ResultItem{{JobID: job.JobID, Attempt: job.Attempt, Outcome: wire.OutcomeOK}}})
	expect[*wire.ResultOK](t, w.recv())
	next := expect[*wire.Job](t, w.recv()).Jobs[0]
	if next.JobID == job.JobID {
		t.Fatalf("job %d sent again; want the next", job.JobID)
	}

	jobs.g.open()
	events.g.open()
	results.g.open()
	pages := make(map[uint64]admin.Page)
	for len(pages) < 3 {
		switch m := con.recv().(type) {
		case *wire.Changed:
		case *wire.Page:
			pages[m.Req] = m.Page
		default:
			t.Fatalf("console got %T %+v; want the three pages", m, m)
		}
	}
	if pg := pages[2]; pg.View != admin.ViewJobs || len(pg.Jobs) == 0 || pg.Jobs[len(pg.Jobs)-1].QueueID != 100 {
		t.Fatalf("request 2 (view jobs): %+v; want the own queued jobs then the cluster's queue id 100", pg)
	}
	if pg := pages[3]; pg.View != admin.ViewEvents || len(pg.Events) != 1 || pg.Events[0].Worker != "elsewhere" {
		t.Fatalf("request 3 (view events): %+v; want the cluster's event", pg)
	}
	if pg := pages[4]; pg.View != admin.ViewResults || len(pg.Results) != 1 || pg.Results[0].Cursor != 7 || pg.Last != 7 {
		t.Fatalf("request 4 (view results): %+v; want the cluster's result 7", pg)
	}
}
