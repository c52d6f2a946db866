package server

import (
	"log/slog"
	"sync"
	"time"

	"drover/admin"
	"drover/coord"
)

// The cluster's I/O off the reactor (Options.ClusterCrawls,
// ClusterResults, ClusterJobs, ClusterEvents: the Redis Cluster store). A
// round trip to the cluster must not hold the reactor, which would
// dispatch nothing meanwhile: the reactor posts each call to a lane of
// goroutines, which make the calls and hand back what the reactor does
// with each answer, run by the reactor at its next step (a lane rings
// it). Two lanes: the writes (an add of results, a crawl sync), one
// goroutine making the calls one at a time in the order posted, each kind
// with at most one in flight, so its posts stay few; and the reads of the
// admin views (clusterquery.go), a few goroutines, their answers in the
// order they come, at most clusterReadQueue posted.

// cluster is the Server's part for a store shared by several coordinators
// (a Redis Cluster): it owns the cluster's I/O lanes (this file), the
// results added to the cluster and the events held for their cursors
// (clusterresults.go), the events shared (clusterevents.go), the admin
// views read from the cluster (clusterquery.go), the job lists across
// coordinators (clusterjobs.go) and the actions asked of the others and
// for them (clusteract.go, clusterworkers.go), each kept by its file (the
// cluster's crawls are the crawls part's: clustercrawls.go). The reactor
// goroutine owns it.
type cluster struct {
	io    *clusterIO       // the cluster's write lane
	reads *clusterIO       // the cluster's read lane (clusterquery.go)
	evw   *eventWriter     // Options.ClusterEvents: the events for the cluster (clusterevents.go)
	jobs  clusterJobsState // Options.ClusterJobs: the offset memo, the retries noted (clusterjobs.go)
	adds  clusterAdds      // Options.ClusterResults: the add in flight, the events held (clusterresults.go)
	wk    workerState      // Options.ClusterJobs: the drains of workers let go, to forget (clusterworkers.go)

	// What the lanes, results and events use, given by wireStore.
	on      bool                                // the server has a cluster part: the lanes run
	results ClusterResults                      // Options.ClusterResults; nil without, or without Options.Results
	ce      ClusterEvents                       // Options.ClusterEvents; nil without
	res     *resultLog                          // the results part
	emit    func(evs []admin.Event, noted bool) // shares and publishes events (events.emit)
	ring    func()                              // wakes the reactor (an answer is ready)
	wake    chan struct{}                       // the reactor's doorbell, which ring rings (settle waits on it)

	// What the job lists and the actions across coordinators use
	// (clusterjobs.go, clusteract.go, clusterworkers.go), given by wire.
	cj   ClusterJobs // Options.ClusterJobs; nil without
	c    *coord.Coordinator
	out  *sender
	sess *sessions
	adm  *dialogue // its dirty flag: consoles are told CHANGED
	log  *slog.Logger
	now  func() time.Time
	view func() *admin.Cluster // Options.Cluster: every coordinator's summary; nil without
}

// wire gives the cluster part what its job lists and actions use (New).
func (cl *cluster) wire(cj ClusterJobs, view func() *admin.Cluster, c *coord.Coordinator, out *sender, sess *sessions, adm *dialogue, log *slog.Logger, now func() time.Time) {
	cl.cj, cl.view, cl.c, cl.out, cl.sess, cl.adm, cl.log, cl.now = cj, view, c, out, sess, adm, log, now
}

// wireStore gives the cluster part what its lanes, results and events
// use: o's cluster stores, the results part res (whose results it adds to
// Options.ClusterResults; nil without Options.Results: none to add),
// emit, which shares and publishes the events it held, and the reactor's
// doorbell, rung by ring (New, after the results part is made).
func (cl *cluster) wireStore(o *Options, res *resultLog, emit func(evs []admin.Event, noted bool), ring func(), wake chan struct{}) {
	cl.on = o.ClusterCrawls != nil || o.ClusterResults != nil || o.ClusterJobs != nil || o.ClusterEvents != nil
	if res != nil {
		cl.results = o.ClusterResults
	}
	cl.ce, cl.res, cl.emit, cl.ring, cl.wake = o.ClusterEvents, res, emit, ring, wake
}

// clusterIO is a lane: the goroutines making the cluster's calls and
// their answers not yet taken by the reactor.
type clusterIO struct {
	calls chan func() func()
	ring  func()

	mu      sync.Mutex
	answers []func() // what the reactor does with the answers, in order
	tasks   []func() // what other goroutines hand the reactor (run)
	posted  int      // calls posted whose answers the reactor has not run (the reactor's)
	exited  chan struct{}
}

// clusterIOQueue bounds the calls waiting for the write lane's goroutine;
// the kinds of calls in flight are fewer.
const clusterIOQueue = 64

// newClusterIO starts a lane of n goroutines whose calls wait in a queue
// of queue; ring wakes the reactor when an answer is ready.
func newClusterIO(ring func(), n, queue int) *clusterIO {
	io := &clusterIO{calls: make(chan func() func(), queue), ring: ring, exited: make(chan struct{})}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for call := range io.calls {
				answer := call()
				io.mu.Lock()
				io.answers = append(io.answers, answer)
				io.mu.Unlock()
				io.ring()
			}
		})
	}
	go func() {
		wg.Wait()
		close(io.exited)
	}()
	return io
}

// stop waits for the calls posted and returns the answers not taken.
func (io *clusterIO) stop() []func() {
	close(io.calls)
	<-io.exited
	return io.take()
}

// take returns the answers ready, in the order they came, counting them
// off posted (the reactor's side).
func (io *clusterIO) take() []func() {
	io.mu.Lock()
	answers, tasks := io.answers, io.tasks
	io.answers, io.tasks = nil, nil
	io.mu.Unlock()
	io.posted -= len(answers)
	return append(answers, tasks...)
}

// run hands fn to the reactor, to run at its next step (from any
// goroutine).
func (io *clusterIO) run(fn func()) {
	io.mu.Lock()
	io.tasks = append(io.tasks, fn)
	io.mu.Unlock()
	io.ring()
}

// put hands call to the lane (the reactor's side); the queue never fills
// while posted stays below its size.
func (io *clusterIO) put(call func() func()) {
	io.posted++
	io.calls <- call
}

// startIO starts the cluster's lanes when the server has any cluster
// part, and returns the function that stops them (after the calls
// posted; the reads' answers are dropped then: the consoles were told
// DISCONNECT).
func (cl *cluster) startIO() (stop func()) {
	if !cl.on {
		return func() {}
	}
	cl.io = newClusterIO(cl.ring, 1, clusterIOQueue)
	cl.reads = newClusterIO(cl.ring, clusterReaders, clusterReadQueue)
	stopControl := cl.startControl() // clusteract.go
	return func() {
		stopControl()
		cl.reads.stop()
		cl.reads = nil
		io := cl.io
		answers := io.stop()
		// Calls the answers post now are made at once.
		cl.io = nil
		for _, a := range answers {
			a()
		}
	}
}

// post hands call to the cluster's write lane (the reactor's side); the
// function it returns runs on the reactor with its answer. Without the
// lane (before Run, in tests) both run at once.
func (cl *cluster) post(call func() func()) {
	io := cl.io
	if io == nil {
		call()()
		return
	}
	io.put(call) // bounded by the kinds in flight: never full
}

// takeAnswers runs, on the reactor, what it does with the answers
// the cluster's lanes have, the write lane's in the order of its calls.
func (cl *cluster) takeAnswers() {
	for _, io := range []*clusterIO{cl.io, cl.reads} {
		if io == nil {
			continue
		}
		for _, a := range io.take() {
			a()
		}
	}
}

// settle waits, until deadline, for the calls posted to the cluster's
// write lane, running what follows from their answers (which may post
// more: results the cluster did not take are tried again), on shutdown.
func (cl *cluster) settle(deadline time.Time) {
	io := cl.io
	if io == nil {
		return
	}
	for {
		cl.takeAnswers()
		if io.posted == 0 || !time.Now().Before(deadline) {
			return
		}
		select {
		case <-cl.wake:
		case <-time.After(time.Until(deadline)):
		}
	}
}
