package server

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"drover/auth"
	"drover/coord"
	"drover/coord/id"
	"drover/net/wire"
	"drover/net/zsock"
)

// Auth turns on CURVE for every listener (docs/PROTOCOL.md §15): the
// server's secret key, and the client keys admitted with their roles.
type Auth struct {
	// Secret is the server's CURVE secret key (Z85).
	Secret string
	// Keys are the clients admitted: a ZAP handler refuses every other key
	// at the handshake, and each command is checked against the role of
	// its sender's key. When they change, the sessions of keys no longer
	// allowed end.
	Keys *auth.Authorizer
	// OnForbidden is called on the reactor goroutine for each command
	// refused for its key's role (metrics). It must not block.
	OnForbidden func(e auth.Entry)
	// OnRefused is called, on the ZAP handler's goroutine, for each
	// handshake refused (metrics). It must not block.
	OnRefused func(l auth.Listener)
}

// authState is the Server's auth part, the reactor's side of Auth: the
// ZAP decisions at the handshake, each message's sender's rights, the
// sessions a change of the keys ends, and the counts of what was
// refused. Nil without Options.Auth: every message then has the rights of
// this process (inProcess).
type authState struct {
	// The parts a change of the keys reaches (recheck), wired by New.
	c    *coord.Coordinator
	sess *sessions
	adm  *dialogue
	out  *sender

	opts      *Auth
	domain    string // the ZAP domains' prefix: each listener's is domain.listener
	log       *slog.Logger
	changed   atomic.Bool // the keys changed: look at the sessions again
	cancel    func()      // stops OnChange
	unzap     []func()    // unregister the ZAP domains
	forbidden uint64      // commands refused for their key's role
	refused   atomic.Uint64
}

// newAuth registers the ZAP handler of each listener's domain (before the
// sockets bind; n is the server's number in the process) and follows the
// keys' changes, ringing the reactor (changed). Nil without a: no CURVE.
func newAuth(a *Auth, n uint64, log *slog.Logger, ring func()) (*authState, error) {
	if a == nil {
		return nil, nil
	}
	if a.Keys == nil || a.Secret == "" {
		return nil, fmt.Errorf("auth: want the server's secret key and the authorized keys")
	}
	as := &authState{opts: a, domain: fmt.Sprintf("drover-%d", n), log: log}
	for _, l := range []auth.Listener{auth.Peers, auth.Admin, auth.Events} {
		unregister, err := zsock.HandleZAP(as.domain+"."+l.String(), as.admit(l))
		if err != nil {
			as.close()
			return nil, err
		}
		as.unzap = append(as.unzap, unregister)
	}
	as.cancel = a.Keys.OnChange(func() {
		as.changed.Store(true)
		ring()
	})
	return as, nil
}

// close unregisters the ZAP domains (after the sockets closed).
func (a *authState) close() {
	if a == nil {
		return
	}
	if a.cancel != nil {
		a.cancel()
	}
	for _, f := range a.unzap {
		f()
	}
	a.unzap = nil
}

// security is the socket option of listener l.
func (a *authState) security(l auth.Listener) []zsock.Option {
	if a == nil {
		return nil
	}
	return []zsock.Option{zsock.WithSecurity(zsock.Security{
		Secret: a.opts.Secret,
		Domain: a.domain + "." + l.String(),
	})}
}

// admit is the ZAP decision for listener l: a listed key whose role may
// use l gets through, named by its public key (the User-Id of its
// messages).
func (a *authState) admit(l auth.Listener) zsock.ZAPFunc {
	return func(r zsock.ZAPRequest) (string, error) {
		e, ok := a.opts.Keys.Keys().Lookup(r.Key)
		switch {
		case !ok:
			a.refuse(l)
			a.log.Warn("handshake refused: key not in authorized_keys", "listener", l.String(), "address", r.Address, "key", r.Key)
			return "", fmt.Errorf("key not authorised")
		case !e.Role.MayConnect(l):
			a.refuse(l)
			a.log.Warn("handshake refused: the key's role may not use this listener", "listener", l.String(), "address", r.Address, "key", e.Label(), "role", e.Role.String())
			return "", fmt.Errorf("role %s may not use the %s listener", e.Role, l)
		}
		return r.Key, nil
	}
}

// refuse counts a handshake refused on listener l.
func (a *authState) refuse(l auth.Listener) {
	a.refused.Add(1)
	if f := a.opts.OnRefused; f != nil {
		f(l)
	}
}

// forbid counts a command refused for key e's role.
func (a *authState) forbid(e auth.Entry) {
	if a == nil {
		return
	}
	a.forbidden++
	if f := a.opts.OnForbidden; f != nil {
		f(e)
	}
}

// inProcess is the rights of a message with no User-Id: from a client in
// this process (inproc, pipes), or from anyone when CURVE is off.
var inProcess = auth.Entry{Role: auth.Operator, Comment: "in-process"}

// entryOf returns the authorized_keys entry of a message's sender (user is
// its User-Id), and false when its key is no longer listed.
func (a *authState) entryOf(user string) (auth.Entry, bool) {
	if a == nil || user == "" {
		return inProcess, true
	}
	return a.opts.Keys.Keys().Lookup(user)
}

// forbid answers a command the sender's key may not send with ERROR 403,
// and counts it by key.
func (s *Server) forbid(w sockWriter, ident []byte, req uint64, e auth.Entry, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.auth.forbid(e)
	s.log.Warn("command forbidden", "key", e.Label(), "role", e.Role.String(), "why", msg)
	s.out.send(s.out.sock(w), ident, &wire.Error{Req: req, Code: wire.CodeForbidden, Msg: wire.Clip(msg, wire.MaxText)})
}

// revokedMessage answers a message whose key is no longer listed with
// ERROR 403 (its session, if any, was ended with DISCONNECT 403 first).
func (s *Server) revokedMessage(w sockWriter, ident []byte, req uint64, user string) {
	s.forbid(w, ident, req, auth.Entry{Key: user, Comment: user[:min(8, len(user))] + "…"}, "key no longer authorised")
}

// recheck ends, after the keys changed, the sessions whose key is no
// longer listed or whose role no longer allows them.
func (a *authState) recheck(now time.Time) {
	if a == nil || !a.changed.Swap(false) {
		return
	}
	var ended []id.Session
	for sid, p := range a.sess.peer {
		if p.key == "" {
			continue
		}
		if e, ok := a.entryOf(p.key); ok && e.Role.MayHello(auth.Peers, p.role) {
			continue
		}
		ended = append(ended, sid)
	}
	for _, sid := range ended {
		a.endPeer(now, sid)
	}
	for ident, cs := range a.sess.cons {
		if cs.key == "" {
			continue
		}
		if e, ok := a.entryOf(cs.key); ok && e.Role.MayHello(auth.Admin, wire.RoleConsole) {
			continue
		}
		a.adm.revoked(ident, cs)
	}
	a.adm.dirty = true
}

// endPeer ends the session sid, whose key is no longer authorised, with
// DISCONNECT 403: the client is told at once (and stops), whether recheck
// found the session or a message of its key came first.
func (a *authState) endPeer(now time.Time, sid id.Session) {
	p := a.sess.peer[sid]
	a.log.Warn("session ended: its key is no longer authorised", "session", sid, "id", p.id, "key", p.key)
	a.out.toPeer(p.ident, &wire.Disconnect{Code: wire.CodeForbidden, Reason: "key no longer authorised"})
	a.c.Disconnect(now, sid)
	a.sess.forget(sid)
}
