package server

import (
	"sync"
	"time"
)

// The cluster's I/O off the reactor (Options.ClusterCrawls,
// ClusterResults: the Redis Cluster store). A round trip to the cluster
// must not hold the reactor, which would dispatch nothing meanwhile: the
// reactor posts each call, the cluster I/O goroutine makes the calls one
// at a time in the order posted, and hands back what the reactor does
// with each answer, run by the reactor in the same order at its next step
// (the goroutine rings it). Each kind of call has at most one in flight
// (a crawl sync, an add of results), so the posts stay few.

// cluster is the Server's part for a store shared by several coordinators
// (a Redis Cluster): the state of its crawls, results' I/O, events and job
// lists, each kept by its file. The reactor goroutine owns it.
type cluster struct {
	// crawlSynced is when the crawls were last read from the cluster
	// (Options.ClusterCrawls).
	crawlSynced time.Time
	// crawlSyncing: a sync of the crawls is in flight (clustercrawls.go)
	crawlSyncing bool
	io           *clusterIO       // the cluster's I/O off the reactor
	evw          *eventWriter     // Options.ClusterEvents: the events for the cluster (clusterevents.go)
	jobs         clusterJobsState // Options.ClusterJobs: the offset memo, the retries noted (clusterjobs.go)
}

// clusterIO is the goroutine making the cluster's calls and its answers
// not yet taken by the reactor.
type clusterIO struct {
	calls chan func() func()
	ring  func()

	mu      sync.Mutex
	answers []func() // what the reactor does with the answers, in order
	posted  int      // calls posted whose answers the reactor has not run
	exited  chan struct{}
}

// clusterIOQueue bounds the calls waiting for the goroutine; the kinds of
// calls in flight are fewer.
const clusterIOQueue = 64

// startClusterIO starts the cluster I/O goroutine when the server has any
// cluster part, and returns the function that stops it (after the calls
// posted).
func (s *Server) startClusterIO() (stop func()) {
	if s.opts.ClusterCrawls == nil && s.opts.ClusterResults == nil {
		return func() {}
	}
	io := &clusterIO{calls: make(chan func() func(), clusterIOQueue), ring: s.r.ring, exited: make(chan struct{})}
	s.cl.io = io
	go func() {
		defer close(io.exited)
		for call := range io.calls {
			answer := call()
			io.mu.Lock()
			io.answers = append(io.answers, answer)
			io.mu.Unlock()
			io.ring()
		}
	}()
	return func() {
		close(io.calls)
		<-io.exited
		// Calls the answers post now are made at once.
		s.cl.io = nil
		for _, a := range io.answers {
			a()
		}
	}
}

// post hands call to the cluster I/O goroutine (the reactor's side); the
// function it returns runs on the reactor with its answer. Without the
// goroutine (before Run, in tests) both run at once.
func (s *Server) post(call func() func()) {
	io := s.cl.io
	if io == nil {
		call()()
		return
	}
	io.posted++
	io.calls <- call // bounded by the kinds in flight: never full
}

// takeClusterAnswers runs, on the reactor, what it does with the answers
// the cluster I/O goroutine has, in the order of the calls.
func (s *Server) takeClusterAnswers() {
	io := s.cl.io
	if io == nil {
		return
	}
	io.mu.Lock()
	answers := io.answers
	io.answers = nil
	io.mu.Unlock()
	for _, a := range answers {
		io.posted--
		a()
	}
}

// settleCluster waits, until deadline, for the calls posted to the
// cluster, running what follows from their answers (which may post more:
// results the cluster did not take are tried again), on shutdown.
func (s *Server) settleCluster(deadline time.Time) {
	io := s.cl.io
	if io == nil {
		return
	}
	for {
		s.takeClusterAnswers()
		if io.posted == 0 || !time.Now().Before(deadline) {
			return
		}
		select {
		case <-s.r.wake:
		case <-time.After(time.Until(deadline)):
		}
	}
}
