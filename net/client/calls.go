package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"drover/net/internal/conn"
	"drover/net/wire"
)

// Errors of both clients; test with errors.Is.
var (
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("client closed")
	// ErrTimeout: the server did not reply within the call's timeout.
	ErrTimeout = errors.New("no reply from the coordinator")
	// ErrSessionLost: the session ended (the coordinator went away,
	// restarted or was unreachable for heartbeat × liveness) before the
	// call completed. Ledger ownership is per session, so what the call
	// had obtained is void: request again.
	ErrSessionLost = errors.New("session with the coordinator lost")
	// ErrNotConnected: the admin client is reconnecting; calls fail at
	// once meanwhile.
	ErrNotConnected = errors.New("not connected to the coordinator")
)

// call is one request in flight: built, sent and answered on the loop
// goroutine, waited for by its caller.
type call struct {
	// msg builds the request with request id req; it may look at the
	// call's progress (a retried SUBMIT sends only what is unresolved).
	msg func(req uint64) wire.Message
	// reply handles a message carrying the call's request id and reports
	// whether the call is complete.
	reply func(m wire.Message) (bool, error)
	// retry: the request is idempotent, so it is sent again on the next
	// session when one ends before the call completes.
	retry bool
	// sameReq: a retry keeps the request id of the first send, so that
	// the server recognises the request (a resent SUBMIT's statuses are
	// its first send's: see docs/PROTOCOL.md §6.11).
	sameReq bool

	req uint64 // current request id, on the loop goroutine

	// awaiting says a reply is due (the request is sent or queued): the
	// caller's timeout runs only then, not while waiting for a deferred
	// ANSWER. notify tells the caller it changed.
	awaiting atomic.Bool
	// resent: the request went out again on a new session; the caller's
	// timeout starts over (the first session's wait is not the new one's).
	resent   atomic.Bool
	notify   chan struct{}
	done     chan struct{}
	finished bool  // loop goroutine only
	err      error // set before done is closed
}

func newCall(msg func(uint64) wire.Message, reply func(wire.Message) (bool, error), retry bool) *call {
	c := &call{msg: msg, reply: reply, retry: retry, notify: make(chan struct{}, 1), done: make(chan struct{})}
	c.awaiting.Store(true)
	return c
}

func (c *call) setAwaiting(v bool) {
	if c.awaiting.Swap(v) != v {
		select {
		case c.notify <- struct{}{}:
		default:
		}
	}
}

// finish completes the call (once) with err.
func (c *call) finish(err error) {
	if c.finished {
		return
	}
	c.finished = true
	c.err = err
	close(c.done)
}

// engine is the conn.Handler of both clients: it sends calls, routes
// replies by request id, and deals with sessions ending.
type engine struct {
	hello    func(req uint64) *wire.Hello
	failFast bool // fail calls at once while no session is up (admin)
	log      *slog.Logger

	calls   map[uint64]*call
	queued  []*call // waiting for a session
	lastErr error   // why the last session or attempt ended

	limits    atomic.Pointer[wire.Limits] // from the last WELCOME
	firstUp   chan struct{}               // closed at the first WELCOME
	upOnce    sync.Once
	refused   chan error // a HELLO refused before the first WELCOME
	onUp      func()     // after each WELCOME (loop goroutine)
	onChanged func()     // CHANGED received (loop goroutine)
}

func newEngine(hello func(uint64) *wire.Hello, failFast bool, log *slog.Logger) *engine {
	e := &engine{
		hello:    hello,
		failFast: failFast,
		log:      log,
		calls:    make(map[uint64]*call),
		firstUp:  make(chan struct{}),
		refused:  make(chan error, 1),
	}
	lim := wire.ProtocolLimits
	e.limits.Store(&lim)
	return e
}

// Hello builds the HELLO of a new session.
func (e *engine) Hello(req uint64) *wire.Hello { return e.hello(req) }

// Up sends what waited for a session.
func (e *engine) Up(l *conn.Link, w *wire.Welcome) {
	lim := w.Limits
	e.limits.Store(&lim)
	e.upOnce.Do(func() { close(e.firstUp) })
	q := e.queued
	e.queued = nil
	for _, c := range q {
		e.send(l, c)
	}
	if e.onUp != nil {
		e.onUp()
	}
}

// Receive routes a reply to its call.
func (e *engine) Receive(l *conn.Link, m wire.Message) {
	if _, ok := m.(*wire.Changed); ok {
		if e.onChanged != nil {
			e.onChanged()
		}
		return
	}
	c := e.calls[m.RequestID()]
	if c == nil {
		if a, ok := m.(*wire.Answer); ok {
			for _, it := range a.Items {
				if it.Verdict == wire.VerdictOK {
					e.log.Warn("a key was handed over for an abandoned REQUEST: this session owns it until its lease ends or the client closes",
						"fingerprint", it.Fingerprint.String())
				}
			}
		}
		e.log.Debug("reply to no pending call", "command", m.Command(), "req", m.RequestID())
		return
	}
	if we, ok := m.(*wire.Error); ok {
		delete(e.calls, c.req)
		c.finish(fmt.Errorf("coordinator refused the request: %w", we))
		return
	}
	complete, err := c.reply(m)
	if err != nil || complete {
		delete(e.calls, c.req)
		c.finish(err)
		return
	}
	c.setAwaiting(false)
}

// Flush has nothing to batch: every call is one message.
func (e *engine) Flush(*conn.Link) {}

// Down fails or re-queues the calls of the session that ended.
func (e *engine) Down(l *conn.Link, err error, welcomed bool) {
	e.lastErr = err
	if !welcomed {
		var we *wire.Error
		select {
		case <-e.firstUp:
		default:
			if errors.As(err, &we) && permanent(we.Code) {
				select {
				case e.refused <- err:
				default:
				}
			}
		}
	}
	for req, c := range e.calls {
		delete(e.calls, req)
		if c.retry && !e.failFast {
			c.setAwaiting(true)
			e.queued = append(e.queued, c)
			continue
		}
		c.finish(fmt.Errorf("%w: %w", ErrSessionLost, err))
	}
	if e.failFast {
		e.failQueued(fmt.Errorf("%w at %s: %w", ErrNotConnected, l.Endpoint(), err))
	}
}

// permanent says whether an ERROR answering HELLO means retrying is
// pointless.
func permanent(c wire.Code) bool {
	switch c {
	case wire.CodeMalformed, wire.CodeForbidden, wire.CodeConflict, wire.CodeTooLarge, wire.CodeUnknownCommand, wire.CodeVersion:
		return true
	}
	return false
}

func (e *engine) failQueued(err error) {
	for _, c := range e.queued {
		c.finish(err)
	}
	e.queued = nil
}

// failAll fails every call (the client is closing).
func (e *engine) failAll(err error) {
	for req, c := range e.calls {
		delete(e.calls, req)
		c.finish(err)
	}
	e.failQueued(err)
}

// start sends c now, queues it for the next session, or fails it.
func (e *engine) start(l *conn.Link, c *call) {
	switch {
	case l.Closed():
		c.finish(ErrClosed)
	case l.Up():
		e.send(l, c)
	case e.failFast:
		err := e.lastErr
		if err == nil {
			err = errors.New("no session yet")
		}
		c.finish(fmt.Errorf("%w at %s: %w", ErrNotConnected, l.Endpoint(), err))
	default:
		e.queued = append(e.queued, c)
	}
}

func (e *engine) send(l *conn.Link, c *call) {
	if c.finished {
		return
	}
	again := c.req != 0
	if c.req == 0 || !c.sameReq {
		c.req = l.NextReq()
	}
	if err := l.Send(c.msg(c.req)); err != nil {
		c.finish(err)
		return
	}
	e.calls[c.req] = c
	if again {
		c.resent.Store(true)
		select {
		case c.notify <- struct{}{}:
		default:
		}
	}
}

// abandon forgets a call its caller gave up on.
func (e *engine) abandon(c *call) {
	if e.calls[c.req] == c {
		delete(e.calls, c.req)
	}
	for i, q := range e.queued {
		if q == c {
			e.queued = append(e.queued[:i], e.queued[i+1:]...)
			break
		}
	}
}

// post hands c to the loop.
func (e *engine) post(cn *conn.Conn, c *call) bool {
	return cn.Post(func(l *conn.Link) { e.start(l, c) })
}

// wait waits for c: timeout bounds each wait for a reply from the server
// (not a deferred ANSWER, which may take as long as the key's owner
// does), ctx the whole call.
func (e *engine) wait(ctx context.Context, cn *conn.Conn, c *call, timeout time.Duration) error {
	timer := cn.Clock().NewTimer(timeout)
	defer timer.Stop()
	armed := true
	giveUp := func(err error) error {
		cn.Post(func(*conn.Link) { e.abandon(c) })
		return err
	}
	for {
		select {
		case <-c.done:
			return c.err
		case <-c.notify:
			switch aw := c.awaiting.Load(); {
			case aw && c.resent.Swap(false):
				// Sent again on a new session: a new wait.
				if armed {
					timer.Stop()
				}
				timer.Reset(timeout)
				armed = true
			case aw && !armed:
				timer.Reset(timeout)
				armed = true
			case !aw && armed:
				timer.Stop()
				armed = false
			}
		case <-timer.C():
			armed = false
			if c.awaiting.Load() {
				return giveUp(fmt.Errorf("%w at %s within %v", ErrTimeout, cn.Endpoint(), timeout))
			}
		case <-ctx.Done():
			return giveUp(context.Cause(ctx))
		}
	}
}

// do posts one call and waits for it.
func (e *engine) do(ctx context.Context, cn *conn.Conn, c *call, timeout time.Duration) error {
	if !e.post(cn, c) {
		return ErrClosed
	}
	return e.wait(ctx, cn, c, timeout)
}

// inFlight is how many of one call's batches doAll keeps sent and not yet
// complete. Sending a whole large input at once made the coordinator hold
// all of it in its receive queue (a 2,000,000-line submit: some 150 MB),
// and when it was busy for longer than heartbeat × liveness the session
// was lost and all of it sent again on the next, on top: past a gigabyte
// at a load of 25 on two cores, and no reply within two minutes. Eight
// batches (80,000 jobs at DRV/2's limit) keep the coordinator's steps
// (20,000 jobs each) fed, and bound what a lost session sends again.
const inFlight = 8

// doAll sends calls pipelined, at most inFlight not yet complete at a time
// (in order: a call is sent once the call inFlight before it completed),
// and waits for all of them; on the first error the others are
// abandoned.
func (e *engine) doAll(ctx context.Context, cn *conn.Conn, calls []*call, timeout time.Duration) error {
	posted := 0
	for i, c := range calls {
		for ; posted < len(calls) && posted < i+inFlight; posted++ {
			if !e.post(cn, calls[posted]) {
				return ErrClosed
			}
		}
		if err := e.wait(ctx, cn, c, timeout); err != nil {
			for _, rest := range calls[i+1 : posted] {
				cn.Post(func(*conn.Link) { e.abandon(rest) })
			}
			return err
		}
	}
	return nil
}

// unexpected is the error for a reply of the wrong kind.
func unexpected(req wire.Command, m wire.Message) error {
	return fmt.Errorf("coordinator answered %s with %s, want its reply", req, m.Command())
}
