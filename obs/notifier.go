package obs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"drover/admin"
	"drover/backoff"
	"drover/clock"
	"drover/config"
)

// NotifierOptions configure a Notifier. Zero fields take the defaults.
type NotifierOptions struct {
	// URL receives one POST per report, the admin.Event as JSON.
	URL string
	// Attempts is the number of POSTs per report, the first included
	// (default 4).
	Attempts int
	// BaseDelay is the delay before the second attempt; it doubles after
	// each one, up to MaxRetryDelay (default 1s).
	BaseDelay time.Duration
	// Timeout limits one POST, response included (default 10s).
	Timeout time.Duration
	// QueueSize is the number of reports that may wait in memory (default
	// 1000). When the queue is full, reports spill (to SpillPath, or to an
	// unbounded list in memory without one) and are delivered, in order,
	// once the queue has drained: a notifier that falls behind is never a
	// reason to lose a report, nor to make the caller wait.
	QueueSize int
	// SpillPath is the file reports spill to when the queue is full (JSON
	// lines, mode 0600). Reports left in it when the notifier stopped (a
	// crash, or a Close that gave up) are delivered first when a notifier
	// opens it again. Empty: spill to memory.
	SpillPath string
	// Origin names the event source in the idempotency id of each report
	// (the Idempotency-Key header: ORIGIN-SEQ). It must be the same for as
	// long as event sequence numbers are not reused: drover serve uses an
	// id kept in its store. Empty: a random one for this notifier.
	Origin string
	// Client sends the requests (default: a client of its own; Timeout
	// applies in any case).
	Client *http.Client
	// Logger receives a line for each report given up on (default: none).
	Logger *slog.Logger
	// Clock times the waits between attempts (default clock.System).
	Clock clock.Clock
}

// NotifierOptionsFrom maps the notifier section of the configuration
// (notifier.retries is the number of attempts).
func NotifierOptionsFrom(c config.Notifier) NotifierOptions {
	return NotifierOptions{URL: c.URL, Attempts: c.Retries, BaseDelay: c.RetryDelay, Timeout: c.Timeout, QueueSize: c.Queue}
}

// NotifierStats are the notifier's counts since it started.
type NotifierStats struct {
	Queued  int    // reports waiting now
	Sent    uint64 // delivered (a 2xx answer)
	Failed  uint64 // given up on: attempts exhausted, or a 4xx answer other than 408 and 429
	Dropped uint64 // never attempted: notifier closed, or Close gave up draining (left in the spill file if any)
	Retries uint64 // attempts after the first
	Spilled uint64 // reports that went to the spill (the queue was full); Queued counts those still waiting
}

// Notifier posts job results and errors to an HTTP endpoint (seed 001's
// REST status reports) from a bounded queue, one at a time in order, so
// that the caller - the broker loop - never waits for the network.
type Notifier struct {
	opts   NotifierOptions
	queue  chan admin.Event
	done   chan struct{} // closed when the sender has finished
	abort  context.Context
	cancel context.CancelFunc
	rung   chan struct{} // a report spilled (a buffer of one)

	mu     sync.Mutex
	closed bool
	spill  spill // reports beyond the queue, oldest first (under mu)

	sent, failed, dropped, retries, spilled atomic.Uint64
}

// NewNotifier validates the options and starts the sender goroutine.
func NewNotifier(opts NotifierOptions) (*Notifier, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("obs: notifier URL %q: expected an absolute http:// or https:// URL", opts.URL)
	}
	if opts.Attempts <= 0 {
		opts.Attempts = 4
	}
	if opts.BaseDelay <= 0 {
		opts.BaseDelay = time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = 1000
	}
	if opts.Client == nil {
		opts.Client = &http.Client{}
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Origin == "" {
		opts.Origin = RandomOrigin()
	}
	n := &Notifier{opts: opts, queue: make(chan admin.Event, opts.QueueSize), done: make(chan struct{}), rung: make(chan struct{}, 1)}
	if opts.SpillPath != "" {
		if err := n.spill.open(opts.SpillPath); err != nil {
			return nil, fmt.Errorf("obs: notifier spill file: %w", err)
		}
		if left := n.spill.n; left > 0 {
			opts.Logger.Info("notifier: delivering reports left in the spill file by the last run", "path", opts.SpillPath, "reports", left)
		}
	}
	n.abort, n.cancel = context.WithCancel(context.Background())
	go n.run()
	return n, nil
}

// RandomOrigin is a random 64-bit origin in hex, for a source whose event
// sequence does not survive it.
func RandomOrigin() string { return fmt.Sprintf("%016x", rand.Uint64()) }

// IdempotencyKey is the id the notifier sends with a report of ev
// (header Idempotency-Key): ORIGIN-SEQ. A consumer that records the ids it
// has processed can drop a report delivered twice (a retry after a lost
// answer).
func IdempotencyKey(origin string, ev admin.Event) string {
	return origin + "-" + strconv.FormatUint(ev.Seq, 10)
}

// Notify queues a report and returns at once: true when it was taken
// (queued, or spilled when the queue is full), false when the notifier is
// closed (counted as dropped) or the spill file could not be written
// (logged, counted as failed).
func (n *Notifier) Notify(ev admin.Event) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		n.dropped.Add(1)
		return false
	}
	if n.spill.n == 0 { // while reports wait in the spill, newer ones go behind them
		select {
		case n.queue <- ev:
			return true
		default:
		}
	}
	if err := n.spill.push(ev); err != nil {
		n.failed.Add(1)
		n.opts.Logger.Error("notifier: report not spilled", "seq", ev.Seq, "kind", ev.Kind, "err", err)
		return false
	}
	n.spilled.Add(1)
	select {
	case n.rung <- struct{}{}:
	default:
	}
	return true
}

// Stats returns the counts so far.
func (n *Notifier) Stats() NotifierStats {
	n.mu.Lock()
	spilled := n.spill.n
	n.mu.Unlock()
	return NotifierStats{Queued: len(n.queue) + spilled, Sent: n.sent.Load(), Failed: n.failed.Load(),
		Dropped: n.dropped.Load(), Retries: n.retries.Load(), Spilled: n.spilled.Load()}
}

// Close stops accepting reports and delivers those queued, retries
// included, until ctx is done; then it abandons the rest (counted as
// dropped) and returns ctx's error. Calling it again waits the same way.
func (n *Notifier) Close(ctx context.Context) error {
	n.mu.Lock()
	if !n.closed {
		n.closed = true
		close(n.queue)
	}
	n.mu.Unlock()
	select {
	case <-n.done:
		return nil
	case <-ctx.Done():
		n.cancel()
		<-n.done
		return fmt.Errorf("obs: notifier closed before delivering every report: %w", ctx.Err())
	}
}

// run delivers the queue's reports, and the spill's once the queue is
// empty: reports spill only while the queue is full, and go to the queue
// again only once the spill is empty, so this is their order. When Close
// gives up, what was not delivered stays in the spill file (if any).
func (n *Notifier) run() {
	defer close(n.done)
	defer n.cancel()
	var left []admin.Event // abandoned when Close gave up
	defer func() { n.closeSpill(left) }()
	for n.abort.Err() == nil {
		select {
		case ev, ok := <-n.queue:
			if n.took(ev, ok, &left) {
				return
			}
			continue
		default:
		}
		if n.fromSpill(&left) {
			continue
		}
		select {
		case ev, ok := <-n.queue:
			if n.took(ev, ok, &left) {
				return
			}
		case <-n.rung:
		case <-n.abort.Done():
		}
	}
}

// took handles what a receive from the queue gave: a report, delivered
// (or kept in left when it could not be), or the queue's close, after
// which the spill's reports are delivered; it reports whether the queue
// is closed (run then returns).
func (n *Notifier) took(ev admin.Event, ok bool, left *[]admin.Event) (closed bool) {
	if !ok {
		for n.abort.Err() == nil && n.fromSpill(left) {
		}
		return true
	}
	if !n.deliver(ev) {
		*left = append(*left, ev)
	}
	return false
}

// fromSpill delivers the oldest spilled report; false when there is none
// (or it was abandoned: then it stays in the spill).
func (n *Notifier) fromSpill(left *[]admin.Event) bool {
	n.mu.Lock()
	ev, ok, err := n.spill.peek()
	n.mu.Unlock()
	if err != nil {
		n.opts.Logger.Error("notifier: reading the spill file", "path", n.opts.SpillPath, "err", err)
	}
	if !ok || !n.deliver(ev) {
		return false
	}
	n.mu.Lock()
	n.spill.pop()
	n.mu.Unlock()
	return true
}

// closeSpill ends the sender: with a spill file, the reports not delivered
// (those abandoned, then the queue's, then the spill's) stay in it for the
// next run; without one they are counted as dropped.
func (n *Notifier) closeSpill(left []admin.Event) {
	if n.queue != nil {
		for ev := range n.queue { // Close closed it: this ends
			left = append(left, ev)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	total := len(left) + n.spill.n
	if total > 0 {
		if n.opts.SpillPath != "" {
			n.opts.Logger.Warn("notifier: stopped with reports undelivered; the next start delivers them", "path", n.opts.SpillPath, "reports", total)
		}
		n.dropped.Add(uint64(total))
	}
	if err := n.spill.close(left); err != nil {
		n.opts.Logger.Error("notifier: closing the spill file", "path", n.opts.SpillPath, "err", err)
	}
}

// deliver posts one report, retrying with a doubling delay. It returns
// false when Close gave up before the report was delivered or given up on
// (the report is abandoned, not counted).
func (n *Notifier) deliver(ev admin.Event) bool {
	if n.abort.Err() != nil {
		return false
	}
	body, err := json.Marshal(ev)
	if err != nil { // admin.Event holds only plain fields; kept for safety
		n.failed.Add(1)
		n.opts.Logger.Error("notifier: encoding a report", "seq", ev.Seq, "err", err)
		return true
	}
	key := IdempotencyKey(n.opts.Origin, ev)
	for attempt := 1; ; attempt++ {
		err := n.post(body, key)
		if err == nil {
			n.sent.Add(1)
			return true
		}
		if n.abort.Err() != nil {
			return false
		}
		var perm *permanentError
		if errors.As(err, &perm) || attempt >= n.opts.Attempts {
			n.failed.Add(1)
			n.opts.Logger.Warn("notifier: report not delivered", "url", n.opts.URL, "seq", ev.Seq,
				"kind", ev.Kind, "attempts", attempt, "err", err)
			return true
		}
		n.retries.Add(1)
		t := n.opts.Clock.NewTimer(retryDelay(n.opts.BaseDelay, attempt))
		select {
		case <-t.C():
		case <-n.abort.Done():
			t.Stop()
			return false
		}
	}
}

// MaxRetryDelay caps the doubling delay between two attempts.
const MaxRetryDelay = time.Hour

// retryDelay is the wait after the given failed attempt (1 for the first):
// base, then doubling, capped at MaxRetryDelay.
func retryDelay(base time.Duration, attempt int) time.Duration {
	return backoff.Policy{Start: base, Cap: MaxRetryDelay}.Delay(attempt, nil)
}

// permanentError is a failure that retrying would repeat.
type permanentError struct{ msg string }

func (e *permanentError) Error() string { return e.msg }

func (n *Notifier) post(body []byte, key string) error {
	ctx, cancel := context.WithTimeout(n.abort, n.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.opts.URL, bytes.NewReader(body))
	if err != nil {
		return &permanentError{msg: fmt.Sprintf("building a POST to %s: %v", n.opts.URL, err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "drover-notifier")
	req.Header.Set("Idempotency-Key", key)
	resp, err := n.opts.Client.Do(req)
	if err != nil {
		return fmt.Errorf("posting to %s: %w", n.opts.URL, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode >= 400 && resp.StatusCode < 500 &&
		resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests:
		return &permanentError{msg: fmt.Sprintf("posting to %s: answered %s, a client error that retrying would repeat",
			n.opts.URL, resp.Status)}
	}
	return fmt.Errorf("posting to %s: answered %s, expected 2xx", n.opts.URL, resp.Status)
}
