// Package tui is drover's operations console: a Bubble Tea v2 program that
// shows the coordinator's workers, per-URL job state, waiter queues, retries
// and events, and lets an operator evict, drain, requeue and pause.
//
// The console talks to the coordinator only through Backend. It never walks
// the whole state: it asks for the window of rows it can show (offset and
// limit from the viewport, sort and filter applied by the coordinator) and
// the header totals, re-querying when the backend signals a change,
// coalesced to at most one refresh per Options.Refresh. When the backend
// errs or times out the header says STALE until answers come back.
//
// Layout follows soft-serve's pkg/ui: a component per view (workers.go,
// jobs.go, waiters.go, events.go, crawls.go) and for the table, the tab
// bar, the filter editor, the help screen and the dialog (tui/dialog), each
// with its own keymap (component.go); the root model routes a key to the
// current view's keymaps and is the only one to return a tea.View. Help
// and the hint lines are generated from the keymaps. Conventions follow k9s and lazygit: hints
// for the current view always on screen, `?` for every key, `/` to filter,
// destructive actions behind a dialog whose focused button is Cancel, a
// read-only mode, and a selection that follows the row's identity.
package tui

import (
	"context"
	"fmt"
	"time"

	"drover/admin"
	"drover/themes"
)

// Backend is the console's only way to the coordinator, implemented over
// the admin protocol: in-process for the embedded console, ZeroMQ for
// `drover console --connect`.
//
// What the console asks of Query:
//   - Windows: Offset and Limit are the visible rows plus up to one page of
//     margin on each side; Page.Total counts the rows matching the filter.
//   - Sort names are the JSON names of the row's fields: workers id, host,
//     state, used, done, failures, last_heartbeat, since; jobs url, state,
//     owner, waiters, attempts, failures, retry_at, worker, created;
//     waiters position, session, since; retries url, state, retry_at,
//     attempts, failures, throttles, worker; events seq, at, kind, worker;
//     crawls name.
//     An empty Sort is the view's default order (events: newest first).
//   - Filter follows drover/filter (free text, state=, host=, worker=,
//     crawler=, processor=, kind=, key=, wait=), row by row as filter.Filter's Job,
//     Worker, Event and Waiter match; on the Workers view worker=ID matches
//     the worker itself, which the console uses to look one up.
//   - ViewJobs with Key set returns that key's row with its History (the
//     detail pane, and the check whether a vanished row still exists).
//   - ViewWaiters lists the FIFO of Query.Key.
//   - ViewCrawls lists the crawl definitions; each crawl's job counts are
//     ViewJobs totals for state=S crawler=NAME with Limit 1.
//   - ViewRetries returns the backoff and failed jobs, and in Page.Hosts
//     every host back-off in force.
//
// `*` asks for up to 100,000 rows of the current filter at once.
type Backend interface {
	// Totals returns the header figures: jobs, keys and workers by state,
	// and the counters since start.
	Totals(ctx context.Context) (admin.Totals, error)
	// Query returns one window of one view, filtered and sorted by the
	// coordinator (sort names: admin.Sorts): the console asks only for the
	// rows it can show.
	Query(ctx context.Context, q admin.Query) (admin.Page, error)
	// Act performs an operator action (evict, drain, requeue, pause, ...)
	// and says what it did, target by target.
	Act(ctx context.Context, a admin.Action) (admin.ActionResult, error)
	// Changed delivers a value whenever coordinator state changed (coalesced by the sender); closed when the backend closes.
	Changed() <-chan struct{}
	// Endpoint names where the coordinator is ("embedded" or tcp://...), for the header.
	Endpoint() string
}

// Options configure the console.
type Options struct {
	// ReadOnly disables every action (evict, drain, requeue, pause); the
	// keys stay listed in help, marked as disabled, and refuse with a flash.
	ReadOnly bool
	// Theme names the starting theme (see themes.Names and Themes). Empty:
	// detect the terminal's background and pick dark or light.
	Theme string
	// Themes are custom themes from configuration (themes.Custom), offered
	// after the built-ins by the `t` key.
	Themes []themes.Theme
	// NoColor forces the mono theme (--no-color; Run also honours NO_COLOR).
	NoColor bool
	// Clock gives the time for ages and countdowns; nil means time.Now.
	// Golden tests inject a fixed clock.
	Clock func() time.Time
	// Refresh is the shortest interval between two refreshes driven by
	// Changed; default 100ms (10 per second).
	Refresh time.Duration
	// Poll is how often the console refreshes with no change signalled, to
	// notice a coordinator that stopped answering and keep ages current;
	// default 1s.
	Poll time.Duration
	// Timeout bounds each round of backend calls; past it the header shows
	// STALE. Default 2s.
	Timeout time.Duration
	// Embedded says the coordinator runs in this process: quitting stops
	// it, so q asks first when work is in flight.
	Embedded bool
	// Version is shown in the header.
	Version string
	// DoneText is what the header says once the work is finished (nothing
	// queued, running, backing off or requested, something done): default
	// "all done"; `drover crawl` says the crawl finished and how to see the
	// summary.
	DoneText string
	// Notice, when set, is called on each redraw; a non-empty answer is
	// shown on the header's first line (`drover crawl` says there when
	// politeness slows the crawl, and which flag sets it).
	Notice func() string
}

// Defaults of Options.
const (
	DefaultRefresh = 100 * time.Millisecond
	DefaultPoll    = time.Second
	DefaultTimeout = 2 * time.Second
)

// withDefaults fills the zero durations.
func (o Options) withDefaults() Options {
	if o.Refresh <= 0 {
		o.Refresh = DefaultRefresh
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// Validate checks the options: negative durations and an unknown theme
// name are errors naming the option and what was expected.
func (o Options) Validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Refresh", o.Refresh}, {"Poll", o.Poll}, {"Timeout", o.Timeout}} {
		if d.v < 0 {
			return fmt.Errorf("console option %s = %v: want a positive duration, or 0 for the default", d.name, d.v)
		}
	}
	set, err := themes.NewSet(o.Themes...)
	if err != nil {
		return fmt.Errorf("console option Themes: %w", err)
	}
	if o.Theme != "" {
		if _, err := set.Get(o.Theme); err != nil {
			return fmt.Errorf("console option Theme: %w", err)
		}
	}
	return nil
}
