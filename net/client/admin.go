package client

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"drover/admin"
	"drover/clock"
	"drover/net/internal/conn"
	"drover/net/wire"
	"drover/net/zsock"
)

// AdminOptions configure an admin client. Zero values take the defaults.
type AdminOptions struct {
	// Connect is the coordinator's admin endpoint: tcp://host:port
	// (default tcp://127.0.0.1:5571), or the inproc:// endpoint of a
	// server in this process (server.InprocAdmin) for an embedded console.
	Connect string
	// ReadOnly attaches without the right to act: Act fails with ERROR
	// 403 (drover console --read-only, drover status).
	ReadOnly bool
	// ID names the console to the coordinator's logs (default
	// console-hostname-pid).
	ID string
	// Host is the console's host name (default the host name).
	Host string
	// Heartbeat is the proposed heartbeat interval (0: the server's).
	Heartbeat time.Duration
	// Timeout bounds each call (default 5 s).
	Timeout time.Duration
	// ReconnectMin and ReconnectMax bound the reconnection backoff
	// (defaults 1 s and 32 s).
	ReconnectMin, ReconnectMax time.Duration
	// Name is what Endpoint reports (default: "embedded" for an inproc://
	// endpoint, else Connect).
	Name string
	// Log receives the library's events (default: discard).
	Log *slog.Logger
	// Security holds the CURVE keys for a coordinator that requires them
	// (docs/PROTOCOL.md §15): ServerPublic, and this client's own pair. A
	// coordinator that refuses the client makes DialAdmin (or, later, the
	// session) fail with an error wrapping ErrNotAuthorized.
	Security zsock.Security
	// Clock gives the library its time (default: the system clock).
	Clock clock.Clock
}

// Admin is a console's session with the coordinator's admin socket. It
// implements the console's backend (tui.Backend): every call has a
// timeout, and while the coordinator is away (restarting) calls fail at
// once with ErrNotConnected — the console shows STALE — until the client
// has reconnected by itself. Safe for concurrent use.
type Admin struct {
	opts    AdminOptions
	e       *engine
	c       *conn.Conn
	changed chan struct{}
	once    sync.Once
	err     error
}

// DialAdmin connects to the coordinator's admin socket and waits for the
// session to start, retrying with backoff until ctx ends.
func DialAdmin(ctx context.Context, opts AdminOptions) (*Admin, error) {
	if opts.Connect == "" {
		opts.Connect = DefaultAdminConnect
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultAdminTimeout
	}
	if opts.Name == "" {
		opts.Name = opts.Connect
		if conn.IsInproc(opts.Connect) {
			opts.Name = "embedded"
		}
	}
	common("console", &opts.Host, &opts.ID, &opts.Log)
	if err := checkDurations("admin", opts.Heartbeat, opts.Timeout, opts.ReconnectMin, opts.ReconnectMax); err != nil {
		return nil, err
	}
	hello := func(req uint64) *wire.Hello {
		return &wire.Hello{Req: req, Role: wire.RoleConsole, ReadOnly: opts.ReadOnly, ID: opts.ID, Host: opts.Host, Heartbeat: opts.Heartbeat}
	}
	if _, err := wire.Encode(hello(1)); err != nil {
		return nil, fmt.Errorf("admin options: %w", err)
	}
	a := &Admin{opts: opts, changed: make(chan struct{}, 1)}
	a.e = newEngine(hello, true, opts.Log)
	a.e.onChanged = a.signal
	a.e.onUp = a.signal // state may have moved while away
	c, err := start(ctx, a.e, conn.Config{Endpoint: opts.Connect, ReconnectMin: opts.ReconnectMin, ReconnectMax: opts.ReconnectMax, Log: opts.Log, Security: opts.Security, Clock: opts.Clock})
	if err != nil {
		return nil, err
	}
	a.c = c
	return a, nil
}

// signal notes a change for Changed, coalescing (loop goroutine).
func (a *Admin) signal() {
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

// Totals returns the header figures (STATUS).
func (a *Admin) Totals(ctx context.Context) (admin.Totals, error) {
	return adminCall(ctx, a, "STATUS", wire.CmdStatus, func(req uint64) wire.Message { return &wire.Status{Req: req} },
		func(t *wire.Totals) admin.Totals { return t.Totals })
}

// Query returns one window of one view (QUERY).
func (a *Admin) Query(ctx context.Context, q admin.Query) (admin.Page, error) {
	return adminCall(ctx, a, "QUERY "+string(q.View), wire.CmdQuery, func(req uint64) wire.Message { return &wire.Query{Req: req, Query: q} },
		func(p *wire.Page) admin.Page { return p.Page })
}

// Act runs an operator action (ACTION). A read-only client gets the
// coordinator's ERROR 403.
func (a *Admin) Act(ctx context.Context, act admin.Action) (admin.ActionResult, error) {
	return adminCall(ctx, a, "ACTION "+string(act.Kind), wire.CmdAction, func(req uint64) wire.Message { return &wire.Action{Req: req, Action: act} },
		func(r *wire.Acted) admin.ActionResult { return r.Result })
}

// adminCall runs one admin request of command cmd (msg makes it) whose
// answer is an R, and returns what get takes of it.
func adminCall[R wire.Message, T any](ctx context.Context, a *Admin, what string, cmd wire.Command, msg func(uint64) wire.Message, get func(R) T) (T, error) {
	var out T
	err := a.call(ctx, what, msg, func(m wire.Message) error {
		r, ok := m.(R)
		if !ok {
			return unexpected(cmd, m)
		}
		out = get(r)
		return nil
	})
	return out, err
}

// call runs one admin request with the client's timeout.
func (a *Admin) call(ctx context.Context, what string, msg func(uint64) wire.Message, got func(wire.Message) error) error {
	c := newCall(msg, func(m wire.Message) (bool, error) { return true, got(m) }, false)
	if err := a.e.do(ctx, a.c, c, a.opts.Timeout); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// Changed delivers a value whenever the coordinator says its state changed
// (CHANGED, coalesced by the server and here) and after each reconnection.
// It is closed by Close.
func (a *Admin) Changed() <-chan struct{} { return a.changed }

// Endpoint names the coordinator for the console's header: "embedded" for
// an in-process one, else the endpoint (see AdminOptions.Name).
func (a *Admin) Endpoint() string { return a.opts.Name }

// Close ends the session and closes Changed; calls in flight fail with
// ErrClosed. Calling it again returns the first result.
func (a *Admin) Close() error {
	a.once.Do(func() {
		a.err = closeConn(a.c, a.e)
		close(a.changed)
	})
	return a.err
}
