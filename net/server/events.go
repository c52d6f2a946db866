package server

import (
	"strings"
	"sync/atomic"

	"github.com/pebbe/zmq4"

	"drover/admin"
	"drover/net/wire"
)

// events is the Server's events part: the PUB socket (an XPUB, so that
// subscriptions are seen), the topic prefixes its subscribers asked for,
// and every event out (emit): shared with the cluster's, given its
// result's cursor, held with the step's batch when there is a store, and
// published there and to Options.OnEvent. The reactor goroutine owns it;
// only published is read elsewhere.
type events struct {
	pub  *zmq4.Socket    // nil when Options.Events is "-"
	ep   string          // the bound endpoint, the OS's port filled in
	subs map[string]bool // topic prefixes the events XPUB has subscribers for
	// published counts events sent on the events socket (atomic: tests
	// read it while the reactor runs).
	published atomic.Uint64

	out     *sender
	onEvent func(admin.Event) // Options.OnEvent
	// keyEvents tells the coordinator whether anyone takes key events
	// (coord.Coordinator.PublishKeyEvents).
	keyEvents func(on bool)
	// What emit uses, given by New: the cluster part (its shared
	// events), the results (their cursors; nil without Options.Results)
	// and the store I/O (nil without a store).
	cl  *cluster
	res *resultLog
	dur *durable
}

// emit hands events to the cluster's events and publishes them, each
// job.done or job.failed with its result's cursor (noted: they have it
// already); with a store, they wait for the step's batch.
func (e *events) emit(evs []admin.Event, noted bool) {
	e.cl.shareEvents(evs, noted) // clusterevents.go
	for i := range evs {
		if !e.wanted(evs[i].Kind) {
			continue // nobody wants it
		}
		if !noted {
			e.res.noteCursor(&evs[i]) // results.go
		}
		if ev := &evs[i]; !e.dur.hold(held{kind: heldEvent, ev: new(*ev)}) {
			e.publish(ev)
		}
	}
}

// subscribed reports whether some subscriber wants events of this kind.
func (e *events) subscribed(kind string) bool {
	for prefix := range e.subs {
		if strings.HasPrefix(kind, prefix) {
			return true
		}
	}
	return false
}

// wanted reports whether anyone takes events of this kind: a subscriber
// or OnEvent.
func (e *events) wanted(kind admin.EventKind) bool {
	return e.onEvent != nil || e.pub != nil && e.subscribed(string(kind))
}

// publish sends ev on the events socket (if anyone subscribed to its kind)
// and hands it to OnEvent.
func (e *events) publish(ev *admin.Event) {
	if e.pub != nil && e.subscribed(string(ev.Kind)) {
		if frames, err := wire.EncodeEvent(*ev); err == nil {
			e.published.Add(1)                   // first: a test may read it as soon as the event arrives
			e.out.sendFrames(e.pub, nil, frames) // best effort: PUB drops for slow subscribers
		}
	}
	if e.onEvent != nil {
		e.onEvent(*ev)
	}
}

// onSubscription handles what the events XPUB passes up: a frame per
// topic prefix that gained its first subscriber (1, prefix) or lost its
// last (0, prefix). Events nobody subscribes to are not encoded at all.
func (e *events) onSubscription(frames [][]byte, _ string) {
	if len(frames) != 1 || len(frames[0]) == 0 {
		return
	}
	msg := frames[0]
	switch prefix := string(msg[1:]); msg[0] {
	case 1:
		e.subs[prefix] = true
	case 0:
		delete(e.subs, prefix)
	}
	e.tellKeyEvents()
}

// tellKeyEvents tells the coordinator whether anyone takes key events
// (the OnEvent hook, or a subscription that may match a key.* kind): a
// REQUEST of 1,000 keys nobody watches then builds no 1,000 events.
func (e *events) tellKeyEvents() {
	on := e.onEvent != nil
	for prefix := range e.subs {
		on = on || strings.HasPrefix(prefix, admin.KeyTopic) || strings.HasPrefix(admin.KeyTopic, prefix)
	}
	e.keyEvents(on)
}
