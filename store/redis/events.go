package redis

import (
	"encoding/json"
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"drover/admin"
)

// The cluster's recent events (QUERY view events on any coordinator):
// every coordinator appends its events, but the ledger's per-key ones, to
// one stream, PREFIX:events, trimmed to about EventsKept entries. An entry
// has c, the coordinator's id, and e, the event as JSON.

// EventsKept is about how many events the stream keeps (trimmed
// approximately, as Redis does cheaply).
const EventsKept = 10000

// Events is the cluster's events stream. Its calls are safe from any
// goroutine (they use only the client and the configuration).
type Events struct{ l *Ledger }

// Events returns the events stream on l's cluster.
func (l *Ledger) Events() *Events { return &Events{l: l} }

func (e *Events) key() string { return e.l.cfg.Prefix + ":events" }

// Add appends this coordinator's events in one round trip.
func (e *Events) Add(evs []admin.Event) error {
	if len(evs) == 0 {
		return nil
	}
	ctx, cancel := e.l.ctx()
	defer cancel()
	pipe := e.l.rdb.Pipeline()
	for i := range evs {
		b, err := json.Marshal(&evs[i])
		if err != nil {
			return fmt.Errorf("redis events: encoding a %s event: %w", evs[i].Kind, err)
		}
		pipe.XAdd(ctx, &goredis.XAddArgs{Stream: e.key(), MaxLen: EventsKept, Approx: true, Values: []any{"c", e.l.coord, "e", b}})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("redis events: adding %d events: %w", len(evs), err)
	}
	return nil
}

// Recent reads up to n of the newest events, newest first, each with the
// coordinator that added it.
func (e *Events) Recent(n int) ([]admin.Event, error) {
	ctx, cancel := e.l.ctx()
	defer cancel()
	ms, err := e.l.rdb.XRevRangeN(ctx, e.key(), "+", "-", int64(n)).Result()
	if err != nil {
		return nil, fmt.Errorf("redis events: reading the newest %d: %w", n, err)
	}
	out := make([]admin.Event, 0, len(ms))
	var errs []error
	for _, m := range ms {
		var ev admin.Event
		s, _ := m.Values["e"].(string)
		if err := json.Unmarshal([]byte(s), &ev); err != nil {
			errs = append(errs, fmt.Errorf("redis events: entry %s: %w", m.ID, err))
			continue
		}
		ev.Coordinator, _ = m.Values["c"].(string)
		out = append(out, ev)
	}
	return out, errors.Join(errs...)
}
