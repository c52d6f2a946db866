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
	_, err := e.l.addEntries(e.key(), EventsKept, len(evs), func(i int) ([]any, error) {
		b, err := json.Marshal(&evs[i])
		if err != nil {
			return nil, fmt.Errorf("encoding a %s event: %w", evs[i].Kind, err)
		}
		return []any{"c", e.l.coord, "e", b}, nil
	})
	if err != nil {
		return fmt.Errorf("redis events: adding %d events: %w", len(evs), err)
	}
	return nil
}

// addEntries appends n entries to stream in one round trip (the stream
// trimmed to about maxLen entries; 0: not trimmed), entry i's fields
// being fields(i); an error of fields sends none. It returns each entry's
// command, and the first error.
func (l *Ledger) addEntries(stream string, maxLen int64, n int, fields func(i int) ([]any, error)) ([]*goredis.StringCmd, error) {
	ctx, cancel := l.ctx()
	defer cancel()
	pipe := l.rdb.Pipeline()
	cmds := make([]*goredis.StringCmd, n)
	for i := range n {
		v, err := fields(i)
		if err != nil {
			return nil, err
		}
		cmds[i] = pipe.XAdd(ctx, &goredis.XAddArgs{Stream: stream, MaxLen: maxLen, Approx: maxLen > 0, Values: v})
	}
	_, err := pipe.Exec(ctx)
	return cmds, err
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
