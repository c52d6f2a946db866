package obs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"drover/admin"
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
	// QueueSize is the number of reports that may wait (default 1000);
	// when the queue is full Notify drops the report and counts it.
	QueueSize int
	// Client sends the requests (default: a client of its own; Timeout
	// applies in any case).
	Client *http.Client
	// Logger receives a line for each report given up on (default: none).
	Logger *slog.Logger
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
	Dropped uint64 // never attempted: queue full, notifier closed, or Close gave up draining
	Retries uint64 // attempts after the first
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

	mu     sync.RWMutex
	closed bool

	sent, failed, dropped, retries atomic.Uint64
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
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	n := &Notifier{opts: opts, queue: make(chan admin.Event, opts.QueueSize), done: make(chan struct{})}
	n.abort, n.cancel = context.WithCancel(context.Background())
	go n.run()
	return n, nil
}

// Notify queues a report and returns at once: true when it was queued,
// false when it was dropped (queue full or notifier closed).
func (n *Notifier) Notify(ev admin.Event) bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.closed {
		n.dropped.Add(1)
		return false
	}
	select {
	case n.queue <- ev:
		return true
	default:
		n.dropped.Add(1)
		return false
	}
}

// Stats returns the counts so far.
func (n *Notifier) Stats() NotifierStats {
	return NotifierStats{Queued: len(n.queue), Sent: n.sent.Load(), Failed: n.failed.Load(),
		Dropped: n.dropped.Load(), Retries: n.retries.Load()}
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

func (n *Notifier) run() {
	defer close(n.done)
	defer n.cancel()
	for ev := range n.queue {
		n.deliver(ev)
	}
}

// deliver posts one report, retrying with a doubling delay.
func (n *Notifier) deliver(ev admin.Event) {
	if n.abort.Err() != nil {
		n.dropped.Add(1)
		return
	}
	body, err := json.Marshal(ev)
	if err != nil { // admin.Event holds only plain fields; kept for safety
		n.failed.Add(1)
		n.opts.Logger.Error("notifier: encoding a report", "seq", ev.Seq, "err", err)
		return
	}
	for attempt := 1; ; attempt++ {
		err := n.post(body)
		if err == nil {
			n.sent.Add(1)
			return
		}
		if n.abort.Err() != nil {
			n.dropped.Add(1)
			return
		}
		var perm *permanentError
		if errors.As(err, &perm) || attempt >= n.opts.Attempts {
			n.failed.Add(1)
			n.opts.Logger.Warn("notifier: report not delivered", "url", n.opts.URL, "seq", ev.Seq,
				"kind", ev.Kind, "attempts", attempt, "err", err)
			return
		}
		n.retries.Add(1)
		t := time.NewTimer(retryDelay(n.opts.BaseDelay, attempt))
		select {
		case <-t.C:
		case <-n.abort.Done():
			t.Stop()
			n.dropped.Add(1)
			return
		}
	}
}

// MaxRetryDelay caps the doubling delay between two attempts.
const MaxRetryDelay = time.Hour

// retryDelay is the wait after the given failed attempt (1 for the first):
// base, then doubling, capped at MaxRetryDelay.
func retryDelay(base time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt && d < MaxRetryDelay; i++ {
		d *= 2
	}
	return min(d, MaxRetryDelay)
}

// permanentError is a failure that retrying would repeat.
type permanentError struct{ msg string }

func (e *permanentError) Error() string { return e.msg }

func (n *Notifier) post(body []byte) error {
	ctx, cancel := context.WithTimeout(n.abort, n.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.opts.URL, bytes.NewReader(body))
	if err != nil {
		return &permanentError{msg: fmt.Sprintf("building a POST to %s: %v", n.opts.URL, err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "drover-notifier")
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
