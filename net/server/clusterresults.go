package server

import (
	"time"

	"drover/store"
)

// Results kept for several coordinators (Options.ClusterResults, the
// Redis Cluster store): each step's results are added to the cluster's
// results, which assigns their cursors, so view results reads every
// coordinator's results on any of them.

// ClusterResults keeps results for every coordinator sharing a store
// (store/redis.Results). Add and Read are called by the reactor, Trim by
// the trimmer goroutine; their calls may do I/O.
type ClusterResults interface {
	// Add appends results and sets their cursors; a result whose cursor
	// is still 0 after an error was not added.
	Add(recs []store.ResultRecord) error
	// Bounds are the first and last cursors kept (0, 0: none).
	Bounds() (first, last uint64, err error)
	// Read hands fn the results after cursor after up to upTo, in cursor
	// order, until fn returns false.
	Read(after, upTo uint64, fn func(*store.ResultRecord) bool) error
	// Trim applies the policy's coordinator-wide limits (its Default).
	Trim(now time.Time, p *store.Retention) (deleted int, err error)
}

// resendResultsEvery is how often results the cluster did not take are
// tried again while no job finishes (one finishing tries them at once).
const resendResultsEvery = time.Second

// resendClusterResults tries again to add the results the cluster did not
// take, at most once per resendResultsEvery, in a step where no job
// finished: without it they waited for the next job to finish, and after
// the last one, were lost at shutdown.
func (s *Server) resendClusterResults() {
	r := s.res
	if s.opts.ClusterResults == nil || len(r.step) == 0 || s.now().Sub(r.sentAt) < resendResultsEvery {
		return
	}
	s.addClusterResults()
}

// maxUnsentResults bounds the results kept for the next step when the
// cluster did not take them.
const maxUnsentResults = 100000

// addClusterResults adds the step's results to the cluster's and gives
// their events the cursors; those it did not take wait for the next step
// (at most maxUnsentResults: the oldest go beyond).
func (s *Server) addClusterResults() {
	r := s.res
	if len(r.step) == 0 {
		return
	}
	r.sentAt = s.now()
	err := s.opts.ClusterResults.Add(r.step)
	n := 0
	for i := range r.step {
		rec := &r.step[i]
		if rec.Cursor == 0 {
			r.step[n] = *rec
			n++
			continue
		}
		r.readable = max(r.readable, rec.Cursor)
		if k, ok := r.byJob[rec.Job]; ok && k < len(r.stepFin) {
			r.stepFin[k].cursor = rec.Cursor
		}
	}
	if err != nil {
		s.log.Warn("results not kept on the cluster; tried again with the next step", "results", n, "err", err)
	}
	if drop := n - maxUnsentResults; drop > 0 {
		s.log.Error("results lost: the cluster took none of them", "results", drop)
		copy(r.step, r.step[drop:n])
		n -= drop
	}
	clear(r.step[n:])
	r.step = r.step[:n]
	s.adm.dirty = true
}

// trimClusterResults applies the results' limits on the cluster: its
// coordinator-wide ones (the policy's Default) only.
func (s *Server) trimClusterResults(now time.Time, p *store.Retention) (deleted int, kept []any, err error) {
	if p.Default == (store.ResultLimits{}) {
		return 0, nil, nil
	}
	n, err := s.opts.ClusterResults.Trim(now, p)
	return n, nil, err
}
