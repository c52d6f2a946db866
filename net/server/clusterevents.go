package server

import (
	"fmt"
	"slices"
	"sync/atomic"

	"drover/admin"
	"drover/coord"
	"drover/filter"
)

// Events shared by several coordinators (Options.ClusterEvents, the Redis
// Cluster store): a goroutine adds this coordinator's events (but the
// ledger's per-key ones) to the cluster's, off the reactor, and view
// events reads the cluster's newest, each naming its coordinator. The
// events socket still publishes this coordinator's own only.

// ClusterEvents keeps recent events for every coordinator sharing a store
// (store/redis.Events). Add is called by the event writer goroutine,
// Recent by the cluster's read lane (clusterio.go); their calls may do
// I/O.
type ClusterEvents interface {
	// Add appends this coordinator's events.
	Add(evs []admin.Event) error
	// Recent reads up to n of the newest events, newest first.
	Recent(n int) ([]admin.Event, error)
}

// clusterEventScan bounds the events view events reads from the cluster
// for one query (the filter, offset and limit apply to them).
const clusterEventScan = 2000

// eventWriter hands the reactor's events to the goroutine that adds them
// to the cluster's.
type eventWriter struct {
	ch      chan []admin.Event
	dropped atomic.Uint64 // events not shared: the writer was behind
}

// shareEvents gives the step's events to the event writer (noted: with
// their results' cursors already); a step whose events find it behind by
// 256 steps is dropped (counted).
func (cl *cluster) shareEvents(evs []admin.Event, noted bool) {
	w := cl.evw
	if w == nil || len(evs) == 0 {
		return
	}
	batch := make([]admin.Event, 0, len(evs))
	for i := range evs {
		if evs[i].Kind.IsKey() {
			continue // the ledger's, one per key moved: this coordinator's view only
		}
		ev := evs[i]
		if !noted {
			cl.res.noteCursor(&ev) // results.go
		}
		batch = append(batch, ev)
	}
	if len(batch) == 0 {
		return
	}
	select {
	case w.ch <- batch:
	default:
		w.dropped.Add(uint64(len(batch)))
	}
}

// startEventWriter starts the goroutine that adds events to the
// cluster's and returns the function that stops it.
func (cl *cluster) startEventWriter() (stop func()) {
	ce := cl.ce
	if ce == nil {
		return func() {}
	}
	cl.evw = &eventWriter{ch: make(chan []admin.Event, 256)}
	ch, log := cl.evw.ch, cl.log
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		failing := false
		for batch := range ch {
			// What else is waiting goes in the same round trip.
			for more := true; more && len(batch) < 4096; {
				select {
				case b, ok := <-ch:
					if !ok {
						more = false
						break
					}
					batch = append(batch, b...)
				default:
					more = false
				}
			}
			err := ce.Add(batch)
			if err != nil && !failing {
				log.Warn("events not shared with the cluster", "events", len(batch), "err", err)
			}
			failing = err != nil
		}
	}()
	return func() {
		close(ch)
		<-exited
		cl.evw = nil
	}
}

// readClusterEvents answers view events from the cluster's newest
// events, read off the reactor (clusterquery.go).
func (cl *cluster) readClusterEvents(q admin.Query) (clusterRead, admin.Page, error) {
	page := admin.Page{View: admin.ViewEvents, Offset: q.Offset}
	if q.Offset < 0 || q.Limit < 0 {
		return nil, page, coord.Errorf(coord.ErrInvalid, "query events: offset %d, limit %d: want >= 0", q.Offset, q.Limit)
	}
	limit := q.Limit
	if limit == 0 || limit > coord.MaxWindow {
		limit = coord.MaxWindow
	}
	f, err := filter.Parse(q.Filter)
	if err != nil {
		return nil, page, coord.Errorf(coord.ErrInvalid, "query events: %w", err)
	}
	ce := cl.ce
	return func() func() (admin.Page, error) {
		evs, err := ce.Recent(clusterEventScan)
		if err != nil && len(evs) == 0 {
			return done(page, fmt.Errorf("query events: %w", err))
		}
		if q.Desc { // oldest first
			slices.Reverse(evs)
		}
		skipped := 0
		for i := range evs {
			if !f.Event(&evs[i]) {
				continue
			}
			page.Total++
			if skipped < q.Offset {
				skipped++
				continue
			}
			if len(page.Events) < limit {
				page.Events = append(page.Events, evs[i])
			}
		}
		return done(page, nil)
	}, page, nil
}
