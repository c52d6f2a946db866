//go:build unix

package zsock

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/pebbe/zmq4"
)

// waitToken waits, up to the test deadline, for a token on ch.
func waitToken(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(wait):
		t.Fatalf("no signal within %v: %s", wait, what)
	}
}

// drainAll receives every message s has, the way a watch's owner must
// before it waits again.
func drainAll(t *testing.T, s *zmq4.Socket) int {
	t.Helper()
	n := 0
	for {
		if _, err := s.RecvMessageBytes(zmq4.DONTWAIT); err != nil {
			if !WouldBlock(err) {
				t.Fatalf("recv: %v", err)
			}
			return n
		}
		n++
	}
}

// The owner's loop, run on a watch alone: wait for a signal, work the
// socket until Ready says nothing is left, wait again. Every message sent
// must be received this way, over tcp and inproc, for messages sent one by
// one (each finding the socket idle) and in bursts (arriving while the
// owner works).
func TestWatchDeliversEverySignal(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endpoint func(t *testing.T) (*zmq4.Socket, string)
	}{
		{"tcp", func(t *testing.T) (*zmq4.Socket, string) { return loopbackRouter(t) }},
		{"inproc", func(t *testing.T) (*zmq4.Socket, string) {
			ep := fmt.Sprintf("inproc://watch-test-%d", time.Now().UnixNano())
			r, err := Router(ep)
			if err != nil {
				t.Fatal(err)
			}
			closeLater(t, r)
			return r, ep
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			router, ep := tc.endpoint(t)
			ch := make(chan struct{}, 1)
			w, err := NewWatch(router, ch)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			d := dealer(t, ep, "peer")

			const total = 2000
			sent := make(chan error, 1)
			go func() {
				// The dealer belongs to this goroutine from here on.
				for i := range total {
					if _, err := d.SendMessage("m", i); err != nil {
						sent <- err
						return
					}
					if i%100 == 0 {
						runtime.Gosched() // let the owner find the socket empty now and then
					}
				}
				sent <- nil
			}()
			got := 0
			for got < total {
				waitToken(t, ch, fmt.Sprintf("%d of %d messages received", got, total))
				for {
					got += drainAll(t, router)
					read, _, err := Ready(router)
					if err != nil {
						t.Fatal(err)
					}
					if !read {
						break
					}
				}
			}
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
			if got != total {
				t.Fatalf("received %d, want %d", got, total)
			}
		})
	}
}

// Close stops the watch's goroutine, and the socket is then closed and its
// descriptor released as usual; a second Close does nothing.
func TestWatchClose(t *testing.T) {
	router, _ := loopbackRouter(t)
	ch := make(chan struct{}, 1)
	w, err := NewWatch(router, ch)
	if err != nil {
		t.Fatal(err)
	}
	waitToken(t, ch, "the first token")
	done := make(chan struct{})
	go func() {
		w.Close()
		w.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatal("Close did not return")
	}
}

// A closed socket cannot be watched: the error names ZMQ_FD.
func TestWatchClosedSocket(t *testing.T) {
	s, err := zmq4.NewSocket(zmq4.DEALER)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := NewWatch(s, make(chan struct{}, 1)); err == nil {
		t.Fatal("NewWatch on a closed socket: no error")
	}
}
