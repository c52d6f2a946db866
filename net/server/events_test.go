package server

import (
	"context"
	"fmt"
	"go.uber.org/goleak"
	"strings"
	"testing"
	"time"

	"github.com/pebbe/zmq4"

	"drover/net/wire"
	"drover/net/zsock"
)

// submitUntilEvent submits a fresh job every few milliseconds until sub
// receives an event (a subscription reaches the server asynchronously, and
// events before it are not published), and returns that event's kind.
func submitUntilEvent(t *testing.T, p *rawClient, sub *zmq4.Socket, req *uint64) string {
	t.Helper()
	poller := zmq4.NewPoller()
	poller.Add(sub, zmq4.POLLIN)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		*req++
		p.send(&wire.Submit{Req: *req, Jobs: []wire.SubmitItem{{Key: key(fmt.Sprintf("http://a.test/%d", *req))}}})
		expect[*wire.Submitted](t, p.recv())
		polled, err := poller.Poll(20 * time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if len(polled) == 0 {
			continue
		}
		frames, err := sub.RecvMessageBytes(0)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := wire.DecodeEvent(frames)
		if err != nil {
			t.Fatalf("event: %v", err)
		}
		return string(ev.Kind)
	}
	t.Fatal("no event within 5s")
	return ""
}

// Events are published to whoever subscribes, by topic prefix, as the
// server follows the subscriptions its XPUB passes up: a subscriber that
// comes after another left still gets them.
func TestEventsFollowSubscriptions(t *testing.T) {
	s := startServer(t, Options{})
	p := dial(t, s.PeersEndpoint())
	p.send(&wire.Hello{Req: 1, Role: wire.RoleProducer, ID: "p1"})
	expect[*wire.Welcome](t, p.recv())
	req := uint64(1)

	jobs, err := zsock.Sub(s.EventsEndpoint(), []string{"job."})
	if err != nil {
		t.Fatal(err)
	}
	if kind := submitUntilEvent(t, p, jobs, &req); !strings.HasPrefix(kind, "job.") {
		t.Fatalf("event %q for a job. subscriber", kind)
	}
	jobs.Close()

	all, err := zsock.Sub(s.EventsEndpoint(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	if kind := submitUntilEvent(t, p, all, &req); kind == "" {
		t.Fatal("event without a kind")
	}
}

// Key events are built only while someone subscribes to them (the server
// tells its coordinator): a key. subscriber gets the key events of
// submitted jobs.
func TestKeyEventsFollowSubscriptions(t *testing.T) {
	s := startServer(t, Options{})
	p := dial(t, s.PeersEndpoint())
	p.send(&wire.Hello{Req: 1, Role: wire.RoleProducer, ID: "p1"})
	expect[*wire.Welcome](t, p.recv())
	req := uint64(1)
	keys, err := zsock.Sub(s.EventsEndpoint(), []string{"key."})
	if err != nil {
		t.Fatal(err)
	}
	if kind := submitUntilEvent(t, p, keys, &req); !strings.HasPrefix(kind, "key.") {
		t.Fatalf("event %q for a key. subscriber", kind)
	}
	keys.Close()
}

// With no subscriber at all, nothing is published (events are not even
// encoded); a subscriber that then comes gets the events from then on.
func TestEventsNotPublishedWithoutSubscribers(t *testing.T) {
	s := startServer(t, Options{})
	p := dial(t, s.PeersEndpoint())
	p.send(&wire.Hello{Req: 1, Role: wire.RoleProducer, ID: "p1"})
	expect[*wire.Welcome](t, p.recv())
	p.send(&wire.Submit{Req: 2, Jobs: []wire.SubmitItem{{Key: key("http://a.test/before")}}})
	expect[*wire.Submitted](t, p.recv())
	// The reactor goroutine owns the counters: ask through a posted probe.
	if n := s.eventsPublished(t); n != 0 {
		t.Fatalf("%d events published with no subscriber, want 0", n)
	}
	sub, err := zsock.Sub(s.EventsEndpoint(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	req := uint64(2)
	submitUntilEvent(t, p, sub, &req)
	if n := s.eventsPublished(t); n == 0 {
		t.Fatal("an event was received but none counted as published")
	}
}

func (s *Server) eventsPublished(t *testing.T) uint64 {
	t.Helper()
	return s.ev.published.Load()
}

// A server that stopped leaves no goroutine behind (its sockets' watches
// among them), with or without events and in-process peers.
func TestStoppedServerLeavesNoGoroutines(t *testing.T) {
	before := goleak.IgnoreCurrent()
	for range 5 {
		s, err := New(Options{Peers: zsock.Ephemeral, Admin: zsock.Ephemeral, Events: zsock.Ephemeral})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		p := dial(t, s.PeersEndpoint())
		p.send(&wire.Hello{Req: 1, Role: wire.RoleProducer, ID: "p"})
		expect[*wire.Welcome](t, p.recv())
		p.sock.Close()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	goleak.VerifyNone(t, before) // waits for goroutines still ending
}
