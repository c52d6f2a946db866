//go:build unix

package zsock

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/pebbe/zmq4"
	"golang.org/x/sys/unix"
)

// Why a watch: a goroutine blocked in zmq_poll is blocked in a cgo call,
// which holds its OS thread and, until the runtime's sysmon takes it back,
// its P. With a reactor and several connection loops in one process each
// waiting in zmq_poll, the goroutines they wake (job handlers, callers)
// wait for a free P, and every message pays for thread hand-offs. A Watch
// instead waits on the socket's ZMQ_FD with Go's own network poller, so
// the owner parks on a channel like any goroutine and only calls into
// libzmq when there is something to do (always without blocking).
//
// ZMQ_FD is edge-triggered: libzmq signals it when the socket's state may
// have changed (a message arrived on a pipe the socket had found empty, a
// full pipe drained), not while a message is waiting. The owner must
// therefore work the socket until it would block (or until Events says
// there is nothing to read) before it waits for the next signal; Ready
// says whether it may wait.

// Watch turns the signals of one socket's ZMQ_FD into tokens on a channel.
// It reads the descriptor's readiness only; the socket itself stays with
// its owner, who alone calls libzmq on it.
type Watch struct {
	f    *os.File
	done chan struct{}
}

// NewWatch starts watching s: each signal puts a token in ch unless one is
// already there (give ch a buffer of one; it may be shared by several
// watches when the owner checks every socket it owns after a wake). A
// token is also put once at the start. Close the watch before closing s.
func NewWatch(s *zmq4.Socket, ch chan struct{}) (*Watch, error) {
	return NewWatchFunc(s, func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	})
}

// NewWatchFunc is NewWatch calling notify (on the watch's goroutine; it
// must not block) for each signal instead of putting a token in a
// channel: an owner waiting on one channel for many watches can note
// which socket signalled before it rings.
func NewWatchFunc(s *zmq4.Socket, notify func()) (*Watch, error) {
	fd, err := s.GetFd()
	if err != nil {
		return nil, fmt.Errorf("socket descriptor (ZMQ_FD): %w", err)
	}
	// A duplicate of the descriptor, so that closing the watch removes it
	// from Go's poller without touching the one libzmq owns. It shares the
	// open file (and libzmq made that non-blocking), so it sees the same
	// signals.
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("duplicating the socket descriptor %d: %w", fd, err)
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return nil, fmt.Errorf("socket descriptor %d: non-blocking: %w", fd, err)
	}
	f := os.NewFile(uintptr(dup), "zmq-fd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("socket descriptor %d: %w", fd, err)
	}
	// Check that Go's poller took it: a descriptor it cannot poll would
	// make every wait fail at once.
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		f.Close()
		return nil, fmt.Errorf("socket descriptor %d is not pollable: %w", fd, err)
	}
	w := &Watch{f: f, done: make(chan struct{})}
	go w.run(rc, notify)
	return w, nil
}

func (w *Watch) run(rc interface {
	Read(func(uintptr) bool) error
}, notify func()) {
	defer close(w.done)
	err := rc.Read(func(uintptr) bool {
		notify()
		return false // wait for the next signal; Close ends the Read
	})
	if err != nil && !errors.Is(err, os.ErrClosed) {
		// Nothing else can end it: report it as a signal so that the owner
		// looks at its socket (and finds it broken) rather than waiting
		// forever.
		notify()
	}
}

// Close stops the watch and waits for its goroutine.
func (w *Watch) Close() {
	if w == nil || w.f == nil {
		return
	}
	w.f.Close()
	<-w.done
	w.f = nil
}

// Ready reports what s can do now without blocking: read (a message is
// waiting) and write (a message would be accepted). Asking also lets
// libzmq process the socket's pending commands, which is what re-arms
// ZMQ_FD's signal.
func Ready(s *zmq4.Socket) (read, write bool, err error) {
	ev, err := s.GetEvents()
	if err != nil {
		return false, false, fmt.Errorf("socket events (ZMQ_EVENTS): %w", err)
	}
	return ev&zmq4.POLLIN != 0, ev&zmq4.POLLOUT != 0, nil
}
