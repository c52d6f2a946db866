package zsock

import (
	"fmt"
	"sync/atomic"

	"github.com/pebbe/zmq4"
)

// A client whose handshake the server refuses sees nothing on its socket:
// libzmq keeps reconnecting and the messages it queued never leave. Only
// the socket monitor says why (ZMQ_EVENT_HANDSHAKE_FAILED_*), so clients
// watch their handshakes to tell the user they are not authorised instead
// of hanging.

// HandshakeError is a handshake the server or this client refused.
type HandshakeError struct {
	Event zmq4.Event // EVENT_HANDSHAKE_FAILED_AUTH, _PROTOCOL or _NO_DETAIL
	Value int        // the ZAP status code (AUTH) or ZMQ_PROTOCOL_ERROR_* (PROTOCOL)
	Addr  string     // the endpoint
}

// Protocol error values of EVENT_HANDSHAKE_FAILED_PROTOCOL (zmq.h).
const (
	protocolCryptographic     = 0x11000001
	protocolMechanismMismatch = 0x11000002
)

// Auth reports whether the server refused this client's key (its ZAP
// handler said no), as opposed to a handshake that failed for another
// reason.
func (e *HandshakeError) Auth() bool { return e.Event == zmq4.EVENT_HANDSHAKE_FAILED_AUTH }

// Error says what failed and what to check.
func (e *HandshakeError) Error() string {
	switch {
	case e.Event == zmq4.EVENT_HANDSHAKE_FAILED_AUTH:
		return fmt.Sprintf("not authorised: the server at %s refused this client's key (ZAP status %d); is its public key in the server's authorized_keys?", e.Addr, e.Value)
	case e.Event == zmq4.EVENT_HANDSHAKE_FAILED_PROTOCOL && e.Value == protocolMechanismMismatch:
		return fmt.Sprintf("not authorised: the server at %s and this client disagree on security (one uses CURVE, the other not): give --key and --server-key to reach a server with keys, none to reach one without", e.Addr)
	case e.Event == zmq4.EVENT_HANDSHAKE_FAILED_PROTOCOL && e.Value == protocolCryptographic:
		return fmt.Sprintf("not authorised: the CURVE handshake with %s failed (is --server-key the server's public key?)", e.Addr)
	case e.Event == zmq4.EVENT_HANDSHAKE_FAILED_PROTOCOL:
		return fmt.Sprintf("handshake with %s failed: protocol error %#x", e.Addr, e.Value)
	}
	return fmt.Sprintf("not authorised: the handshake with %s failed (is --server-key the server's public key?)", e.Addr)
}

// Handshakes watches one client socket's handshakes. It is owned by the
// socket's owner (its PAIR socket is used on that goroutine only).
type Handshakes struct {
	pair  *zmq4.Socket
	watch *Watch
}

var handshakeSeq atomic.Uint64

// MonitorHandshakes starts monitoring s's handshakes (call it before s
// connects: WithBeforeConnect); ready gets a token when an event arrives.
func MonitorHandshakes(s *zmq4.Socket, ready chan struct{}) (*Handshakes, error) {
	ep := fmt.Sprintf("inproc://drover-monitor-%d", handshakeSeq.Add(1))
	events := zmq4.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq4.EVENT_HANDSHAKE_FAILED_PROTOCOL |
		zmq4.EVENT_HANDSHAKE_FAILED_AUTH | zmq4.EVENT_HANDSHAKE_SUCCEEDED
	if err := s.Monitor(ep, events); err != nil {
		return nil, fmt.Errorf("zsock: monitor: %w", err)
	}
	pair, err := zmq4.NewSocket(zmq4.PAIR)
	if err != nil {
		s.Monitor("", 0)
		return nil, fmt.Errorf("zsock: monitor socket: %w", err)
	}
	pair.SetLinger(0)
	if err := pair.Connect(ep); err != nil {
		pair.Close()
		s.Monitor("", 0)
		return nil, fmt.Errorf("zsock: monitor connect: %w", err)
	}
	w, err := NewWatch(pair, ready)
	if err != nil {
		pair.Close()
		s.Monitor("", 0)
		return nil, err
	}
	return &Handshakes{pair: pair, watch: w}, nil
}

// Failure reads the events that arrived, without blocking, and returns
// the last failure among them, or nil when there was none (a success after
// a failure clears it).
func (h *Handshakes) Failure() *HandshakeError {
	var last *HandshakeError
	for {
		ev, addr, val, err := h.pair.RecvEvent(zmq4.DONTWAIT)
		if err != nil {
			return last
		}
		switch ev {
		case zmq4.EVENT_HANDSHAKE_SUCCEEDED:
			last = nil
		case zmq4.EVENT_HANDSHAKE_FAILED_AUTH, zmq4.EVENT_HANDSHAKE_FAILED_PROTOCOL, zmq4.EVENT_HANDSHAKE_FAILED_NO_DETAIL:
			last = &HandshakeError{Event: ev, Value: val, Addr: addr}
		}
	}
}

// Close stops watching; call it before closing the monitored socket.
func (h *Handshakes) Close() {
	if h == nil {
		return
	}
	h.watch.Close()
	h.pair.Close()
}
