package server

import (
	"testing"
	"time"

	"drover/coord/broker"
	"drover/net/wire"
)

// TestRobotsHeaderIsOneName: the broker decides which workers probe a
// host's robots.txt by the same HELLO header the wire and the worker
// library use.
func TestRobotsHeaderIsOneName(t *testing.T) {
	if broker.RobotsHeader != wire.RobotsHeader {
		t.Fatalf("broker.RobotsHeader %q, wire.RobotsHeader %q: want one name", broker.RobotsHeader, wire.RobotsHeader)
	}
}

// TestRobotsRefusedCountedOnce: a ROBOTS report the coordinator refuses is
// answered ERROR with its request id and the code of its refusal (409 for
// a host the worker holds no job of, 400 for an origin that is not one),
// and counted once in malformed; a report for a host the worker holds a
// job of is taken without an answer.
func TestRobotsRefusedCountedOnce(t *testing.T) {
	s := startServer(t, Options{})
	w := dial(t, s.PeersEndpoint())
	hello(t, w, wire.RoleWorker, "w", 1)
	p := dial(t, s.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p", 0)
	p.send(&wire.Submit{Req: 2, Jobs: []wire.SubmitItem{{Key: key("http://held.test/x")}}})
	expect[*wire.Submitted](t, p.recv())
	expect[*wire.Job](t, w.recv())
	before := totals(t, s).Malformed

	w.send(&wire.Robots{Req: 10, Origin: "http://held.test", TTL: time.Hour}) // taken: no answer
	for _, c := range []struct {
		req    uint64
		origin string
		code   wire.Code
	}{
		{11, "http://other.test", wire.CodeConflict},
		{12, "http://held.test/robots.txt", wire.CodeMalformed},
	} {
		w.send(&wire.Robots{Req: c.req, Origin: c.origin, TTL: time.Hour})
		e := expect[*wire.Error](t, w.recv())
		if e.Req != c.req || e.Code != c.code {
			t.Fatalf("ROBOTS %d for %s: ERROR %d for request %d (%s), want ERROR %d for request %d", c.req, c.origin, e.Code, e.Req, e.Msg, c.code, c.req)
		}
	}
	if got := totals(t, s).Malformed - before; got != 2 {
		t.Fatalf("malformed rose by %d, want 2: each refused report counted once", got)
	}
}
