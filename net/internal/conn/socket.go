package conn

import (
	"errors"
	"fmt"
	"time"

	"github.com/pebbe/zmq4"

	"drover/net/internal/pipe"
	"drover/net/wire"
	"drover/net/zsock"
)

// socket is one session attempt's transport: a ZeroMQ DEALER, or a pipe to
// a server in this process (package pipe). Used by the loop goroutine only.
type socket interface {
	// send hands a message over without blocking; zsock.WouldBlock(err)
	// when the socket cannot take it now. frames are its encoding; m, when
	// not nil, is the message itself, which a pipe may hand over instead
	// (see byValue).
	send(m wire.Message, frames [][]byte) error
	// recv returns the next message, as frames to decode or as a value;
	// errEmpty when none waits, or another error when the session's
	// transport is gone.
	recv() ([][]byte, wire.Message, error)
	// ready reports, without blocking, whether a message waits and whether
	// a message would be taken.
	ready() (read, write bool, err error)
	// refused returns the handshake failure the socket saw since it was
	// last asked, if any (a pipe has none).
	refused() error
	close(linger time.Duration)
}

// errEmpty: nothing to receive now (a signal will come when there is).
var errEmpty = errors.New("nothing to receive")

// dial makes the transport of a session attempt: a pipe when a server in
// this process listens on the endpoint, else a DEALER. Both signal ready.
func (c *Conn) dial(ready chan struct{}) (socket, error) {
	if IsInproc(c.cfg.Endpoint) {
		if p, ok := pipe.Dial(c.cfg.Endpoint, ready); ok {
			return &pipeSocket{c: p}, nil
		}
	}
	d, hs, err := c.newDealer(ready)
	if err != nil {
		return nil, err
	}
	w, err := zsock.NewWatch(d, ready)
	if err != nil {
		hs.Close()
		d.Close()
		return nil, err
	}
	return &dealerSocket{d: d, w: w, hs: hs}, nil
}

type dealerSocket struct {
	d  *zmq4.Socket
	w  *zsock.Watch
	hs *zsock.Handshakes
	io zsock.MsgIO
}

func (s *dealerSocket) refused() error {
	if !s.hs.Rang() {
		return nil
	}
	if f := s.hs.Failure(); f != nil {
		return f
	}
	return nil
}

func (s *dealerSocket) send(_ wire.Message, frames [][]byte) error {
	return s.io.Send(s.d, zmq4.DONTWAIT, frames...)
}

func (s *dealerSocket) recv() ([][]byte, wire.Message, error) {
	frames, err := s.io.Recv(s.d, zmq4.DONTWAIT)
	if zsock.WouldBlock(err) {
		return nil, nil, errEmpty
	}
	return frames, nil, err
}

func (s *dealerSocket) ready() (bool, bool, error) { return zsock.Ready(s.d) }

func (s *dealerSocket) close(linger time.Duration) {
	s.w.Close()
	s.hs.Close()
	s.d.SetLinger(linger)
	s.d.Close()
}

type pipeSocket struct {
	c    *pipe.Client
	got  []pipe.Msg // taken from the pipe, handed out from next on
	next int
}

func (s *pipeSocket) send(m wire.Message, frames [][]byte) error {
	if m != nil && byValue(m.Command()) {
		return s.c.SendValue(m)
	}
	return s.c.Send(frames)
}

// pipeTake is how many messages a pipe socket takes from its pipe at once.
const pipeTake = 64

func (s *pipeSocket) recv() ([][]byte, wire.Message, error) {
	if s.next == len(s.got) {
		got, _, err := s.c.Take(s.got[:0], pipeTake)
		s.got, s.next = got, 0
		if err != nil {
			return nil, nil, fmt.Errorf("the server in this process stopped: %w", err)
		}
		if len(got) == 0 {
			return nil, nil, errEmpty
		}
	}
	m := s.got[s.next]
	s.got[s.next] = pipe.Msg{}
	s.next++
	return m.Frames, m.Value, nil
}

// byValue reports whether a client's message of command c goes through a
// pipe as a value rather than as copied frames: the messages whose memory
// the client library owns and gives up once sent (a RESULT's items stay
// unchanged until acknowledged; see worker.Result). Messages carrying a
// caller's data that the caller may reuse once the call returns (SUBMIT's
// payloads, say) are copied.
func byValue(c wire.Command) bool {
	switch c {
	case wire.CmdResult, wire.CmdHeartbeat, wire.CmdDisconnect:
		return true
	}
	return false
}

func (s *pipeSocket) refused() error { return nil }

func (s *pipeSocket) ready() (bool, bool, error) {
	return s.next < len(s.got) || s.c.Pending(), true, nil
}

// close: what was sent is already with the server; nothing lingers.
func (s *pipeSocket) close(time.Duration) { s.c.Close() }
