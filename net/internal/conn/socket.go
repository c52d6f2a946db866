package conn

import (
	"errors"
	"fmt"
	"time"

	"github.com/pebbe/zmq4"

	"drover/net/internal/pipe"
	"drover/net/zsock"
)

// socket is one session attempt's transport: a ZeroMQ DEALER, or a pipe to
// a server in this process (package pipe). Used by the loop goroutine only.
type socket interface {
	// send hands frames over without blocking; zsock.WouldBlock(err) when
	// the socket cannot take them now.
	send(frames [][]byte) error
	// recv returns the next message, errEmpty when none waits, or another
	// error when the session's transport is gone.
	recv() ([][]byte, error)
	// ready reports, without blocking, whether a message waits and whether
	// a message would be taken.
	ready() (read, write bool, err error)
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
	d, err := c.newDealer()
	if err != nil {
		return nil, err
	}
	w, err := zsock.NewWatch(d, ready)
	if err != nil {
		d.Close()
		return nil, err
	}
	return &dealerSocket{d: d, w: w}, nil
}

type dealerSocket struct {
	d  *zmq4.Socket
	w  *zsock.Watch
	io zsock.MsgIO
}

func (s *dealerSocket) send(frames [][]byte) error {
	return s.io.Send(s.d, zmq4.DONTWAIT, frames...)
}

func (s *dealerSocket) recv() ([][]byte, error) {
	frames, err := s.io.Recv(s.d, zmq4.DONTWAIT)
	if zsock.WouldBlock(err) {
		return nil, errEmpty
	}
	return frames, err
}

func (s *dealerSocket) ready() (bool, bool, error) { return zsock.Ready(s.d) }

func (s *dealerSocket) close(linger time.Duration) {
	s.w.Close()
	s.d.SetLinger(linger)
	s.d.Close()
}

type pipeSocket struct {
	c   *pipe.Client
	got [][][]byte
}

func (s *pipeSocket) send(frames [][]byte) error { return s.c.Send(frames) }

func (s *pipeSocket) recv() ([][]byte, error) {
	got, _, err := s.c.Take(s.got[:0], 1)
	s.got = got
	if err != nil {
		return nil, fmt.Errorf("the server in this process stopped: %w", err)
	}
	if len(got) == 0 {
		return nil, errEmpty
	}
	m := got[0]
	got[0] = nil
	return m, nil
}

func (s *pipeSocket) ready() (bool, bool, error) { return s.c.Pending(), true, nil }

// close: what was sent is already with the server; nothing lingers.
func (s *pipeSocket) close(time.Duration) { s.c.Close() }
