// Package testsrv starts real drover servers (net/server) on 127.0.0.1
// for the tests and benchmarks of drover's client libraries, and collects
// what they report (finished jobs, events, log records) so that tests can
// wait for them with a deadline instead of sleeping.
package testsrv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/pebbe/zmq4"

	"drover/admin"
	"drover/coord/broker"
	"drover/net/server"
	"drover/net/zsock"
)

// Options configure a test server. Zero values take the defaults.
type Options struct {
	// Peers and Admin are the endpoints to bind (default: ephemeral
	// loopback ports); give the endpoints of a stopped server to restart
	// "it" on the same ports.
	Peers, Admin string
	// Heartbeat is the server's heartbeat (default DefaultHeartbeat);
	// liveness is 3.
	Heartbeat time.Duration
	// MaxRequestFailures is the broker's failure budget (default 3).
	MaxRequestFailures int
	// Log, when set, also receives the server's log records.
	Log *slog.Logger
	// OnFinished, when set, receives finished jobs instead of the records
	// (benchmarks, which finish too many to keep).
	OnFinished func(broker.Finished)
	// NoEvents drops events instead of recording them (benchmarks).
	NoEvents bool
	// Gather is server.Options.Gather (default none).
	Gather time.Duration
}

// DefaultHeartbeat is a test server's heartbeat unless Options says
// otherwise: long enough that a loaded machine (2 cores, many test
// processes) never stalls a live peer past heartbeat × liveness (3 s). A
// test about liveness itself gives a shorter one and generous waits.
const DefaultHeartbeat = time.Second

// Server is a running test server.
type Server struct {
	*server.Server
	stop   func()
	runErr error

	mu       sync.Mutex
	finished []broker.Finished
	events   []admin.Event
	logs     []slog.Record
	notify   chan struct{}
}

// Start runs a server until Stop or the end of the test.
func Start(tb testing.TB, o Options) *Server {
	tb.Helper()
	s, err := New(o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Stop(); err != nil {
			tb.Errorf("server run: %v", err)
		}
	})
	return s
}

// New runs a server until Stop; the caller must call Stop.
func New(o Options) (*Server, error) {
	if o.Peers == "" {
		o.Peers = zsock.Ephemeral
	}
	if o.Admin == "" {
		o.Admin = zsock.Ephemeral
	}
	if o.Heartbeat == 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	ts := &Server{notify: make(chan struct{}, 1)}
	opts := server.Options{
		Peers: o.Peers, Admin: o.Admin, Events: "-", Gather: o.Gather,
		OnFinished: func(f broker.Finished) { ts.add(func() { ts.finished = append(ts.finished, f) }) },
		OnEvent:    func(ev admin.Event) { ts.add(func() { ts.events = append(ts.events, ev) }) },
		Log:        slog.New(&capture{s: ts, next: o.Log}),
	}
	if o.OnFinished != nil {
		opts.OnFinished = o.OnFinished
	}
	if o.NoEvents {
		opts.OnEvent = nil
	}
	opts.Coord.Heartbeat = o.Heartbeat
	opts.Coord.MinHeartbeat = min(10*time.Millisecond, o.Heartbeat)
	opts.Coord.Broker.MaxRequestFailures = o.MaxRequestFailures
	s, err := newServer(opts)
	if err != nil {
		return nil, fmt.Errorf("test server: %w", err)
	}
	ts.Server = s
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	ts.stop = func() {
		once.Do(func() {
			cancel()
			ts.runErr = <-done
		})
	}
	return ts, nil
}

// newServer creates the server, retrying for a while when a fixed port is
// still held: ZeroMQ closes a stopped server's listening socket on its own
// I/O thread, a little after Run returns.
func newServer(opts server.Options) (*server.Server, error) {
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		s, err := server.New(opts)
		if err == nil || !errors.Is(err, zmq4.EADDRINUSE) || time.Now().After(deadline) {
			return s, err
		}
		<-tick.C
	}
}

// Stop stops the server (it says DISCONNECT 503 to everyone) and waits
// for it; its sockets are closed when it returns.
func (s *Server) Stop() error {
	s.stop()
	return s.runErr
}

func (s *Server) add(f func()) {
	s.mu.Lock()
	f()
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// WaitFor waits until cond, called with the server's records locked, is
// true, or fails the test after d.
func (s *Server) WaitFor(tb testing.TB, d time.Duration, what string, cond func(r *Records) bool) {
	tb.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ok := cond(&Records{Finished: s.finished, Events: s.events, Logs: s.logs})
		s.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-s.notify:
		case <-deadline.C:
			tb.Fatalf("%s: not within %v", what, d)
		}
	}
}

// Records are what a server reported so far.
type Records struct {
	Finished []broker.Finished // terminal job outcomes, in order
	Events   []admin.Event     // state changes, in order
	Logs     []slog.Record     // log records, in order
}

// Snapshot returns a copy of the records.
func (s *Server) Snapshot() Records {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Records{
		Finished: append([]broker.Finished(nil), s.finished...),
		Events:   append([]admin.Event(nil), s.events...),
		Logs:     append([]slog.Record(nil), s.logs...),
	}
}

// Attr returns the value of a record's attribute.
func Attr(r slog.Record, key string) (slog.Value, bool) {
	var v slog.Value
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v, found = a.Value, true
			return false
		}
		return true
	})
	return v, found
}

// capture keeps every log record of the server and passes it on.
type capture struct {
	s    *Server
	next *slog.Logger
}

// Enabled keeps Info and above: debug records (one per undeliverable
// send) would slow a server under a flood down.
func (c *capture) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

// Handle keeps a copy of r and passes it on.
func (c *capture) Handle(ctx context.Context, r slog.Record) error {
	c.s.add(func() { c.s.logs = append(c.s.logs, r.Clone()) })
	if c.next != nil {
		return c.next.Handler().Handle(ctx, r)
	}
	return nil
}

// WithAttrs ignores the attributes: the server logs without them.
func (c *capture) WithAttrs([]slog.Attr) slog.Handler { return c }

// WithGroup ignores the group: the server logs without one.
func (c *capture) WithGroup(string) slog.Handler { return c }

// Eventually polls cond every 10ms until it is true, or fails the test
// after d.
func Eventually(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %v", what, d)
		}
		<-tick.C
	}
}
