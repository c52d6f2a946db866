package broker

import (
	"testing"
	"time"

	"drover/admin"
)

// A back-off another coordinator set (HoldHost) holds the host's queued
// jobs here until its end, as a throttle here would, without being
// handed back (TakeBackoffs); a throttle here then continues from its
// level, and that back-off is handed over. A later end stands; a host
// with no record is left alone.
func TestHoldHost(t *testing.T) {
	b, err := New(Config{Jitter: -1, RetryJitter: -1, BackoffStart: time.Minute, BackoffCap: time.Hour, BackoffForgive: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	now := epoch
	if err := b.Register(now, 1, WorkerInfo{ID: "w"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"a", "a", "a", "b"} {
		b.Submit(now, Spec{Host: h})
	}
	if as := b.Dispatch(now, nil); len(as) != 1 || as[0].Job != 1 {
		t.Fatalf("dispatch %v; want job 1 (host a)", as)
	}
	end := now.Add(2 * time.Minute)
	b.HoldHost(now, HostBackoff{Host: "a", Until: end, Level: 3, Forgiven: end.Add(time.Hour)})
	b.HoldHost(now, HostBackoff{Host: "nobody", Until: end, Level: 3})
	var tt admin.Totals
	b.Totals(&tt)
	if tt.Backoff != 2 || tt.Queued != 1 {
		t.Fatalf("after another coordinator's back-off of a: backoff %d queued %d; want 2 and 1 (host b's job)", tt.Backoff, tt.Queued)
	}
	if j := b.jobs.get(2); b.retryTime(j) != end {
		t.Fatalf("job 2 waits until %v; want the back-off's end %v", b.retryTime(j), end)
	}
	if bos := b.TakeBackoffs(nil); len(bos) != 0 {
		t.Fatalf("a back-off learned from another coordinator handed back: %+v", bos)
	}
	if _, ok := b.hosts["nobody"]; ok {
		t.Fatal("a back-off of an unknown host made a record of it")
	}
	// An earlier end does not shorten it.
	b.HoldHost(now, HostBackoff{Host: "a", Until: now.Add(time.Minute), Level: 1})
	if j := b.jobs.get(2); b.retryTime(j) != end {
		t.Fatalf("an earlier end moved job 2 to %v; want %v", b.retryTime(j), end)
	}
	// A throttle here is level 4: 8 minutes, handed over.
	if err := result(b, now, 1, 1, Outcome{Kind: Throttled}); err != nil {
		t.Fatal(err)
	}
	bos := b.TakeBackoffs(nil)
	want := now.Add(8 * time.Minute)
	if len(bos) != 1 || bos[0].Host != "a" || bos[0].Level != 4 || !bos[0].Until.Equal(want) || !bos[0].Forgiven.Equal(want.Add(2*time.Hour)) {
		t.Fatalf("the throttle handed over %+v; want host a at level 4 until %v, forgiven 2h later", bos, want)
	}
	// The end frees them.
	b.Tick(want)
	b.Totals(&tt)
	if tt.Backoff != 0 || tt.Queued != 4 {
		t.Fatalf("after the end: backoff %d queued %d; want 0 and 4 (the throttled job too)", tt.Backoff, tt.Queued)
	}
}

// A back-off whose end is not after now (learnt late, or from a clock
// behind) holds nothing and returns: it once put the host's queued jobs
// back in their lane for ever.
func TestHoldHostEnded(t *testing.T) {
	b, err := New(Config{Jitter: -1, RetryJitter: -1, BackoffStart: time.Minute, BackoffCap: time.Hour, BackoffForgive: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	b.Submit(epoch, Spec{Host: "a"})
	done := make(chan struct{})
	go func() {
		b.HoldHost(epoch.Add(time.Second), HostBackoff{Host: "a", Until: epoch, Level: 1})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("HoldHost of an ended back-off did not return")
	}
	var tt admin.Totals
	b.Totals(&tt)
	if tt.Queued != 1 || tt.Backoff != 0 {
		t.Fatalf("queued %d backoff %d; want the job still queued", tt.Queued, tt.Backoff)
	}
}

// A back-off another coordinator set keeps the host's level until its
// Forgiven time, though this broker's own quiet period (BackoffForgive)
// after the end is shorter: a throttle here after that period continues
// from the level. It once reset the level at the end plus BackoffForgive.
func TestHoldHostForgiven(t *testing.T) {
	b := oneWorker(t, 0)
	b.cfg.BackoffForgive = 10 * time.Minute
	now := epoch
	for range 2 {
		b.Submit(now, Spec{Host: "a"})
	}
	end := now.Add(time.Minute)
	b.HoldHost(now, HostBackoff{Host: "a", Until: end, Level: 3, Forgiven: end.Add(time.Hour)})
	later := end.Add(30 * time.Minute) // past end + BackoffForgive, before Forgiven
	b.Tick(later)
	if as := b.Dispatch(later, nil); len(as) != 1 {
		t.Fatalf("dispatch after the back-off: %v; want one job", as)
	}
	if err := result(b, later, 1, 1, Outcome{Kind: Throttled}); err != nil {
		t.Fatal(err)
	}
	if bos := b.TakeBackoffs(nil); len(bos) != 1 || bos[0].Level != 4 {
		t.Fatalf("a throttle 30 minutes after the end handed over %+v; want level 4 (forgiven only an hour after the end)", bos)
	}
}
