package server

import (
	"strings"
	"sync/atomic"

	"github.com/pebbe/zmq4"

	"drover/admin"
	"drover/net/wire"
)

// events is the Server's events part: the PUB socket (an XPUB, so that
// subscriptions are seen) and the topic prefixes its subscribers asked
// for. The reactor goroutine owns it; only published is read elsewhere.
type events struct {
	pub  *zmq4.Socket    // nil when Options.Events is "-"
	ep   string          // the bound endpoint, the OS's port filled in
	subs map[string]bool // topic prefixes the events XPUB has subscribers for
	// published counts events sent on the events socket (atomic: tests
	// read it while the reactor runs).
	published atomic.Uint64
}

// subscribed reports whether some subscriber wants events of this kind.
func (e *events) subscribed(kind string) bool {
	for prefix := range e.subs {
		if strings.HasPrefix(kind, prefix) {
			return true
		}
	}
	return false
}

// publish sends ev on the events socket (if anyone subscribed to its kind)
// and hands it to OnEvent.
func (s *Server) publish(ev *admin.Event) {
	if s.ev.pub != nil && s.ev.subscribed(string(ev.Kind)) {
		if frames, err := wire.EncodeEvent(*ev); err == nil {
			s.ev.published.Add(1) // first: a test may read it as soon as the event arrives
			s.sent(s.ev.pub)
			s.io.Send(s.ev.pub, zmq4.DONTWAIT, frames...) // best effort: PUB drops for slow subscribers
		}
	}
	if s.opts.OnEvent != nil {
		s.opts.OnEvent(*ev)
	}
}
