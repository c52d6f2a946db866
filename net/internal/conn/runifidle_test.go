package conn

import (
	"sync/atomic"
	"testing"
	"time"

	"drover/net/internal/pipe"
	"drover/net/wire"
)

// pipeSession starts a connection over a pipe to a hub the test plays the
// server on, with a minute's heartbeat (so that the loop, once up, blocks
// for long), and returns the connection and the hub.
func pipeSession(t *testing.T, name string, h Handler, ups <-chan *wire.Welcome) (*Conn, *pipe.Hub, []byte) {
	t.Helper()
	sig := make(chan struct{}, 1)
	hub, err := pipe.Listen(name, sig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hub.Close)
	c := start(t, Config{Endpoint: name, ReconnectMin: time.Hour}, h)
	recv(t, sig, "HELLO over the pipe")
	msgs, _ := hub.Take(nil, 10)
	if len(msgs) != 1 {
		t.Fatalf("hub got %d messages, want the HELLO", len(msgs))
	}
	m, err := wire.Decode(msgs[0].Frames[1:])
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.SendValue(msgs[0].Ident, welcome(m.RequestID(), time.Minute)); err != nil {
		t.Fatal(err)
	}
	hub.Flush()
	recv(t, ups, "WELCOME")
	return c, hub, msgs[0].Ident
}

// runWhenIdle calls RunIfIdle until the loop is blocked and it runs f.
func runWhenIdle(t *testing.T, c *Conn, f func(*Link)) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !c.RunIfIdle(f) {
		if time.Now().After(deadline) {
			t.Fatalf("RunIfIdle never ran within %v", wait)
		}
		time.Sleep(time.Millisecond) // polling for the loop to block
	}
}

// TestRunIfIdleSendsFromTheCaller: with the loop blocked, RunIfIdle runs
// f and the handler's Flush on the caller's goroutine, before it returns,
// and what f sends reaches the server without the loop waking.
func TestRunIfIdleSendsFromTheCaller(t *testing.T) {
	r := newRecorder()
	flushes := &flushCounter{recorder: r}
	c, hub, _ := pipeSession(t, "inproc://conn-test-runifidle", flushes, r.ups)
	ran := false
	runWhenIdle(t, c, func(l *Link) {
		ran = true
		if err := l.Send(&wire.Progress{JobID: 7, Attempt: 1, Text: "from the caller"}); err != nil {
			t.Errorf("send: %v", err)
		}
	})
	if !ran || flushes.n.Load() == 0 {
		t.Fatalf("RunIfIdle returned true: f ran %v, Flush ran %d times", ran, flushes.n.Load())
	}
	msgs, _ := hub.Take(nil, 10)
	if len(msgs) != 1 {
		t.Fatalf("hub got %d messages, want the PROGRESS sent from the caller", len(msgs))
	}
	m, err := wire.Decode(msgs[0].Frames[1:])
	if err != nil || m.Command() != wire.CmdProgress {
		t.Fatalf("hub got %v (%v), want the PROGRESS sent from the caller", m, err)
	}
}

// TestRunIfIdleWakesTheLoopToStop: a stop asked for from RunIfIdle wakes
// the loop at once, not at its next heartbeat a minute later.
func TestRunIfIdleWakesTheLoopToStop(t *testing.T) {
	r := newRecorder()
	c, _, _ := pipeSession(t, "inproc://conn-test-runifidle-stop", r, r.ups)
	runWhenIdle(t, c, func(l *Link) { l.Stop(nil) })
	select {
	case <-c.Done():
	case <-time.After(wait):
		t.Fatalf("loop still running %v after a stop from RunIfIdle", wait)
	}
	if c.RunIfIdle(func(*Link) { t.Error("ran after the loop stopped") }) {
		t.Fatal("RunIfIdle reported running on a stopped connection")
	}
}

// TestRunIfIdleNotOverZeroMQ: over TCP it never runs f (a send could take
// a signal the blocked loop waits for); the caller posts instead.
func TestRunIfIdleNotOverZeroMQ(t *testing.T) {
	s, _ := startServer(t, "")
	r := newRecorder()
	c := start(t, Config{Endpoint: s.PeersEndpoint()}, r)
	recv(t, r.ups, "WELCOME")
	for range 20 {
		waitBlocked(t, c)
		if c.RunIfIdle(func(*Link) { t.Error("ran over ZeroMQ") }) {
			t.Fatal("RunIfIdle ran over ZeroMQ")
		}
	}
}

// waitBlocked polls until c's loop is blocked waiting (it has let go of
// the Link), so that RunIfIdle, called next, finds it idle.
func waitBlocked(t *testing.T, c *Conn) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !c.run.TryLock() {
		if time.Now().After(deadline) {
			t.Fatalf("loop not blocked within %v", wait)
		}
		time.Sleep(time.Millisecond) // polling with a deadline
	}
	c.run.Unlock()
}

// flushCounter counts the handler's Flush calls.
type flushCounter struct {
	*recorder
	n atomic.Int32
}

func (f *flushCounter) Flush(*Link) { f.n.Add(1) }
