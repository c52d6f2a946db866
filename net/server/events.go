package server

import (
	"strings"
	"sync/atomic"

	"github.com/pebbe/zmq4"
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
