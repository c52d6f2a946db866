package server

import (
	"time"

	"drover/admin"
	"drover/auth"
	"drover/net/wire"

	"github.com/pebbe/zmq4"
)

// dialogue is the Server's admin dialogue part: the admin ROUTER that
// consoles and the CLI talk to (HELLO, STATUS, QUERY, ACTION, CHANGED),
// its endpoints, and the coalescing of CHANGED pushes. Who is attached is
// the sessions part's (sessions.cons). The reactor goroutine owns it.
type dialogue struct {
	sock   *zmq4.Socket
	ep     string // the bound endpoint, the OS's port filled in
	inproc string // the in-process endpoint for an embedded console
	// dirty says the state changed since consoles were last told
	// CHANGED (at lastChanged): notifyConsoles tells them.
	dirty       bool
	lastChanged time.Time
}

// ownQuery is the server's own answer to a view the coordinator does not
// keep, or that the cluster keeps (Options.ClusterEvents): the error
// comes with the ERROR code to answer.
func (s *Server) ownQuery(q admin.Query) (func(admin.Query) (admin.Page, wire.Code, error), bool) {
	switch {
	case q.View == admin.ViewResults:
		return s.queryResults, true // results.go
	case q.View == admin.ViewEvents && s.opts.ClusterEvents != nil:
		return s.queryClusterEvents, true // clusterevents.go
	case (q.View == admin.ViewJobs || q.View == admin.ViewWaiters) && s.opts.ClusterJobs != nil:
		return s.queryClusterJobs, true // clusterjobs.go
	case q.View == admin.ViewRetries && s.opts.ClusterJobs != nil:
		return s.queryClusterRetries, true // clusterjobs.go
	}
	return nil, false
}

// onAdmin handles one message from the admin socket (consoles and the CLI).
// user is the sender's key (the message's User-Id; "" in-process or
// without CURVE).
func (s *Server) onAdmin(frames [][]byte, user string) {
	ident, m, ok := s.decode(onAdmin, frames, user)
	if !ok {
		return
	}
	now := s.now()
	cs, known := s.sess.cons[string(ident)]
	e, listed := s.entryOf(user)
	if !listed {
		if known {
			s.endRevokedConsole(string(ident), cs)
		}
		s.revokedMessage(onAdmin, ident, m.RequestID(), user)
		return
	}
	if h, isHello := m.(*wire.Hello); isHello {
		if h.Role != wire.RoleConsole {
			s.reject(onAdmin, ident, h.Req, wire.CodeForbidden, "role %s on the admin socket: workers and producers use the peers socket", h.Role)
			return
		}
		if !e.Role.MayHello(auth.Admin, h.Role) {
			s.forbid(onAdmin, ident, h.Req, e, "HELLO as console refused: this key's role is %s (consoles need operator or viewer)", e.Role)
			return
		}
		beat := h.Heartbeat
		cfg := s.c.Config()
		if beat == 0 {
			beat = cfg.Heartbeat
		}
		beat = min(max(beat, cfg.MinHeartbeat), cfg.MaxHeartbeat)
		cs = &console{ident: append([]byte(nil), ident...), key: user, readOnly: h.ReadOnly || e.Role != auth.Operator, beat: beat, lastSeen: now, lastSent: now}
		s.sess.cons[string(ident)] = cs
		s.sess.next++ // consoles are numbered from the same sequence as peers, for logs
		s.out.toConsole(cs.ident, &wire.Welcome{
			Req: h.Req, Session: uint64(s.sess.next), Heartbeat: beat, Liveness: uint16(cfg.Liveness), Server: s.opts.Server,
			Limits: wire.Limits{MaxBody: wire.MaxBody, MaxBatch: wire.MaxBatch, MaxPayload: wire.MaxPayload},
		})
		s.log.Info("console attached", "id", h.ID, "host", h.Host, "read_only", h.ReadOnly)
		return
	}
	if !known {
		if _, isDisc := m.(*wire.Disconnect); isDisc {
			return
		}
		s.reject(onAdmin, ident, m.RequestID(), wire.CodeHelloRequired, "%s before HELLO: send HELLO with role console first", m.Command())
		return
	}
	cs.lastSeen = now
	if !e.Role.May(auth.Admin, m.Command()) {
		what := m.Command().String()
		if a, ok := m.(*wire.Action); ok {
			what = "action " + string(a.Action.Kind)
		}
		s.forbid(onAdmin, ident, m.RequestID(), e, "%s refused: this key's role is %s", what, e.Role)
		return
	}
	switch m := m.(type) {
	case *wire.Heartbeat:
	case *wire.Disconnect:
		delete(s.sess.cons, string(ident))
	case *wire.Status:
		t := s.totals(now)
		s.out.toConsole(cs.ident, &wire.Totals{Req: m.Req, Totals: t})
	case *wire.Query:
		if m.Query.View == admin.ViewCrawls {
			s.out.toConsole(cs.ident, &wire.Page{Req: m.Req, Page: s.queryCrawls(m.Query)}) // crawls.go
			return
		}
		if q, ok := s.ownQuery(m.Query); ok {
			page, code, err := q(m.Query)
			if err != nil {
				s.reject(onAdmin, ident, m.Req, code, "%v", err)
				return
			}
			s.out.toConsole(cs.ident, &wire.Page{Req: m.Req, Page: page})
			return
		}
		page, err := s.c.Query(now, m.Query)
		if err == nil {
			page, err = s.withPaged(m.Query, page) // pagedlist.go: on into the jobs only the store holds
		}
		if err != nil {
			s.reject(onAdmin, ident, m.Req, errorCode(err), "%v", err)
			return
		}
		s.out.toConsole(cs.ident, &wire.Page{Req: m.Req, Page: page})
	case *wire.Action:
		if cs.readOnly {
			s.reject(onAdmin, ident, m.Req, wire.CodeForbidden, "action %s refused: this console attached read-only", m.Action.Kind)
			return
		}
		var res admin.ActionResult
		var err error
		switch {
		case m.Action.Kind == admin.ActDefineCrawl:
			res, err = s.defineCrawl(now, *m.Action.Crawl) // crawls.go
		case m.Action.Crawler != "":
			res, err = s.crawlAction(now, m.Action) // crawls.go
		case m.Action.Kind == admin.ActRequeue:
			// Targets naming a key: this coordinator's job of it, or
			// why it is not here (clusterjobs.go).
			act, refused := s.clusterRequeue(now, m.Action)
			if len(act.Targets) > 0 || len(refused) == 0 {
				res, err = s.c.Act(now, act)
			}
			res.Errors = append(res.Errors, refused...)
		default:
			res, err = s.c.Act(now, m.Action)
		}
		if err != nil {
			s.reject(onAdmin, ident, m.Req, errorCode(err), "%v", err)
			return
		}
		s.log.Info("operator action", "kind", m.Action.Kind, "targets", m.Action.Targets, "affected", res.Affected, "errors", len(res.Errors))
		s.out.toConsole(cs.ident, &wire.Acted{Req: m.Req, Result: res})
		s.adm.dirty = true
	default:
		s.reject(onAdmin, ident, m.RequestID(), wire.CodeForbidden, "%s is not accepted on the admin socket", m.Command())
	}
}

// notifyConsoles pushes CHANGED to every console, at most once per
// ChangedEvery, when state changed since the last push.
func (s *Server) notifyConsoles(now time.Time) {
	if !s.adm.dirty || now.Sub(s.adm.lastChanged) < s.opts.ChangedEvery {
		return
	}
	s.adm.dirty = false
	s.adm.lastChanged = now
	for _, cs := range s.sess.cons {
		if s.out.toConsole(cs.ident, &wire.Changed{}) {
			cs.lastSent = now
		}
	}
}

// console is one session on the admin socket.
type console struct {
	ident    []byte
	key      string // the client's public key ("" in-process or without CURVE)
	readOnly bool
	beat     time.Duration
	lastSeen time.Time
	lastSent time.Time
}
