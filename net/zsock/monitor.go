package zsock

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/pebbe/zmq4"
)

// A client whose handshake the server refuses sees nothing on its socket:
// libzmq keeps reconnecting and the messages it queued never leave. Only
// the socket monitor says why (ZMQ_EVENT_HANDSHAKE_FAILED_*), so clients
// watch their handshakes to tell the user they are not authorised instead
// of hanging.

// ErrNotAuthorized is what errors.Is finds in every refusal of a client
// for its key: a HandshakeError, and drover's clients' errors for ERROR or
// DISCONNECT 403.
var ErrNotAuthorized = errors.New("not authorised")

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

// Is makes errors.Is(err, ErrNotAuthorized) true: every handshake failure
// of a client is a refusal to let it in.
func (e *HandshakeError) Is(target error) bool { return target == ErrNotAuthorized }

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
	s     *zmq4.Socket // the socket watched
	pair  *zmq4.Socket
	watch *Watch
	rang  atomic.Bool
}

var handshakeSeq atomic.Uint64

// MonitorHandshakes starts monitoring s's handshakes (call it before s
// connects: WithBeforeConnect); ready gets a token when an event arrives
// (and Rang says so).
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
	h := &Handshakes{s: s, pair: pair}
	w, err := NewWatchFunc(pair, func() {
		h.rang.Store(true)
		select {
		case ready <- struct{}{}:
		default:
		}
	})
	if err != nil {
		pair.Close()
		s.Monitor("", 0)
		return nil, err
	}
	h.watch = w
	return h, nil
}

// Rang reports whether the monitor signalled since the last call: only
// then need Failure be asked.
func (h *Handshakes) Rang() bool { return h.rang.Swap(false) }

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

// Outcome reads the events that arrived, without blocking, up to the
// first handshake that ended: done is false when none has yet; err is nil
// for a success.
func (h *Handshakes) Outcome() (done bool, err *HandshakeError) {
	for {
		ev, addr, val, rerr := h.pair.RecvEvent(zmq4.DONTWAIT)
		if rerr != nil {
			return false, nil
		}
		switch ev {
		case zmq4.EVENT_HANDSHAKE_SUCCEEDED:
			return true, nil
		case zmq4.EVENT_HANDSHAKE_FAILED_AUTH, zmq4.EVENT_HANDSHAKE_FAILED_PROTOCOL, zmq4.EVENT_HANDSHAKE_FAILED_NO_DETAIL:
			return true, &HandshakeError{Event: ev, Value: val, Addr: addr}
		}
	}
}

// Close stops watching; call it before closing the monitored socket, on
// the goroutine that owns it. It stops the socket's monitor before it
// closes the PAIR that reads it: libzmq's I/O thread sends each event with
// a blocking send, and one sent to a monitor whose reader is gone (a
// handshake that fails after the PAIR closed, even while the socket
// lingers) blocks that thread for good, and with it every ZeroMQ
// connection of the process (libzmq issue 3575).
func (h *Handshakes) Close() {
	if h == nil {
		return
	}
	// Before the reader goes. (An error: the socket was closed first, and
	// its monitor lives on while it lingers; close in the order above.)
	h.s.Monitor("", 0)
	h.watch.Close()
	h.pair.Close()
}
