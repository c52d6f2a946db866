package redis

import (
	"context"
	"testing"
	"time"

	"drover/coord/ledger"
)

// Done records do not pile up: the sweep deletes each, with its FIFO
// entry, once its TTL has passed, and while a host holds only done records
// its keys carry an EXPIRE (the longest TTL plus the slack), so Redis drops
// them even if no sweep ever comes; a live record there lifts it (once,
// not at every change while the host is live). After the
// sweep no key of the host is left but its counters.
func TestDoneRecordsDoNotAccumulate(t *testing.T) {
	rdb := client(t)
	l, err := newTestLedger(t, rdb, ledger.Config{DoneTTL: time.Minute, FailedTTL: time.Minute, SweepLimit: 100})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const n = 1000
	var items []ledger.Item
	for i := range n {
		it := webKey(i)
		it.Key.URL = "http://one.example/" + it.Key.URL[len("http://"):]
		it.FP = it.Key.Fingerprint()
		items = append(items, it)
	}
	now := time.Now()
	p := l.pre("one.example")
	ttl := func() time.Duration {
		t.Helper()
		d, err := rdb.TTL(ctx, p+"k").Result()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	l.DoneBatch(now, items[:n-1], ledger.DoneOK)
	if d := ttl(); d <= time.Minute || d > time.Minute+l.cfg.Slack {
		t.Fatalf("the records of a host with only done keys: TTL %v; want the TTL plus up to the slack", d)
	}
	if r, _ := l.Request(now, 1, 1, items[n-1].Key, items[n-1].FP); r != ledger.OK {
		t.Fatalf("request: %v (%v)", r, l.Err())
	}
	if d := ttl(); d != -1 {
		t.Fatalf("the records of a host with a requested key: TTL %v; want none (-1)", d)
	}
	// the host is live already: another request lifts no TTL again
	persists := commandCalls(t, "persist")
	extra := webKey(n)
	extra.Key.URL = "http://one.example/extra"
	extra.FP = extra.Key.Fingerprint()
	if r, _ := l.Request(now, 1, 2, extra.Key, extra.FP); r != ledger.OK {
		t.Fatalf("request: %v (%v)", r, l.Err())
	}
	if p := commandCalls(t, "persist"); p != persists {
		t.Fatalf("a request on a host with a live record already: %d PERSISTs; want none", p-persists)
	}
	l.Release(now, 1)
	if r, _ := l.Request(now, 1, 3, items[n-1].Key, items[n-1].FP); r != ledger.OK {
		t.Fatalf("request again: %v (%v)", r, l.Err())
	}
	l.DoneBatch(now, items[n-1:], ledger.DoneOK)
	if d := ttl(); d <= time.Minute {
		t.Fatalf("done again: TTL %v; want the TTL plus up to the slack", d)
	}
	if c := l.Counts(); c.Done != n {
		t.Fatalf("done = %d; want %d", c.Done, n)
	}
	if h := rdb.HLen(ctx, p+"k").Val(); h != n {
		t.Fatalf("the host's record hash has %d fields; want %d", h, n)
	}
	later := now.Add(time.Minute + time.Second)
	for i := 0; l.Counts().Done > 0; i++ {
		if i > n/100+2 {
			t.Fatalf("done = %d after %d ticks of 100; want 0", l.Counts().Done, i)
		}
		l.Tick(later)
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	left := rdb.HLen(ctx, p+"k").Val()
	if q := rdb.LLen(ctx, p+"dq:0").Val(); left != 0 || q != 0 {
		t.Fatalf("after the sweep: %d records and %d FIFO entries left; want none", left, q)
	}
}
