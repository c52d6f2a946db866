package redis

import (
	"testing"
	"time"

	"drover/coord/broker"
	"drover/coord/ledger"
)

// A back-off one coordinator's throttle set holds the host for the
// others: their claims take none of its jobs until its end and tell them
// of it (level included), a coordinator holding jobs of the host learns it
// at its next Tick, and after the end the jobs are claimed again.
func TestBackoffAcrossCoordinators(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	a, b := ls[0].Jobs(), ls[1].Jobs()
	for i := range 4 {
		if _, err := a.Push(time.Now(), politeJob("fetch", i)); err != nil {
			t.Fatal(err)
		}
	}
	held, err := b.Claim(time.Now(), 1)
	if err != nil || len(held) != 1 {
		t.Fatalf("b's first claim: %d jobs, %v; want 1", len(held), err)
	}
	host := held[0].Host
	const d = 3 * time.Second
	start := time.Now()
	a.BackOff(start, []broker.HostBackoff{{Host: host, Until: start.Add(d), Level: 2, Forgiven: start.Add(time.Minute)}})
	if err := ls[0].Err(); err != nil {
		t.Fatal(err)
	}
	// b holds a job of the host: its next Tick learns of the back-off.
	ls[1].Tick(time.Now())
	learned := b.Backoffs(nil)
	if len(learned) != 1 || learned[0].Host != host || learned[0].Level != 2 {
		t.Fatalf("b learned %+v at its Tick; want %s's back-off at level 2", learned, host)
	}
	if end := learned[0].Until; end.Before(start.Add(d-time.Second)) || end.After(time.Now().Add(d)) {
		t.Fatalf("b learned an end %v after the back-off was set; want about %v", end.Sub(start), d)
	}
	got, err := b.Claim(time.Now(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < d && len(got) != 0 {
		t.Fatalf("b claimed %d jobs of the host in back-off; want 0", len(got))
	}
	if again := b.Backoffs(nil); len(got) == 0 && len(again) != 1 {
		t.Fatalf("b's claim in the back-off told of %d back-offs; want 1", len(again))
	}
	if own, _ := a.Claim(time.Now(), 10); time.Since(start) < d && len(own) != 0 {
		t.Fatalf("a claimed %d jobs of the host it backed off; want 0", len(own))
	}
	if mine := a.Backoffs(nil); len(mine) != 0 {
		t.Fatalf("a learned its own back-off back: %+v; want nothing", mine)
	}
	if len(got) == 0 {
		claimSome(t, b, 10)
	}
	if took := time.Since(start); took < d {
		t.Fatalf("the host's jobs were claimed %v after a back-off of %v; want at least that", took, d)
	}
}

// A host's back-off end set far ahead (as by a master whose clock was
// ahead of the one that took over) holds its jobs at most the back-off's
// length: a claim tells of an end within it, and the jobs are claimed
// after it, not an hour later.
func TestBackoffClampedToItsLength(t *testing.T) {
	ls := peers(t, client(t), 2, ledger.Config{})
	a, b := ls[0].Jobs(), ls[1].Jobs()
	job := politeJob("fetch", 0)
	if _, err := a.Push(time.Now(), job); err != nil {
		t.Fatal(err)
	}
	const d = 2 * time.Second
	start := time.Now()
	a.BackOff(start, []broker.HostBackoff{{Host: job.Host, Until: start.Add(d), Level: 1, Forgiven: start.Add(d)}})
	if err := ls[0].Err(); err != nil {
		t.Fatal(err)
	}
	ctx, rdb := t.Context(), ls[0].rdb
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	pol := ls[0].pre(job.Host) + "pol"
	if err := rdb.HSet(ctx, pol, "bu", now.Add(time.Hour).UnixMicro(), "ku", now.Add(2*time.Hour).UnixMicro()).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := b.Claim(time.Now(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 {
		learned := b.Backoffs(nil)
		if len(learned) != 1 || learned[0].Until.After(time.Now().Add(d)) {
			t.Fatalf("a claim in a back-off whose end was moved an hour ahead told of %+v; want an end within its %v", learned, d)
		}
		claimSome(t, b, 10) // within a minute, not an hour
	}
}

// A claim of one job takes one while a host backed off is among those it
// picks: the hosts it did not ask are asked when the first gives nothing,
// and the hosts picked are asked in a random order (it asked only the
// first, and with a few ready hosts Redis gives them in one order: while
// the first backed off, every claim came back empty).
func TestClaimPastBackedOffHost(t *testing.T) {
	ls := peers(t, client(t), 1, ledger.Config{})
	l, q := ls[0], ls[0].Jobs()
	const n = 5
	for i := range n {
		for _, sp := range []broker.Spec{jobSpec(i * 10), politeJob("exec", i)} { // h0.example, polite.example
			if _, err := q.Push(time.Now(), sp); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The host Redis gives first backs off.
	ready, err := l.rdb.SRandMemberN(t.Context(), l.readyKey(), 8).Result()
	if err != nil || len(ready) != 2 {
		t.Fatalf("ready hosts %v, %v; want the two", ready, err)
	}
	slow, other := ready[0], ready[1]
	q.BackOff(time.Now(), []broker.HostBackoff{{Host: slow, Until: time.Now().Add(time.Hour), Level: 1, Forgiven: time.Now().Add(2 * time.Hour)}})
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		got, err := q.Claim(time.Now(), 1)
		if err != nil || len(got) != 1 || got[0].Host != other {
			t.Fatalf("claim %d of one job: %v, %v; want one of %s (%s backs off)", i, got, err, other, slow)
		}
	}
}
