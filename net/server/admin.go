package server

import (
	"log/slog"
	"time"

	"drover/admin"
	"drover/auth"
	"drover/coord"
	"drover/net/wire"
)

// dialogue is the Server's admin dialogue part: the admin ROUTER that
// consoles and the CLI talk to (HELLO, STATUS, QUERY, ACTION, CHANGED),
// its endpoints, consoles attached and detached, and the coalescing of
// CHANGED pushes. Who is attached is kept with the sessions
// (sessions.cons); what a query or an action answers is the Server's
// (onAdmin below routes them). The reactor goroutine owns it.
type dialogue struct {
	listener // the admin ROUTER; inproc is for an embedded console
	// dirty says the state changed since consoles were last told
	// CHANGED (at lastChanged): notifyConsoles tells them.
	dirty       bool
	lastChanged time.Time

	sess  *sessions
	out   *sender
	every time.Duration // Options.ChangedEvery
	cfg   coord.Config  // heartbeat bounds
	name  string        // Options.Server, for WELCOME
	log   *slog.Logger
}

// query answers a QUERY: the views the server keeps itself (crawls,
// results; those read from the cluster are the cluster part's:
// clusterquery.go), else the coordinator's answer, continued into the
// jobs only the store holds. An error's ERROR code is errorCode's
// (errcodes.go).
func (s *Server) query(now time.Time, q admin.Query) (admin.Page, error) {
	if q.View == admin.ViewCrawls {
		return s.crawls.query(q), nil // crawls.go
	}
	if q.View == admin.ViewResults {
		return s.res.query(q) // results.go
	}
	page, err := s.c.Query(now, q)
	if err == nil {
		page, err = s.pg.withPaged(now, q, page) // pagedlist.go: on into the jobs only the store holds
	}
	return page, err
}

// act carries out an ACTION: a crawl's (crawls.go), a requeue that may
// name jobs other coordinators hold (clusterjobs.go), or the
// coordinator's.
func (s *Server) act(now time.Time, a admin.Action) (res admin.ActionResult, err error) {
	switch {
	case a.Kind == admin.ActDefineCrawl:
		return s.crawls.define(now, *a.Crawl) // crawls.go
	case a.Crawler != "":
		return s.crawls.action(now, a) // crawls.go
	case a.Kind == admin.ActRequeue:
		// Targets naming a key: this coordinator's job of it, or why it
		// is not here (clusterjobs.go).
		act, refused := s.cl.clusterRequeue(now, a)
		if len(act.Targets) > 0 || len(refused) == 0 {
			res, err = s.c.Act(now, act)
		}
		res.Errors = append(res.Errors, refused...)
		return res, err
	}
	return s.c.Act(now, a)
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
	e, listed := s.auth.entryOf(user)
	if !listed {
		if known {
			s.adm.revoked(string(ident), cs)
		}
		s.revokedMessage(onAdmin, ident, m.RequestID(), user)
		return
	}
	if h, isHello := m.(*wire.Hello); isHello {
		if h.Role != wire.RoleConsole {
			s.out.reject(onAdmin, ident, h.Req, wire.CodeForbidden, "role %s on the admin socket: workers and producers use the peers socket", h.Role)
			return
		}
		if !e.Role.MayHello(auth.Admin, h.Role) {
			s.forbid(onAdmin, ident, h.Req, e, "HELLO as console refused: this key's role is %s (consoles need operator or viewer)", e.Role)
			return
		}
		s.adm.attach(now, ident, h, user, h.ReadOnly || e.Role != auth.Operator)
		return
	}
	if !known {
		if _, isDisc := m.(*wire.Disconnect); isDisc {
			return
		}
		s.out.reject(onAdmin, ident, m.RequestID(), wire.CodeHelloRequired, "%s before HELLO: send HELLO with role console first", m.Command())
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
		delete(s.sess.cons, string(ident)) // it said goodbye: nothing to answer
	case *wire.Status:
		t := s.totals(now)
		s.out.toConsole(cs.ident, &wire.Totals{Req: m.Req, Totals: t})
	case *wire.Query:
		if s.cl.query(ident, m.Req, m.Query) { // clusterquery.go: read off the reactor
			return
		}
		page, err := s.query(now, m.Query)
		if err != nil {
			s.out.reject(onAdmin, ident, m.Req, errorCode(err), "%v", err)
			return
		}
		s.out.toConsole(cs.ident, &wire.Page{Req: m.Req, Page: page})
	case *wire.Action:
		if cs.readOnly {
			s.out.reject(onAdmin, ident, m.Req, wire.CodeForbidden, "action %s refused: this console attached read-only", m.Action.Kind)
			return
		}
		if s.cl.clusterAct(ident, m.Req, now, m.Action) { // clusteract.go: asks the coordinators holding its jobs
			return
		}
		res, err := s.act(now, m.Action)
		if err != nil {
			s.out.reject(onAdmin, ident, m.Req, errorCode(err), "%v", err)
			return
		}
		s.log.Info("operator action", "kind", m.Action.Kind, "targets", m.Action.Targets, "affected", res.Affected, "errors", len(res.Errors))
		s.out.toConsole(cs.ident, &wire.Acted{Req: m.Req, Result: res})
		s.adm.dirty = true
	default:
		s.out.reject(onAdmin, ident, m.RequestID(), wire.CodeForbidden, "%s is not accepted on the admin socket", m.Command())
	}
}

// changed notes that the state changed: consoles are told CHANGED
// (notifyConsoles).
func (d *dialogue) changed() { d.dirty = true }

// attach opens a console's session for its HELLO h (from routing id
// ident, with key user) and answers WELCOME.
func (d *dialogue) attach(now time.Time, ident []byte, h *wire.Hello, user string, readOnly bool) {
	beat := h.Heartbeat
	if beat == 0 {
		beat = d.cfg.Heartbeat
	}
	beat = min(max(beat, d.cfg.MinHeartbeat), d.cfg.MaxHeartbeat)
	cs := &console{ident: append([]byte(nil), ident...), key: user, readOnly: readOnly, beat: beat, lastSeen: now, lastSent: now}
	d.sess.cons[string(ident)] = cs
	d.sess.next++ // consoles are numbered from the same sequence as peers, for logs
	d.out.toConsole(cs.ident, &wire.Welcome{
		Req: h.Req, Session: uint64(d.sess.next), Heartbeat: beat, Liveness: uint16(d.cfg.Liveness), Server: d.name,
		Limits: wire.Limits{MaxBody: wire.MaxBody, MaxBatch: wire.MaxBatch, MaxPayload: wire.MaxPayload},
	})
	d.log.Info("console attached", "id", h.ID, "host", h.Host, "read_only", h.ReadOnly)
}

// revoked detaches the console at ident, whose key is no longer
// authorised, with DISCONNECT 403.
func (d *dialogue) revoked(ident string, cs *console) {
	d.log.Warn("console detached: its key is no longer authorised", "key", cs.key)
	d.out.toConsole(cs.ident, &wire.Disconnect{Code: wire.CodeForbidden, Reason: "key no longer authorised"})
	delete(d.sess.cons, ident)
}

// notifyConsoles pushes CHANGED to every console, at most once per
// ChangedEvery, when state changed since the last push.
func (d *dialogue) notifyConsoles(now time.Time) {
	if !d.dirty || now.Sub(d.lastChanged) < d.every {
		return
	}
	d.dirty = false
	d.lastChanged = now
	for _, cs := range d.sess.cons {
		if d.out.toConsole(cs.ident, &wire.Changed{}) {
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
