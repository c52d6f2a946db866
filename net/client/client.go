// Package client is drover's Go client library for producers and
// consoles, over DRV/2 (docs/PROTOCOL.md).
//
// A producer (Dial, *Client) uses the coordinator's ledger — Request,
// Queue and Done on work keys, with deferred answers for keys another
// session holds — and submits jobs to its broker (Submit). A console or
// the CLI (DialAdmin, *Admin) reads totals and windows of the
// coordinator's state and runs operator actions.
//
// Both keep one session with the coordinator on a connection of their
// own, owned by one goroutine: heartbeats, liveness (a coordinator silent
// for heartbeat × liveness is dropped) and reconnection with backoff (1 s
// doubling to 32 s) happen by themselves. Both are safe for concurrent use
// by several goroutines: requests are correlated by request id.
package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"time"

	"drover/clock"
	"drover/coord/id"
	"drover/net/internal/conn"
	"drover/net/wire"
	"drover/net/zsock"
)

// Verdict is the ledger's answer for one key: ok (the session owns it),
// no (queued or done elsewhere), or error (refused; Reason says why).
// Calls return no wait verdict: they wait for its ANSWER.
type Verdict = wire.VerdictItem

// Submitted is the fate of one submitted job: accepted (JobID is the new
// job), duplicate (the key is queued or done already) or error. Calls
// return no wait status: they wait for the later SUBMITTED.
type Submitted = wire.SubmittedItem

// Options configure a producer client. Zero values take the defaults.
type Options struct {
	// Connect is the coordinator's peers endpoint (default
	// tcp://127.0.0.1:5570).
	Connect string
	// ID is the producer's stable id (default producer-hostname-pid).
	ID string
	// Host is shown to operators (default the host name).
	Host string
	// Heartbeat is the proposed heartbeat interval (0: the server's).
	Heartbeat time.Duration
	// Timeout bounds each wait for the coordinator's reply to a request
	// (default 10 s), from each time it is sent: a request sent again on
	// a new session after a reconnect waits afresh. It does not bound the wait for a deferred answer (a
	// key another session holds), which lasts until that session queues,
	// finishes or dies, or until the call's context ends; a coordinator
	// that goes away ends it with ErrSessionLost after heartbeat ×
	// liveness.
	Timeout time.Duration
	// Security holds the CURVE keys for a coordinator that requires them
	// (docs/PROTOCOL.md §15): ServerPublic, and this client's own pair. A
	// coordinator that refuses the client makes Dial (or, later, calls)
	// fail with an error wrapping ErrNotAuthorized.
	Security zsock.Security
	// ReconnectMin and ReconnectMax bound the reconnection backoff
	// (defaults 1 s and 32 s).
	ReconnectMin, ReconnectMax time.Duration
	// Log receives the library's events (default: discard).
	Log *slog.Logger
	// Clock gives the library its time: heartbeats, liveness, reconnection
	// waits and Timeout (default: the system clock; tests pass a
	// clock.Fake).
	Clock clock.Clock
}

// Defaults of Options and AdminOptions.
const (
	DefaultConnect      = "tcp://127.0.0.1:5570"
	DefaultAdminConnect = "tcp://127.0.0.1:5571"
	DefaultTimeout      = 10 * time.Second
	DefaultAdminTimeout = 5 * time.Second
)

// common fills the defaults shared by both clients.
func common(prefix string, host, peer *string, log **slog.Logger) {
	if *host == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "unknown"
		}
		*host = wire.Clip(h, wire.MaxHost)
	}
	if *peer == "" {
		*peer = prefix + "-" + wire.Clip(*host, wire.MaxID-len(prefix)-13) + "-" + strconv.Itoa(os.Getpid())
	}
	if *log == nil {
		*log = slog.New(slog.DiscardHandler)
	}
}

func checkDurations(what string, hb, timeout, rmin, rmax time.Duration) error {
	var errs []error
	if hb < 0 {
		errs = append(errs, fmt.Errorf("%s option Heartbeat %v: want >= 0 (0: the server's)", what, hb))
	}
	if timeout < 0 {
		errs = append(errs, fmt.Errorf("%s option Timeout %v: want > 0", what, timeout))
	}
	if rmin < 0 || rmax < 0 || (rmax != 0 && rmax < rmin) {
		errs = append(errs, fmt.Errorf("%s options ReconnectMin %v, ReconnectMax %v: want 0 < min <= max (0: defaults)", what, rmin, rmax))
	}
	return errors.Join(errs...)
}

// Client is a producer's session with the coordinator. Create with Dial.
type Client struct {
	opts Options
	e    *engine
	c    *conn.Conn
}

// Dial connects to the coordinator and waits for the session to start,
// retrying with backoff until ctx ends. A HELLO the coordinator refuses for
// good (a bad id, a role it does not take) fails at once.
func Dial(ctx context.Context, opts Options) (*Client, error) {
	if opts.Connect == "" {
		opts.Connect = DefaultConnect
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	common("producer", &opts.Host, &opts.ID, &opts.Log)
	if err := checkDurations("client", opts.Heartbeat, opts.Timeout, opts.ReconnectMin, opts.ReconnectMax); err != nil {
		return nil, err
	}
	hello := func(req uint64) *wire.Hello {
		return &wire.Hello{Req: req, Role: wire.RoleProducer, ID: opts.ID, Host: opts.Host, Heartbeat: opts.Heartbeat}
	}
	if _, err := wire.Encode(hello(1)); err != nil {
		return nil, fmt.Errorf("client options: %w", err)
	}
	e := newEngine(hello, false, opts.Log)
	c, err := start(ctx, e, conn.Config{Endpoint: opts.Connect, ReconnectMin: opts.ReconnectMin, ReconnectMax: opts.ReconnectMax, Log: opts.Log, Security: opts.Security, Clock: opts.Clock})
	if err != nil {
		return nil, err
	}
	return &Client{opts: opts, e: e, c: c}, nil
}

// ErrNotAuthorized is wrapped by the errors of a client the coordinator
// refused for its key or role (docs/PROTOCOL.md §15).
var ErrNotAuthorized = zsock.ErrNotAuthorized

// start starts the connection and waits for its first WELCOME.
func start(ctx context.Context, e *engine, cfg conn.Config) (*conn.Conn, error) {
	endpoint := cfg.Endpoint
	c, err := conn.Start(cfg, e)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", endpoint, err)
	}
	select {
	case <-e.firstUp:
		return c, nil
	case <-c.Done():
		return nil, fmt.Errorf("dial %s: %w", endpoint, c.Err())
	case err := <-e.refused:
		c.Close()
		return nil, fmt.Errorf("dial %s: %w", endpoint, err)
	case <-ctx.Done():
		last := make(chan error, 1)
		if !c.Post(func(*conn.Link) { last <- e.lastErr }) {
			last <- nil
		}
		lastErr := <-last
		c.Close()
		if lastErr != nil {
			return nil, fmt.Errorf("dial %s: %w (last attempt: %w)", endpoint, context.Cause(ctx), lastErr)
		}
		return nil, fmt.Errorf("dial %s: %w", endpoint, context.Cause(ctx))
	}
}

// Close ends the session (DISCONNECT) and fails calls still in flight with
// ErrClosed. Keys this session owns in requested pass to their waiters.
func (c *Client) Close() error {
	return closeConn(c.c, c.e)
}

func closeConn(cn *conn.Conn, e *engine) error {
	cn.Post(func(l *conn.Link) {
		e.failAll(ErrClosed)
		l.Stop(nil)
	})
	return cn.Close()
}

// Request asks the ledger for keys, returning one verdict per key in
// order: ok (this session now owns the key: do the work, then Queue or
// Done it), no (queued, or done recently), or error. A key another session
// holds makes the call wait until that session queues it (no), finishes it
// (no) or dies (ok, reason handover); see Options.Timeout. If the session
// ends first the call fails with ErrSessionLost: the keys it had obtained
// are released, so request them again. Large inputs are sent as several
// batches within DRV/2's limits, pipelined.
func (c *Client) Request(ctx context.Context, keys []id.Key) ([]Verdict, error) {
	return c.keysCall(ctx, wire.CmdRequest, keys)
}

// Queue tells the ledger the work on keys this session owns has been
// handed on: each waiter is told no. A key the session does not own gets
// an error verdict (not-owner, unknown, wrong-state): request it again.
func (c *Client) Queue(ctx context.Context, keys []id.Key) ([]Verdict, error) {
	return c.keysCall(ctx, wire.CmdQueue, keys)
}

func (c *Client) keysCall(ctx context.Context, cmd wire.Command, keys []id.Key) ([]Verdict, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	maxCount, maxBytes := c.e.batchLimits()
	sp := spans(len(keys), maxCount, maxBytes, func(i int) int { return keySize(&keys[i]) })
	// One message: its VERDICTS' items are the result (not copied).
	var out []Verdict
	if len(sp) > 1 {
		out = make([]Verdict, len(keys))
	}
	calls := make([]*call, len(sp))
	for i, s := range sp {
		part := keys[s.lo:s.hi]
		dst := &out
		if len(sp) > 1 {
			v := out[s.lo:s.hi]
			dst = &v
		}
		calls[i] = newCall(func(req uint64) wire.Message {
			if cmd == wire.CmdQueue {
				return &wire.Queue{Req: req, Keys: part}
			}
			return &wire.Request{Req: req, Keys: part}
		}, verdictReply(cmd, dst, len(part)), false)
	}
	if err := c.e.doAll(ctx, c.c, calls, c.opts.Timeout); err != nil {
		return nil, fmt.Errorf("%s %d keys: %w", cmd, len(keys), err)
	}
	return out, nil
}

// verdictReply fills *dst, n verdicts, from VERDICTS and, for keys that got
// wait, from the ANSWERs that follow. A nil *dst becomes the VERDICTS'
// items themselves: the decoded message is the call's alone.
func verdictReply(cmd wire.Command, dst *[]Verdict, n int) func(wire.Message) (bool, error) {
	var waiting map[id.Fingerprint][]int
	got := false
	return func(m wire.Message) (bool, error) {
		switch m := m.(type) {
		case *wire.Verdicts:
			if got {
				return true, fmt.Errorf("coordinator sent VERDICTS twice for one %s", cmd)
			}
			got = true
			if len(m.Items) != n {
				return true, fmt.Errorf("coordinator sent %d verdicts for %d keys, want one per key", len(m.Items), n)
			}
			if *dst == nil {
				*dst = m.Items
			} else {
				copy(*dst, m.Items)
			}
			for i, it := range m.Items {
				if it.Verdict == wire.VerdictWait {
					if waiting == nil {
						waiting = make(map[id.Fingerprint][]int)
					}
					waiting[it.Fingerprint] = append(waiting[it.Fingerprint], i)
				}
			}
			return len(waiting) == 0, nil
		case *wire.Answer:
			if !got || cmd != wire.CmdRequest {
				return true, unexpected(cmd, m)
			}
			for _, it := range m.Items {
				for _, i := range waiting[it.Fingerprint] {
					(*dst)[i] = it
				}
				delete(waiting, it.Fingerprint)
			}
			return len(waiting) == 0, nil
		}
		return true, unexpected(cmd, m)
	}
}

// Done marks keys done (ok or failed) whatever their state; every waiter
// is told no. It is idempotent, so a batch in flight when the session
// ends is sent again on the next one.
func (c *Client) Done(ctx context.Context, items []wire.DoneItem) ([]Verdict, error) {
	if len(items) == 0 {
		return nil, nil
	}
	out := make([]Verdict, len(items))
	maxCount, maxBytes := c.e.batchLimits()
	sp := spans(len(items), maxCount, maxBytes, func(i int) int { return keySize(&items[i].Key) + 1 })
	calls := make([]*call, len(sp))
	for i, s := range sp {
		part, dst := items[s.lo:s.hi], out[s.lo:s.hi]
		calls[i] = newCall(func(req uint64) wire.Message { return &wire.Done{Req: req, Items: part} },
			verdictReply(wire.CmdDone, &dst, len(dst)), true)
	}
	if err := c.e.doAll(ctx, c.c, calls, c.opts.Timeout); err != nil {
		return nil, fmt.Errorf("DONE %d keys: %w", len(items), err)
	}
	return out, nil
}

// Submit submits jobs: for each, atomically, the key is requested, queued
// and a job enqueued. It returns one status per job in order: accepted
// (with the new job id), duplicate (the key is queued or done already) or
// error (Reason says why). A key another session holds in requested makes
// the call wait for it, as Request does, and ends accepted (the key was
// handed over) or duplicate. SUBMIT is idempotent: a batch in flight when
// the session ends is sent again, unresolved items only and with the same
// request id, on the next one, and the server answers a key the first send
// got accepted as accepted again (not duplicate): the statuses are the
// truth across reconnects (not across a coordinator restart).
// Large inputs are split within DRV/2's limits and pipelined.
func (c *Client) Submit(ctx context.Context, jobs []wire.SubmitItem) ([]Submitted, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	out := make([]Submitted, len(jobs))
	maxCount, maxBytes := c.e.batchLimits()
	sp := spans(len(jobs), maxCount, maxBytes, func(i int) int { return submitSize(&jobs[i]) })
	calls := make([]*call, len(sp))
	for i, s := range sp {
		calls[i] = newSubmitCall(jobs[s.lo:s.hi], out[s.lo:s.hi])
	}
	if err := c.e.doAll(ctx, c.c, calls, c.opts.Timeout); err != nil {
		return nil, fmt.Errorf("SUBMIT %d jobs: %w", len(jobs), err)
	}
	return out, nil
}

// newSubmitCall is one SUBMIT batch; dst receives the statuses.
func newSubmitCall(jobs []wire.SubmitItem, dst []Submitted) *call {
	unresolved := make([]int, len(jobs)) // positions in jobs without a final status
	for i := range unresolved {
		unresolved[i] = i
	}
	var (
		sent    []int // positions in jobs of the items last sent, in order
		replied bool  // the SUBMITTED of the last send arrived
		waiting = make(map[id.Fingerprint][]int)
	)
	msg := func(req uint64) wire.Message {
		replied = false
		sent = append(sent[:0], unresolved...)
		clear(waiting)
		items := make([]wire.SubmitItem, len(sent))
		for k, i := range sent {
			items[k] = jobs[i]
		}
		return &wire.Submit{Req: req, Jobs: items}
	}
	reply := func(m wire.Message) (bool, error) {
		sm, ok := m.(*wire.Submitted)
		if !ok {
			return true, unexpected(wire.CmdSubmit, m)
		}
		if !replied {
			replied = true
			if len(sm.Items) != len(sent) {
				return true, fmt.Errorf("coordinator sent %d statuses for %d jobs, want one per job", len(sm.Items), len(sent))
			}
			unresolved = unresolved[:0]
			for k, it := range sm.Items {
				i := sent[k]
				dst[i] = it
				if it.Status == wire.SubmitWait {
					waiting[it.Fingerprint] = append(waiting[it.Fingerprint], i)
					unresolved = append(unresolved, i)
				}
			}
			return len(unresolved) == 0, nil
		}
		// A later SUBMITTED: the keys that waited were queued, finished
		// or handed over. Jobs with the same key share its fate.
		for _, it := range sm.Items {
			for _, i := range waiting[it.Fingerprint] {
				dst[i] = it
			}
			delete(waiting, it.Fingerprint)
		}
		unresolved = unresolved[:0]
		for _, is := range waiting {
			unresolved = append(unresolved, is...)
		}
		slices.Sort(unresolved)
		return len(unresolved) == 0, nil
	}
	c := newCall(msg, reply, true)
	c.sameReq = true
	return c
}
