package pipe

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"drover/net/wire"
)

func listen(t *testing.T) (*Hub, chan struct{}, string) {
	t.Helper()
	name := fmt.Sprintf("inproc://pipe-test-%s", t.Name())
	sig := make(chan struct{}, 1)
	h, err := Listen(name, sig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h, sig, name
}

func dial(t *testing.T, name string) (*Client, chan struct{}) {
	t.Helper()
	sig := make(chan struct{}, 1)
	c, ok := Dial(name, sig)
	if !ok {
		t.Fatalf("Dial(%q): no listener", name)
	}
	t.Cleanup(c.Close)
	return c, sig
}

func token(t *testing.T, sig chan struct{}, what string) {
	t.Helper()
	select {
	case <-sig:
	case <-time.After(5 * time.Second):
		t.Fatalf("no signal within 5s: %s", what)
	}
}

// A message goes client -> server as copied frames with the client's
// routing id first, and server -> client by that id as a value; each side
// is signalled.
func TestRoundTrip(t *testing.T) {
	h, hsig, name := listen(t)
	c, csig := dial(t, name)
	if !IsClient(c.Ident()) {
		t.Fatalf("IsClient(%q) = false", c.Ident())
	}
	body := []byte("body")
	if err := c.Send([][]byte{[]byte("DRV/1"), body}); err != nil {
		t.Fatal(err)
	}
	body[0] = 'X' // the sender may reuse its buffers at once
	token(t, hsig, "server side")
	got, more := h.Take(nil, 10)
	if more || len(got) != 1 {
		t.Fatalf("took %d messages (more %v), want 1", len(got), more)
	}
	m := got[0].Frames
	if string(got[0].Ident) != string(c.Ident()) || got[0].Value != nil {
		t.Fatalf("server got ident %q value %v, want the client's ident and frames", got[0].Ident, got[0].Value)
	}
	if len(m) != 3 || string(m[0]) != string(c.Ident()) || string(m[1]) != "DRV/1" || string(m[2]) != "body" {
		t.Fatalf("server got %q, want [ident DRV/1 body]", m)
	}
	reply := &wire.ResultOK{Req: 3}
	if err := h.SendValue(m[0], reply); err != nil {
		t.Fatal(err)
	}
	h.Flush()
	token(t, csig, "client side")
	back, more, err := c.Take(nil, 10)
	if err != nil || more || len(back) != 1 || back[0].Value != wire.Message(reply) {
		t.Fatalf("client got %+v (more %v, err %v), want the RESULT-OK itself", back, more, err)
	}
	if h.Pending() || c.Pending() {
		t.Fatal("pending after everything was taken")
	}
}

// A value goes through as it is, in order with frames, each way.
func TestValues(t *testing.T) {
	h, _, name := listen(t)
	c, _ := dial(t, name)
	res := &wire.Result{Req: 7, Items: []wire.ResultItem{{JobID: 1, Attempt: 1, Outcome: wire.OutcomeOK, Output: []byte("out")}}}
	if err := c.Send([][]byte{[]byte("first")}); err != nil {
		t.Fatal(err)
	}
	if err := c.SendValue(res); err != nil {
		t.Fatal(err)
	}
	got, _ := h.Take(nil, 10)
	if len(got) != 2 || got[0].Value != nil || got[1].Value != wire.Message(res) || string(got[1].Ident) != string(c.Ident()) {
		t.Fatalf("server got %+v, want the frames, then the RESULT itself from %q", got, c.Ident())
	}
	job := &wire.Job{Jobs: []wire.JobItem{{JobID: 1}}}
	if err := h.SendValue(c.Ident(), job); err != nil {
		t.Fatal(err)
	}
	back, _, err := c.Take(nil, 10)
	if err != nil || len(back) != 1 || back[0].Value != wire.Message(job) {
		t.Fatalf("client got %+v (%v), want the JOB itself", back, err)
	}
	if err := h.SendValue([]byte("\x00pipe:nobody"), job); !errors.Is(err, ErrUnroutable) {
		t.Fatalf("value to nobody: %v, want ErrUnroutable", err)
	}
}

// The server's sends wake a client at the next Flush, once for all of
// them; a client nobody sent to is not woken.
func TestFlushWakesOnce(t *testing.T) {
	h, _, name := listen(t)
	c, csig := dial(t, name)
	_, other := dial(t, name)
	for _, m := range []wire.Message{&wire.ResultOK{Req: 1}, &wire.Job{}} {
		if err := h.SendValue(c.Ident(), m); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-csig:
		t.Fatal("woken before the Flush")
	default:
	}
	h.Flush()
	token(t, csig, "the Flush")
	if got, _, _ := c.Take(nil, 10); len(got) != 2 {
		t.Fatalf("took %d messages, want both", len(got))
	}
	h.Flush() // nothing sent since: no token
	for what, sig := range map[string]chan struct{}{"client": csig, "other client": other} {
		select {
		case <-sig:
			t.Fatalf("%s woken with nothing sent to it", what)
		default:
		}
	}
}

// Take hands out at most max messages, in order, and says more wait.
func TestTakeBoundAndOrder(t *testing.T) {
	h, _, name := listen(t)
	c, _ := dial(t, name)
	for i := range 5 {
		if err := c.Send([][]byte{{byte(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	got, more := h.Take(nil, 3)
	if len(got) != 3 || !more {
		t.Fatalf("took %d (more %v), want 3 and more", len(got), more)
	}
	got, more = h.Take(got, 3)
	if len(got) != 5 || more {
		t.Fatalf("took %d in all (more %v), want 5 and no more", len(got), more)
	}
	for i, m := range got {
		if m.Frames[1][0] != byte(i) {
			t.Fatalf("message %d is %d: out of order", i, m.Frames[1][0])
		}
	}
}

// After a client closes, the server's sends to it are unroutable, and
// what it sent before still reaches the server.
func TestClientClose(t *testing.T) {
	h, _, name := listen(t)
	c, _ := dial(t, name)
	if err := c.Send([][]byte{[]byte("bye")}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if got, _ := h.Take(nil, 10); len(got) != 1 || string(got[0].Frames[1]) != "bye" {
		t.Fatalf("server got %q after the client closed, want its last message", got)
	}
	if err := h.SendValue(c.Ident(), &wire.Heartbeat{}); !errors.Is(err, ErrUnroutable) {
		t.Fatalf("send to a closed client: %v, want ErrUnroutable", err)
	}
}

// After the server closes, a client reads what was sent before, then
// ErrClosed; its sends fail; the name can be listened on again and a new
// Dial reaches the new server.
func TestHubClose(t *testing.T) {
	name := "inproc://pipe-test-hub-close"
	h, err := Listen(name, make(chan struct{}, 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(name, make(chan struct{}, 1)); err == nil {
		t.Fatal("a second Listen on the same name succeeded")
	}
	c, csig := dial(t, name)
	if err := h.SendValue(c.Ident(), &wire.Heartbeat{}); err != nil {
		t.Fatal(err)
	}
	h.Flush()
	token(t, csig, "the last message")
	h.Close()
	token(t, csig, "the close")
	got, _, err := c.Take(nil, 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("after close: %q, %v; want the last message first", got, err)
	}
	if _, _, err := c.Take(nil, 10); !errors.Is(err, ErrClosed) {
		t.Fatalf("then: %v, want ErrClosed", err)
	}
	if err := c.Send([][]byte{[]byte("x")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("send after the server closed: %v, want ErrClosed", err)
	}
	if _, ok := Dial(name, make(chan struct{}, 1)); ok {
		t.Fatal("Dial reached a closed server")
	}
	h2, err := Listen(name, make(chan struct{}, 1))
	if err != nil {
		t.Fatalf("listen again: %v", err)
	}
	defer h2.Close()
	if _, ok := Dial(name, make(chan struct{}, 1)); !ok {
		t.Fatal("Dial did not reach the new server")
	}
}

// Routing ids of pipe clients never look like a ZeroMQ peer's.
func TestIsClient(t *testing.T) {
	for _, tc := range []struct {
		ident string
		want  bool
	}{
		{identPrefix + "1", true},
		{identPrefix, false},
		{"\x00\x00\x00\x00\x01", false}, // a ROUTER-made id
		{"worker-1", false},
		{"", false},
	} {
		if got := IsClient([]byte(tc.ident)); got != tc.want {
			t.Errorf("IsClient(%q) = %v, want %v", tc.ident, got, tc.want)
		}
	}
}

// Many clients sending at once while the server takes: every message
// arrives once (run with -race).
func TestConcurrentClients(t *testing.T) {
	h, hsig, name := listen(t)
	const clients, each = 8, 500
	var wg sync.WaitGroup
	for i := range clients {
		c, _ := dial(t, name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				if err := c.Send([][]byte{[]byte(fmt.Sprint(i, "-", j))}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	seen := map[string]bool{}
	var got []Msg
	for len(seen) < clients*each {
		token(t, hsig, fmt.Sprintf("%d of %d messages", len(seen), clients*each))
		for more := true; more; {
			got, more = h.Take(got[:0], 100)
			for _, m := range got {
				k := string(m.Frames[1])
				if seen[k] {
					t.Fatalf("message %s twice", k)
				}
				seen[k] = true
			}
		}
	}
	wg.Wait()
}
