package zsock

import (
	"net"
	"testing"
	"time"

	"github.com/pebbe/zmq4"
)

// ioThreadWait bounds how long a message between two sockets of this
// process may take when libzmq's I/O thread is free: far more than it
// takes on a loaded machine.
const ioThreadWait = 30 * time.Second

// A client whose Handshakes closed while its handshake was still under
// way (the server accepted the connection but said nothing: stopped), and
// whose handshake then failed (the server died), leaves libzmq's I/O
// thread free: sockets of this process still exchange messages. Before
// Close stopped the monitor, the handshake's failure event was sent to the
// closed reader with a blocking send on the I/O thread, which hung for
// good, and with it every connection of the process: every later dial in
// it got no WELCOME.
func TestHandshakesCloseDuringHandshake(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	ready := make(chan struct{}, 1)
	var hs *Handshakes
	dealer(t, "tcp://"+ln.Addr().String(), "", WithBeforeConnect(func(s *zmq4.Socket) error {
		var err error
		hs, err = MonitorHandshakes(s, ready)
		return err
	}))
	var server net.Conn
	select {
	case server = <-accepted:
	case <-time.After(ioThreadWait):
		t.Fatalf("the dealer did not connect within %v", ioThreadWait)
	}
	hs.Close()
	// The server dies: the handshake fails on the I/O thread, which then
	// reconnects (it is not blocked sending the failure's event).
	server.(*net.TCPConn).SetLinger(0)
	server.Close()
	select {
	case again := <-accepted:
		again.Close()
	case <-time.After(ioThreadWait):
		t.Fatalf("the dealer did not connect again within %v after its handshake failed: libzmq's I/O thread is blocked (the failure's monitor event sent to a closed reader?)", ioThreadWait)
	}

	// And it still carries messages.
	router, ep := loopbackRouter(t)
	probe := dealer(t, ep, "probe")
	p := zmq4.NewPoller()
	p.Add(probe, zmq4.POLLOUT)
	if polled, err := p.Poll(ioThreadWait); err != nil || len(polled) == 0 {
		t.Fatalf("a dealer of this process could not send to a router of it within %v (poll: %v): libzmq's I/O thread is blocked (a monitor event sent to a closed reader?)", ioThreadWait, err)
	}
	if _, err := probe.SendMessageDontwait("ping"); err != nil {
		t.Fatalf("send: %v", err)
	}
	msg, ok := recvWithin(t, router, ioThreadWait)
	if !ok {
		t.Fatalf("a message between two sockets of this process did not arrive within %v: libzmq's I/O thread is blocked (a monitor event sent to a closed reader?)", ioThreadWait)
	}
	if len(msg) != 2 || string(msg[0]) != "probe" || string(msg[1]) != "ping" {
		t.Fatalf("router got %q, want [probe ping]", msg)
	}
}
