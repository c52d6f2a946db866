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
	var items []wire.SubmitItem
	for i := range 3 {
		items = append(items, wire.SubmitItem{Key: key(fmt.Sprintf("http://a.test/%d", i))})
	}
	p.send(&wire.Submit{Req: 2, Jobs: items})
	expect[*wire.Submitted](t, p.recv())

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
