// Package worker is drover's Go worker library: it connects to a drover
// coordinator's peers socket over DRV/2 (docs/PROTOCOL.md), announces the
// worker's capabilities and slots, runs the jobs it is sent with a Handler,
// and reports their results.
//
// What it takes care of:
//
//   - Slots: up to Options.Slots jobs run at once, each in its own
//     goroutine with its own context.
//   - Results are batched (results of jobs finishing together go in one
//     RESULT), kept until the server acknowledges them with RESULT-OK, and
//     sent again after a reconnection.
//   - Liveness: heartbeats both ways; a server silent for heartbeat ×
//     liveness is dropped and the library reconnects with a fresh DEALER,
//     after 1 s doubling to 32 s (reset after each WELCOME).
//   - After a reconnection HELLO lists the jobs still held (running, or
//     finished and not acknowledged); jobs WELCOME tells it to abandon
//     have their contexts cancelled and their results dropped.
//   - Progress(ctx, text) reports how a running job is doing (PROGRESS,
//     shown in the console), at most once a second per job.
//   - A job's context is cancelled (see context.Cause) with ErrCancelled
//     when the server sends CANCEL, ErrEvicted when an operator evicts the
//     worker (DISCONNECT 410; the library then waits 32 s before
//     reconnecting), and ErrShutdown when Run's context ends.
//
// Shutdown: when Run's context ends, every running job's context is
// cancelled (the jobs are abandoned, not waited for to completion). Run
// waits up to Options.StopTimeout for the handlers to return: results they
// return as ok are still sent and acknowledged; other results of abandoned
// jobs are dropped, since the clean DISCONNECT that follows makes the
// server put those jobs back in its queue uncharged. Handlers still running
// after StopTimeout are left behind (their goroutines end when they
// return).
//
// A server that drains the worker lets it go with DISCONNECT 200 once its
// jobs are done: Run then returns an error wrapping ErrDrained.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"drover/clock"
	"drover/coord/id"
	"drover/net/internal/conn"
	"drover/net/wire"
	"drover/net/zsock"
)

// Job is one job to run.
type Job struct {
	ID      uint64 // the server's job id
	Attempt int    // 1 for the first dispatch, 2 after one retry, ...
	Key     id.Key // what to do: crawler, processor, URL
	// Headers are the job's requirements (as submitted); the worker's own
	// headers satisfy them.
	Headers map[string]string
	Payload []byte // opaque, as submitted
}

// Result is how a job ended, as a Handler reports it. Build one with OK,
// Internal, External or Throttled, or fill it in.
type Result struct {
	// Outcome is ok, internal (the worker's fault: retried elsewhere up to
	// the server's failure budget), external (the job's fault: failed at
	// once) or throttled (the site said slow down: requeued after a per-host
	// back-off, not charged). The zero value means ok when Error is empty
	// and internal otherwise.
	Outcome wire.Outcome
	// RetryAfter is the site's Retry-After for throttled (0: the server's
	// default back-off); ignored for other outcomes.
	RetryAfter time.Duration
	// Error says what went wrong (clipped to wire.MaxText bytes).
	Error string
	// Output is the job's output (at most wire.MaxOutput bytes; a larger
	// one turns the result into an internal failure saying so).
	Output []byte
	// Links are discovered jobs, submitted atomically with an ok result (at
	// most wire.MaxLinksPerResult; ignored for other outcomes).
	Links []wire.SubmitItem
	// Robots is a robots.txt the handler fetched for this job, whatever
	// the outcome: it is reported to the server (ROBOTS, before the
	// result) so that the fleet need not fetch it again. Nil: none.
	Robots *wire.Robots
	// A handler gives Output and Links up when it returns: the worker
	// keeps them until the server has the result (to send again after a
	// reconnection), and a server in the same process reads them where
	// they are. Do not change them afterwards.
}

// OK is a successful result with an output.
func OK(output []byte, links ...wire.SubmitItem) Result {
	return Result{Outcome: wire.OutcomeOK, Output: output, Links: links}
}

// Internal is a failure that is the worker's fault (fetch error, timeout):
// the job is retried, up to the server's failure budget.
func Internal(err error) Result {
	return Result{Outcome: wire.OutcomeInternal, Error: errText(err)}
}

// External is a failure that is the job's fault (malformed job): the job
// fails at once.
func External(err error) Result {
	return Result{Outcome: wire.OutcomeExternal, Error: errText(err)}
}

// Throttled says the site asked to slow down (HTTP 429 or 503): the job is
// requeued after retryAfter (0: the server's back-off), uncharged.
func Throttled(retryAfter time.Duration, err error) Result {
	return Result{Outcome: wire.OutcomeThrottled, RetryAfter: retryAfter, Error: errText(err)}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Handler runs one job. It should return soon after ctx is done; the
// context's cause (context.Cause; test it with errors.Is) says why:
// ErrCancelled, ErrEvicted or ErrShutdown. ctx.Err() is then that cause
// too, wrapped so that errors.Is(err, context.Canceled) holds. A handler
// that panics has the job reported as an internal failure naming the
// panic.
type Handler func(ctx context.Context, j Job) Result

// Why a job's context was cancelled, and why Run ended.
var (
	// ErrCancelled: the server cancelled the job (CANCEL, or WELCOME's
	// cancel list after a reconnection).
	ErrCancelled = errors.New("job cancelled by the server")
	// ErrEvicted: an operator evicted the worker; its jobs went back to the
	// queue.
	ErrEvicted = errors.New("worker evicted by an operator")
	// ErrShutdown: Run's context ended.
	ErrShutdown = errors.New("worker shutting down")
	// ErrDrained: the server let the worker go (DISCONNECT 200) after an
	// operator drained it; Run returns it wrapped.
	ErrDrained = errors.New("worker drained")
	// ErrSuperseded: another worker connected with the same id (DISCONNECT
	// 409); Run returns it wrapped.
	ErrSuperseded = errors.New("worker superseded by another with the same id")
	// ErrNotAuthorized: the coordinator refused the worker's key (at the
	// handshake) or its role; Run returns it wrapped.
	ErrNotAuthorized = zsock.ErrNotAuthorized
)

// Options configure a worker. Zero values take the defaults.
type Options struct {
	// Connect is the coordinator's peers endpoint (default
	// tcp://127.0.0.1:5570).
	Connect string
	// ID is the stable worker id, the same across reconnections and
	// restarts (default hostname-pid).
	ID string
	// Host is shown to operators (default the host name).
	Host string
	// Slots is how many jobs run at once (default 1, at most
	// wire.MaxSlots).
	Slots int
	// Headers are the worker's capabilities, matched against jobs'
	// requirements (threads=8, hwgroup=gpu, lang=en).
	Headers map[string]string
	// Heartbeat is the proposed heartbeat interval (0: the server's).
	Heartbeat time.Duration
	// Log receives the library's events (default: discard).
	Log *slog.Logger
	// ReconnectMin and ReconnectMax bound the reconnection backoff
	// (defaults 1 s and 32 s).
	ReconnectMin, ReconnectMax time.Duration
	// Security holds the CURVE keys for a coordinator that requires them
	// (docs/PROTOCOL.md §15): ServerPublic, and this worker's own pair. A
	// coordinator that refuses the worker's key or role makes Run return an
	// error wrapping ErrNotAuthorized.
	Security zsock.Security
	// StopTimeout bounds how long Run waits, after its context ends, for
	// handlers to return and their ok results to be acknowledged (default
	// 10 s).
	StopTimeout time.Duration
	// Robots, when set, takes the robots.txt copies the server sends
	// (docs/PROTOCOL.md §6.18): the worker announces it with the HELLO
	// header drv.robots=1, and Robots is called with each copy, on the
	// worker's loop, before the JOB that follows it starts.
	Robots func(wire.Robots)
	// Clock gives the library its time: heartbeats, liveness, reconnection
	// waits, the stop timeout and progress spacing (default: the system
	// clock; tests pass a clock.Fake).
	Clock clock.Clock
}

// Defaults of Options.
const (
	DefaultConnect     = "tcp://127.0.0.1:5570"
	DefaultStopTimeout = 10 * time.Second
)

func (o Options) withDefaults() (Options, error) {
	if o.Connect == "" {
		o.Connect = DefaultConnect
	}
	if o.Host == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "unknown"
		}
		o.Host = wire.Clip(h, wire.MaxHost)
	}
	if o.ID == "" {
		o.ID = wire.Clip(o.Host, wire.MaxID-12) + "-" + strconv.Itoa(os.Getpid())
	}
	if o.Slots == 0 {
		o.Slots = 1
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = DefaultStopTimeout
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	var errs []error
	if o.Slots < 1 || o.Slots > wire.MaxSlots {
		errs = append(errs, fmt.Errorf("worker option Slots %d: want 1 to %d", o.Slots, wire.MaxSlots))
	}
	if o.Heartbeat < 0 {
		errs = append(errs, fmt.Errorf("worker option Heartbeat %v: want >= 0 (0: the server's)", o.Heartbeat))
	}
	if o.StopTimeout < 0 {
		errs = append(errs, fmt.Errorf("worker option StopTimeout %v: want > 0", o.StopTimeout))
	}
	if o.ReconnectMin < 0 || o.ReconnectMax < 0 || (o.ReconnectMax != 0 && o.ReconnectMax < o.ReconnectMin) {
		errs = append(errs, fmt.Errorf("worker options ReconnectMin %v, ReconnectMax %v: want 0 < min <= max (0: defaults)", o.ReconnectMin, o.ReconnectMax))
	}
	if len(errs) == 0 {
		// Every other rule (id, host, header names and values) is DRV/2's:
		// check the HELLO this worker will send.
		h := hello(o, 1, nil)
		if _, err := wire.Encode(h); err != nil {
			errs = append(errs, fmt.Errorf("worker options: %w", err))
		}
	}
	return o, errors.Join(errs...)
}

// hello is the worker's HELLO listing held runs.
func hello(o Options, req uint64, held []wire.Run) *wire.Hello {
	hdr := o.Headers
	if o.Robots != nil {
		hdr = make(map[string]string, len(o.Headers)+1)
		for k, v := range o.Headers {
			hdr[k] = v
		}
		hdr[wire.RobotsHeader] = "1"
	}
	return &wire.Hello{
		Req: req, Role: wire.RoleWorker, ID: o.ID, Host: o.Host, Slots: uint32(o.Slots),
		Heartbeat: o.Heartbeat, Headers: wire.HeadersOf(hdr), Held: held,
	}
}

// Run connects to the coordinator and runs jobs with h until ctx ends (it
// then shuts down as the package documentation says and returns nil), or
// until the server lets the worker go (an error wrapping ErrDrained or
// ErrSuperseded). Bad options are reported at once, naming the option.
func Run(ctx context.Context, opts Options, h Handler) error {
	if h == nil {
		return errors.New("worker: nil handler")
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return err
	}
	s := newSession(opts, h)
	c, err := conn.Start(conn.Config{
		Endpoint:     opts.Connect,
		ReconnectMin: opts.ReconnectMin,
		ReconnectMax: opts.ReconnectMax,
		Log:          opts.Log,
		Security:     opts.Security,
		Clock:        opts.Clock,
	}, s)
	if err != nil {
		s.pool.close()
		return fmt.Errorf("worker: %w", err)
	}
	select {
	case <-ctx.Done():
		c.Post(s.beginStop)
		timer := c.Clock().NewTimer(opts.StopTimeout)
		defer timer.Stop()
		select {
		case <-c.Done():
		case <-timer.C():
			c.Post(func(l *conn.Link) {
				opts.Log.Warn("stop timeout: leaving handlers behind", "running", s.busy, "timeout", opts.StopTimeout)
				l.Stop(nil)
			})
			<-c.Done()
		}
	case <-c.Done():
	}
	// The loop has stopped: its state is ours now. Jobs still running are
	// abandoned.
	s.cancelAll(ErrShutdown)
	s.pool.close()
	return c.Err()
}
