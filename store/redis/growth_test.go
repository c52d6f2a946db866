package redis

import (
	"context"
	"testing"
	"time"

	"drover/coord/ledger"
)

// Done records do not pile up: each carries an EXPIRE (its TTL plus the
// slack) from the moment it is written, and the sweep deletes it, with its
// FIFO entry, once the TTL has passed; afterwards no key of the host is
// left but its counters.
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
	l.DoneBatch(now, items, ledger.DoneOK)
	p := l.pre("one.example")
	ttl, err := rdb.TTL(ctx, p+"wk:"+items[0].FP.String()).Result()
	if err != nil || ttl <= time.Minute || ttl > time.Minute+l.cfg.Slack {
		t.Fatalf("a done record's TTL in Redis = %v, %v; want its TTL plus up to the slack", ttl, err)
	}
	if c := l.Counts(); c.Done != n {
		t.Fatalf("done = %d; want %d", c.Done, n)
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
	left := 0
	for _, it := range items {
		left += int(rdb.Exists(ctx, p+"wk:"+it.FP.String()).Val())
	}
	if q := rdb.LLen(ctx, p+"dq:0").Val(); left != 0 || q != 0 {
		t.Fatalf("after the sweep: %d records and %d FIFO entries left; want none", left, q)
	}
}
