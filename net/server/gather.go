package server

import "time"

// gatherer decides when the reactor lets messages gather before a step
// (Options.Gather), trading a little of its idle time for fewer steps and
// wake-ups. It gathers only when all of these hold:
//
//   - a trickle under load: a message rang less than below after the
//     reactor began to wait, and the step before took less than a
//     gathering. Longer steps already handle many messages each (the
//     reactor is the bottleneck: no-op jobs, a flood of submits), and
//     sleeping would only slow it down;
//   - the machine is busy. A sleep shorter than a millisecond is precise
//     only while the Go scheduler has other goroutines to run: on an idle
//     machine it lasts a millisecond or more (the runtime's poller waits
//     in whole milliseconds), and there the workers wait for the reactor.
//     Two gatherings in a row that overslept (twice as long as asked and
//     a millisecond longer at least; a busy machine runs a timer that
//     late now and then, but not twice in a row) suspend gathering: for
//     minSuspend, doubled each time the first gathering after a
//     suspension oversleeps too, up to maxSuspend.
type gatherer struct {
	gather, below time.Duration

	ready    time.Time     // when the current step began (after any gathering)
	lastStep time.Duration // how long the step before the last wait took

	suspendUntil time.Time
	suspend      time.Duration // the last suspension's length; 0: none yet
	inARow       int           // gatherings in a row that overslept

	gathered, overslept uint64 // counts (ReactorStats; tests)
}

const (
	minSuspend = 100 * time.Millisecond
	maxSuspend = 2 * time.Second
	// oversleep is how much longer than asked a gathering must last (and
	// at least twice as long) to count as overslept: the runtime's poller
	// rounds up to a millisecond.
	oversleep = time.Millisecond
)

// woke is called when the reactor's wait, begun at from, ended at now,
// because a message rang (byMessage) or for another reason. It gathers
// if it should, and reports whether it did.
func (g *gatherer) woke(from, now time.Time, byMessage bool) bool {
	if !g.ready.IsZero() {
		g.lastStep = from.Sub(g.ready)
	}
	gathered := byMessage && g.want(now, now.Sub(from))
	if gathered {
		g.gathered++
		time.Sleep(g.gather)
		end := time.Now()
		g.slept(end, end.Sub(now))
		now = end
	}
	g.ready = now
	return gathered
}

// want reports whether to gather at now, woken after waiting waited.
func (g *gatherer) want(now time.Time, waited time.Duration) bool {
	return g.gather > 0 && waited < g.below && g.lastStep < g.gather && !now.Before(g.suspendUntil)
}

// slept records a gathering that lasted d and ended at now.
func (g *gatherer) slept(now time.Time, d time.Duration) {
	if d < max(2*g.gather, g.gather+oversleep) {
		g.inARow, g.suspend = 0, 0
		return
	}
	g.overslept++
	g.inARow++
	if g.inARow < 2 {
		return // a busy machine runs a timer late now and then
	}
	g.suspend = min(max(2*g.suspend, minSuspend), maxSuspend)
	g.suspendUntil = now.Add(g.suspend)
}
