package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Where a worker is connected (an operator's evict, drain or undrain, on
// any coordinator, of a worker connected to another): each coordinator
// notes the ids of the workers it has sessions with (NoteWorkers, about
// once a second) and publishes them with its summary (summary.go); a
// coordinator asked about a worker it has no session with finds the
// coordinator whose summary lists it (WorkerAt) and posts the action to
// it (control.go). A summary is up to a heartbeat old: a worker that
// just moved is found where it was, whose answer then says it has no
// such worker.

// maxNotedWorkers bounds the worker ids a summary lists.
const maxNotedWorkers = 20000

// NoteWorkers notes the ids of the workers this coordinator has sessions
// with, for its next summary (the first maxNotedWorkers, sorted). Safe
// from any goroutine.
func (v *JobView) NoteWorkers(ids []string) {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = ids[:min(len(ids), maxNotedWorkers)]
	v.workers.Store(&ids)
}

// workerPlace is where WorkerAt found a worker.
type workerPlace struct {
	Coordinator string    // its id
	Peers       string    // its peers endpoint, as it published it ("" when unknown)
	Alive       bool      // its heartbeat has not expired
	Heartbeat   time.Time // when it last published its summary
}

// WorkerAt finds the coordinator other than this one that has worker w,
// as the summaries list it: a live one first, else the one that
// published last; "" when no other coordinator lists it. Safe from any
// goroutine.
func (v *JobView) WorkerAt(w string) (coordinator, peers string, alive bool, err error) {
	places, err := v.workerPlaces(w)
	if err != nil || len(places) == 0 {
		return "", "", false, err
	}
	p := places[0]
	return p.Coordinator, p.Peers, p.Alive, nil
}

// workerPlaces finds the coordinators other than this one whose summaries
// list worker w: the live ones first, then by newest summary.
func (v *JobView) workerPlaces(w string) ([]workerPlace, error) {
	l := v.l
	ctx, cancel := l.ctx()
	defer cancel()
	listings, err := l.workerListings(ctx, l.coord)
	if err != nil {
		return nil, fmt.Errorf("redis cluster view: finding worker %q: %w", w, err)
	}
	var places []workerPlace
	for _, c := range listings {
		if _, ok := slices.BinarySearch(*c.s.Workers, w); ok {
			places = append(places, workerPlace{Coordinator: c.id, Peers: c.s.Peers, Alive: c.alive, Heartbeat: c.s.Heartbeat})
		}
	}
	return places, nil
}

// workerListing is a coordinator's summary that lists its workers.
type workerListing struct {
	id    string
	s     summary
	alive bool // its heartbeat has not expired
}

// workerListings reads the summaries that list their coordinators'
// workers, but those of the coordinators in except, with whether each
// coordinator is alive: the live ones first, then by newest summary.
func (l *Ledger) workerListings(ctx context.Context, except ...string) ([]workerListing, error) {
	all, err := l.rdb.HGetAll(ctx, l.summariesKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("reading the summaries: %w", err)
	}
	var out []workerListing
	for c, js := range all {
		if slices.Contains(except, c) {
			continue
		}
		var s summary
		if json.Unmarshal([]byte(js), &s) != nil || s.Workers == nil {
			continue
		}
		out = append(out, workerListing{id: c, s: s})
	}
	if len(out) == 0 {
		return nil, nil
	}
	pipe := l.rdb.Pipeline()
	alive := make([]*goredis.IntCmd, len(out))
	for i, c := range out {
		alive[i] = pipe.Exists(ctx, l.aliveKey(c.id))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		return nil, fmt.Errorf("reading the coordinators' heartbeats: %w", err)
	}
	for i := range out {
		out[i].alive = alive[i].Val() == 1
	}
	slices.SortFunc(out, func(a, b workerListing) int {
		if a.alive != b.alive {
			if a.alive {
				return -1
			}
			return 1
		}
		return b.s.Heartbeat.Compare(a.s.Heartbeat)
	})
	return out, nil
}

// workersNoted is this coordinator's workers as NoteWorkers last noted
// them, for its summary (nil before the first note).
func (v *JobView) workersNoted() *[]string { return v.workers.Load() }
