package worker

import (
	"drover/net/internal/conn"
	"drover/net/wire"
)

// maxRobotsReqs bounds the ROBOTS request ids remembered (a server that
// knows ROBOTS answers none of them): past it the memory starts over.
const maxRobotsReqs = 256

// reportRobots sends a robots.txt a handler fetched to the server
// (docs/PROTOCOL.md §6.18), best effort: not while the session is down,
// nor once the server said it does not know ROBOTS.
func (s *session) reportRobots(l *conn.Link, r *wire.Robots) {
	if s.noRobots || !l.Up() {
		return
	}
	m := *r
	m.Req = l.NextReq()
	if err := l.Send(&m); err != nil {
		s.opts.Log.Debug("robots.txt not reported", "origin", r.Origin, "err", err)
		return
	}
	if s.robotsReqs == nil || len(s.robotsReqs) >= maxRobotsReqs {
		s.robotsReqs = make(map[uint64]struct{})
	}
	s.robotsReqs[m.Req] = struct{}{}
}

// robotsRefused handles an ERROR answering a ROBOTS report: a server that
// does not know the command (501) gets no more this session; any other
// refusal (the job was taken back meanwhile) only costs that report.
func (s *session) robotsRefused(m *wire.Error) bool {
	if _, ok := s.robotsReqs[m.Req]; !ok || m.Req == 0 {
		return false
	}
	delete(s.robotsReqs, m.Req)
	if m.Code == wire.CodeUnknownCommand {
		s.noRobots = true
		s.opts.Log.Info("the server does not take robots.txt reports: each worker fetches robots.txt itself", "err", m)
		return true
	}
	s.opts.Log.Debug("robots.txt report refused", "err", m)
	return true
}
