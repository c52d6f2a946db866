package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/pebbe/zmq4"

	"drover/clock"
	"drover/coord"
	"drover/net/wire"
)

// next returns the next message the server sends c, heartbeats included
// and not answered (recv answers them, which keeps the session alive).
func (c *rawClient) next() wire.Message {
	c.t.Helper()
	poller := zmq4.NewPoller()
	poller.Add(c.sock, zmq4.POLLIN)
	polled, err := poller.Poll(10 * time.Second)
	if err != nil || len(polled) == 0 {
		c.t.Fatalf("no message within 10s (%v)", err)
	}
	frames, err := c.sock.RecvMessageBytes(0)
	if err != nil {
		c.t.Fatal(err)
	}
	m, err := wire.Decode(frames)
	if err != nil {
		c.t.Fatalf("server sent an undecodable message: %v", err)
	}
	return m
}

// TestLivenessOnTheFakeClock: the reactor keeps the time of its Clock. A
// worker that beats once an hour and says nothing more is alive after two
// fake hours (the server's heartbeat comes first) and declared dead after
// four (heartbeat × liveness = 3 h), in however little real time that
// takes, and whatever the load of the machine.
func TestLivenessOnTheFakeClock(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	s := startServer(t, Options{Clock: clk, Coord: coord.Config{Heartbeat: time.Hour, MaxHeartbeat: time.Hour}})
	w := dial(t, s.PeersEndpoint())
	w.send(&wire.Hello{Req: 1, Role: wire.RoleWorker, ID: "w1", Slots: 1})
	if wel := expect[*wire.Welcome](t, w.next()); wel.Heartbeat != time.Hour {
		t.Fatalf("welcome %+v: want a 1h heartbeat", wel)
	}
	// The reactor arms its timer after it sends a message: advancing the
	// fake time before that would leave the timer due at the new time
	// plus its wait, and nothing would fire. It is the server's only
	// timer here (no store), so one pending timer means it waits.
	idle := func() bool { return clk.Pending() == 1 }
	waitFor(t, "the reactor waiting after WELCOME", idle)
	clk.Advance(2 * time.Hour)
	if m := w.next(); fmt.Sprintf("%T", m) != "*wire.Heartbeat" {
		t.Fatalf("after 2 fake hours: %#v, want the server's HEARTBEAT (the worker is alive)", m)
	}
	waitFor(t, "the reactor waiting after its HEARTBEAT", idle)
	clk.Advance(2 * time.Hour)
	d := expect[*wire.Disconnect](t, w.next())
	if d.Code != wire.CodeTimeout {
		t.Fatalf("after 4 silent fake hours: %+v, want DISCONNECT timeout", d)
	}
}
