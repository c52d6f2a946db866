package server

import (
	"time"

	"drover/coord"
	"drover/coord/broker"
	"drover/net/wire"
)

// flush carries out what the coordinator returned: deferred answers, jobs
// into free slots (one JOB batch per worker), cancels, disconnects, events.
// With a store, the JOBs, CANCELs and events wait with the step's
// acknowledgements for the step's batch (durable.go).
func (s *Server) flush(now time.Time) {
	out := s.c.Ready(now)
	s.pd.answers(now, out.Answers) // peers.go: the answers that waited
	s.finished(out.Finished)       // OnFinished, then results and crawls: into the step's batch
	if s.crawls.countPages() {     // crawls.go: page budgets spent by this step's dispatches
		s.adm.dirty = true
	}
	s.disp.cancel(now, out.Cancels) // before the JOBs: a new attempt never overtakes the CANCEL of the old one
	s.disp.dispatch(now, out)
	// On a cluster, the events from a job's end whose result's cursor is
	// still to come wait for it (clusterresults.go).
	k := s.cl.holdFrom(out.Events)
	s.ev.emit(out.Events[:k], false) // events.go
	if k < len(out.Events) {
		s.cl.holdEvents(out.Events[k:])
	}
	s.dur.persist(out.Writes) // storeio.go: the step's held messages wait for it
	for _, cl := range out.Closes {
		p, ok := s.sess.peer[cl.Session]
		if !ok {
			continue
		}
		s.out.toPeer(p.ident, disconnect(cl.Reason))
		s.log.Info("session closed", "session", cl.Session, "reason", cl.Reason)
		if cl.Reason == coord.CloseDrained {
			s.cl.drainEnded(p.id) // clusterworkers.go: its drain kept in the cluster is over
		}
		s.sess.forget(cl.Session)
	}
	if out.Changed {
		s.adm.dirty = true
		if s.opts.OnSettled != nil {
			if s.c.Settled() {
				s.opts.OnSettled(s.c.Totals(now))
			}
		}
	}
	s.adm.notifyConsoles(now)
}

// closeCodes is the code of the DISCONNECT the server sends for each way a
// session ends; the reason is the close reason's token. A peer's own
// DISCONNECT (coord.CloseDisconnected) gets no reply (docs/PROTOCOL.md
// §6.4): the session is forgotten at once, so nothing is sent for it.
var closeCodes = map[coord.CloseReason]wire.Code{
	coord.CloseLost:       wire.CodeTimeout,
	coord.CloseSuperseded: wire.CodeConflict,
	coord.CloseEvicted:    wire.CodeEvicted,
	coord.CloseDrained:    wire.CodeOK,
	coord.CloseShutdown:   wire.CodeUnavailable,
}

// disconnect is the DISCONNECT telling a peer its session ended for reason r.
func disconnect(r coord.CloseReason) *wire.Disconnect {
	code, ok := closeCodes[r]
	if !ok {
		code = wire.CodeInternal // a reason added to coord but not here: TestCloseCodes fails
	}
	return &wire.Disconnect{Code: code, Reason: r.String()}
}

// finished hands the step's finished jobs to OnFinished (before the
// step's batch: see Options.BeforeCommit), then to the results and the
// crawls' counts, which go into the step's batch.
func (s *Server) finished(fs []broker.Finished) {
	if s.opts.OnFinished != nil {
		for _, f := range fs {
			s.opts.OnFinished(f)
		}
	}
	s.res.keepStep(s.now, fs, &s.cl) // results.go
	s.crawls.countDone(fs)           // crawls.go
}
