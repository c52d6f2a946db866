package server

import (
	"fmt"
	"testing"
	"time"

	"drover/coord/id"
	"drover/net/wire"
)

// paceRequests sends n REQUESTs for distinct keys, every gap, over a real
// socket, then reads the n answers: each must come, for its own request.
func paceRequests(t *testing.T, s *Server, n int, gap time.Duration) {
	t.Helper()
	p := dial(t, s.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p", 0)
	for i := range n {
		p.send(&wire.Request{Req: uint64(10 + i), Keys: []id.Key{key(fmt.Sprintf("http://a.test/%d", i))}})
		time.Sleep(gap) // paces the load; nothing waits on it
	}
	seen := map[uint64]bool{}
	for range n {
		vs := expect[*wire.Verdicts](t, p.recv())
		if vs.Req < 10 || vs.Req >= uint64(10+n) || seen[vs.Req] || len(vs.Items) != 1 || vs.Items[0].Verdict != wire.VerdictOK {
			t.Fatalf("answer %+v: want one yes to a request not yet answered (10..%d)", vs, 10+n-1)
		}
		seen[vs.Req] = true
	}
}

// tries runs a measurement on the wall clock up to n times and fails the
// test only if it misses its bound every time: a loaded machine may stall
// the reactor (more messages in a step) or oversleep its gatherings (which
// suspends them) in one run, not in n, while gathering that does not work
// misses every time.
func tries(t *testing.T, n int, what string, measure func() (ok bool, why string)) {
	t.Helper()
	var why string
	for i := range n {
		var ok bool
		if ok, why = measure(); ok {
			return
		}
		t.Logf("%s, try %d: %s", what, i+1, why)
	}
	t.Errorf("%s: %s (in each of %d tries)", what, why, n)
}

// gatherSteps serves requests n, gap apart, with gathering for gather, and
// returns the steps the reactor made.
func gatherSteps(t *testing.T, n int, gap, gather time.Duration) uint64 {
	t.Helper()
	// GatherBelow: a 5ms gap counts as load here (1ms by default).
	s, stop := runServer(t, Options{Gather: gather, GatherBelow: time.Second})
	paceRequests(t, s, n, gap)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if r := s.ReactorStats(); r.Steps != s.stats.Steps || r.Messages == 0 || r.Messages > s.stats.Received || r.Gathered > s.r.gather.gathered {
		t.Errorf("ReactorStats %+v, the reactor's own %+v", r, s.stats)
	}
	t.Logf("gather %v: %d steps for %d messages, %d gathered, %d overslept", gather, s.stats.Steps, s.stats.Received, s.r.gather.gathered, s.r.gather.overslept)
	return s.stats.Steps
}

// TestGatherMakesFewerSteps: requests coming every 5ms are handled a few
// per step when the reactor lets them gather for 50ms, and each in a step
// of its own when it does not; every one is answered either way.
func TestGatherMakesFewerSteps(t *testing.T) {
	const n, gap = 60, 5 * time.Millisecond
	tries(t, 3, "without gathering", func() (bool, string) {
		steps := gatherSteps(t, n, gap, 0)
		return steps >= n/2, fmt.Sprintf("%d steps for %d requests 5ms apart, want about one each", steps, n)
	})
	// 60 requests over >= 300ms: about 300ms/50ms gathered steps, plus the
	// HELLO's, the timers' (heartbeats) and the shutdown's. A stall of the
	// machine only puts more requests in a step; gatherings it made
	// oversleep twice in a row suspend gathering for a while.
	tries(t, 3, "gathering for 50ms", func() (bool, string) {
		steps := gatherSteps(t, n, gap, 50*time.Millisecond)
		return steps <= n/3, fmt.Sprintf("%d steps for %d requests 5ms apart, want at most %d", steps, n, n/3)
	})
}

// TestGatherOnlyUnderLoad: requests 5ms apart are not load when the
// threshold is 100µs: each is acted on at once, with no gathering delay.
// (A threshold that small also keeps the steps the timers make from
// counting: a request that happens to come right after one would gather.)
// The threshold is twice the gathering unless set.
func TestGatherOnlyUnderLoad(t *testing.T) {
	const n, gap = 40, 5 * time.Millisecond
	// Gathering would make it about n*5ms/50ms; a stall of the machine
	// may put two in a step now and then.
	tries(t, 3, "a trickle not under load", func() (bool, string) {
		s, stop := runServer(t, Options{Gather: 50 * time.Millisecond, GatherBelow: 100 * time.Microsecond})
		paceRequests(t, s, n, gap)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		return s.stats.Steps >= n/2, fmt.Sprintf("%d steps for %d requests 5ms apart (%d gathered): the reactor gathered messages that were not coming under load", s.stats.Steps, n, s.r.gather.gathered)
	})
	d, _ := runServer(t, Options{Gather: 300 * time.Microsecond})
	if d.r.gather.below != 600*time.Microsecond {
		t.Fatalf("default threshold %v for a 300µs gathering, want 600µs", d.r.gather.below)
	}
}

// TestGathererDecides: when the reactor gathers, and how oversleeping
// gatherings suspend it (the decisions alone, at made-up times).
func TestGathererDecides(t *testing.T) {
	const g = 100 * time.Microsecond
	t0 := time.Unix(1000, 0)
	fresh := func() *gatherer { return &gatherer{gather: g, below: time.Millisecond} }

	for _, tt := range []struct {
		name     string
		waited   time.Duration
		lastStep time.Duration
		want     bool
	}{
		{"a trickle under load", 30 * time.Microsecond, 10 * time.Microsecond, true},
		{"not under load", 2 * time.Millisecond, 10 * time.Microsecond, false},
		{"after a long step", 30 * time.Microsecond, 500 * time.Microsecond, false},
	} {
		gt := fresh()
		gt.lastStep = tt.lastStep
		if got := gt.want(t0, tt.waited); got != tt.want {
			t.Errorf("%s: want() = %v, expected %v", tt.name, got, tt.want)
		}
	}
	if (&gatherer{below: time.Millisecond}).want(t0, 0) {
		t.Error("Gather 0 gathers")
	}

	gt := fresh()
	at := t0
	oversleep := func() { at = at.Add(2 * time.Millisecond); gt.slept(at, 1200*time.Microsecond) }
	precise := func() { at = at.Add(time.Millisecond); gt.slept(at, 130*time.Microsecond) }
	oversleep()
	if !gt.want(at, 0) {
		t.Fatal("one late timer suspended gathering")
	}
	precise()
	oversleep()
	if !gt.want(at, 0) {
		t.Fatal("a late timer after a precise one suspended gathering")
	}
	oversleep()
	if gt.want(at, 0) || gt.want(at.Add(99*time.Millisecond), 0) {
		t.Fatal("two oversleeps in a row did not suspend gathering for 100ms")
	}
	at = at.Add(minSuspend)
	if !gt.want(at, 0) {
		t.Fatal("gathering still suspended after 100ms")
	}
	for _, want := range []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond, maxSuspend, maxSuspend} {
		oversleep()
		if gt.want(at.Add(want-time.Millisecond), 0) || !gt.want(at.Add(want), 0) {
			t.Fatalf("suspension after %d oversleeps in a row: want %v", gt.inARow, want)
		}
		at = at.Add(want)
	}
	precise()
	oversleep()
	if !gt.want(at, 0) {
		t.Fatal("a precise gathering did not end the run of oversleeps")
	}
	if gt.overslept != 10 {
		t.Fatalf("overslept counted %d, want 10", gt.overslept)
	}
}
