package crawl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

const (
	// robotsRetry is how long an origin whose robots.txt the server
	// refused (5xx, 429) stays disallowed before it is fetched again,
	// unless the server's Retry-After says longer.
	robotsRetry = time.Minute
	// robotsGiveUp is how many consecutive unreachable robots.txt
	// answers make an origin's pages Internal failures instead of
	// Throttled, so that they end failed under the broker's retry budget
	// rather than being retried forever.
	robotsGiveUp = 3
)

var errTooManyRedirects = errors.New("robots.txt: more than 5 redirects")

// robotsEntry is the cached robots.txt state of one origin.
type robotsEntry struct {
	rules       *Robots   // nil while unreachable
	expires     time.Time // refetch after this
	failures    int       // consecutive unreachable answers
	unreachable string    // why, while rules is nil
	netErr      bool      // unreachable for a network error: not cached
	refused     error     // the private-address guard refused it (netErr too)
	// share: fetched here with an answer the fleet may share (2xx, 4xx,
	// too many redirects), body its bytes; reported once (robotsshare.go).
	share    bool
	body     []byte
	reported bool // guarded by Fetcher.mu
}

// robotsFor returns the robots rules for u's origin, fetching robots.txt
// when it is not cached or has expired. When the origin cannot be crawled
// now (robots.txt unreachable, or ctx ended while waiting for it), it
// returns instead the Page that Fetch must answer. The first call that
// sees a file this Fetcher fetched itself also gets it to report to the
// fleet (robotsshare.go).
func (f *Fetcher) robotsFor(ctx context.Context, u *url.URL) (*Robots, *RobotsCopy, *Page) {
	origin := u.Scheme + "://" + u.Host
	f.mu.Lock()
	e := f.robots[origin]
	f.mu.Unlock()
	now := f.clock.Now()
	if e != nil && now.Before(e.expires) {
		if e.rules != nil {
			return e.rules, f.report(origin, e), nil
		}
		return nil, nil, f.unreachablePage(e, now)
	}
	flightKey := origin
	if guarded(ctx) { // a guarded fetch and an unguarded one do not share
		flightKey += " guarded"
	}
	ch := f.flight.DoChan(flightKey, func() (any, error) {
		f.mu.Lock()
		prev := f.robots[origin]
		f.mu.Unlock()
		if prev != nil && f.clock.Now().Before(prev.expires) { // fetched meanwhile
			return prev, nil
		}
		next := f.fetchRobots(ctx, origin, prev)
		if !next.netErr {
			f.mu.Lock()
			if _, ok := f.robots[origin]; !ok && len(f.robots) >= f.pruneRobotsAt {
				f.pruneRobots()
			}
			f.robots[origin] = next
			f.mu.Unlock()
		}
		return next, nil
	})
	select {
	case res := <-ch:
		e = res.Val.(*robotsEntry)
		if e.rules != nil {
			return e.rules, f.report(origin, e), nil
		}
		return nil, nil, f.unreachablePage(e, f.clock.Now())
	case <-ctx.Done():
		return nil, nil, &Page{Outcome: Internal,
			Err: fmt.Sprintf("waiting for %s/robots.txt: %v", origin, context.Cause(ctx))}
	}
}

// unreachablePage is Fetch's answer while an origin's robots.txt is
// unreachable: for a network error Internal (the page would fail the same
// way); for a server's refusal Throttled until robotsGiveUp failures in a
// row, Internal after.
func (f *Fetcher) unreachablePage(e *robotsEntry, now time.Time) *Page {
	p := &Page{Err: "robots.txt unreachable, origin disallowed for now: " + e.unreachable}
	if e.refused != nil {
		refusedPage(e.refused, p)
		return p
	}
	if e.netErr {
		p.Outcome, p.Err = Internal, "robots.txt unreachable: "+e.unreachable
		return p
	}
	if e.failures >= robotsGiveUp {
		p.Outcome = Internal
		p.Err = fmt.Sprintf("robots.txt unreachable %d times in a row: %s", e.failures, e.unreachable)
		return p
	}
	p.Outcome = Throttled
	p.RetryAfter = max(e.expires.Sub(now), 0)
	return p
}

// fetchRobots fetches and interprets origin's robots.txt (RFC 9309
// section 2.3.1): 2xx is parsed; 4xx other than 429, and more than five
// redirects, mean no rules; 429 and 5xx make it unreachable for a while;
// a network error makes it unreachable for this fetch only (netErr).
// The fetch is not cancelled with the ctx of the Fetch that started it,
// since other fetches may be waiting for it, but it has the fetch timeout.
func (f *Fetcher) fetchRobots(ctx context.Context, origin string, prev *robotsEntry) *robotsEntry {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.cfg.Timeout)
	defer cancel()
	failures := 0
	if prev != nil {
		failures = prev.failures
	}
	unreachable := func(why string, retryAfter time.Duration) *robotsEntry {
		return &robotsEntry{
			expires:     f.clock.Now().Add(max(robotsRetry, retryAfter)),
			failures:    failures + 1,
			unreachable: why,
		}
	}
	allowAll := func() *robotsEntry {
		return &robotsEntry{rules: &Robots{}, expires: f.clock.Now().Add(f.cfg.RobotsTTL), share: true}
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, origin+"/robots.txt", nil)
	if err != nil {
		return unreachable(err.Error(), 0)
	}
	req.Header.Set("User-Agent", f.agent)
	resp, err := f.client(ctx).Do(req)
	if err != nil {
		if errors.Is(err, errTooManyRedirects) {
			return allowAll() // RFC 9309 2.3.1.2: MAY be treated as unavailable
		}
		e := unreachable(describeFetchError(ctx, err, f.cfg.Timeout), 0)
		e.netErr = true
		if re := (*RefusedError)(nil); errors.As(err, &re) {
			e.refused = re
		}
		return e
	}
	defer resp.Body.Close()
	switch code := resp.StatusCode; {
	case code == http.StatusTooManyRequests || code >= 500:
		drain(resp.Body)
		return unreachable(resp.Status, ParseRetryAfter(resp.Header.Get("Retry-After"), f.clock.Now()))
	case code >= 400:
		drain(resp.Body)
		return allowAll()
	case code >= 300: // a redirect without a usable Location
		drain(resp.Body)
		return allowAll()
	case code < 200:
		drain(resp.Body)
		return unreachable(resp.Status, 0)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, robotsMaxBytes))
	if err != nil {
		e := unreachable("reading robots.txt: "+describeFetchError(ctx, err, f.cfg.Timeout), 0)
		e.netErr = true
		return e
	}
	return &robotsEntry{rules: ParseRobots(body, f.token), expires: f.clock.Now().Add(f.cfg.RobotsTTL), share: true, body: body}
}
