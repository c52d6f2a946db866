package redis

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"drover/coord/id"
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
	// the TTL of the host's record buckets, which all carry the same
	ttl := func() time.Duration {
		t.Helper()
		var ttl time.Duration
		for i, k := range recordBuckets(t, rdb, p) {
			d, err := rdb.TTL(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if i > 0 && (d < 0) != (ttl < 0) {
				t.Fatalf("record bucket %s: TTL %v; want as bucket 0's, %v", k, d, ttl)
			}
			ttl = d
		}
		return ttl
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
	if h := recordCount(t, rdb, p); h != n {
		t.Fatalf("the host's record buckets have %d fields; want %d", h, n)
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
	left := recordCount(t, rdb, p)
	if q := rdb.LLen(ctx, p+"dq:0").Val(); left != 0 || q != 0 {
		t.Fatalf("after the sweep: %d records and %d FIFO entries left; want none", left, q)
	}
}

// recordBuckets names the record buckets of the host whose keys start
// with p.
func recordBuckets(t *testing.T, rdb goredis.UniversalClient, p string) []string {
	t.Helper()
	n := 1
	if v, err := rdb.HGet(context.Background(), p+"n", "kb").Int(); err == nil {
		n = v
	} else if err != goredis.Nil {
		t.Fatal(err)
	}
	keys := []string{p + "k"}
	for b := 1; b < n; b++ {
		keys = append(keys, p+"k:"+strconv.Itoa(b))
	}
	return keys
}

// recordCount is the number of records of the host whose keys start with
// p.
func recordCount(t *testing.T, rdb goredis.UniversalClient, p string) int64 {
	t.Helper()
	var n int64
	for _, k := range recordBuckets(t, rdb, p) {
		n += rdb.HLen(context.Background(), k).Val()
	}
	return n
}

// A big host's records are spread over buckets that each stay a listpack
// (at most 512 fields), split one at a time as the host grows; every
// record stays where the ledger finds it, through requests, queueing and
// done.
func TestBigHostBucketsStayListpacks(t *testing.T) {
	rdb := client(t)
	l, err := newTestLedger(t, rdb, ledger.Config{DoneTTL: time.Hour, FailedTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const n = 5000
	var items []ledger.Item
	for i := range n {
		k := id.Key{Crawler: "c", Processor: "p", URL: fmt.Sprintf("http://big.example/%d", i)}
		items = append(items, ledger.Item{Key: k, FP: k.Fingerprint()})
	}
	now := time.Now()
	for i := 0; i < n; i += 1000 {
		for j, r := range l.RequestBatch(now, 1, uint64(i+1), items[i:i+1000], nil) {
			if r.Verdict != ledger.OK {
				t.Fatalf("request %d: %+v (err %v); want ok", i+j, r, l.Err())
			}
		}
	}
	fps := make([]id.Fingerprint, 0, n/2)
	for _, it := range items[:n/2] {
		fps = append(fps, it.FP)
	}
	for j, r := range l.QueueBatch(now, 1, fps, nil) {
		if r.Verdict != ledger.OK {
			t.Fatalf("queue %d: %+v (err %v); want ok", j, r, l.Err())
		}
	}
	l.DoneBatch(now, items[:n/4], ledger.DoneOK)
	p := l.pre("big.example")
	buckets := recordBuckets(t, rdb, p)
	if len(buckets) < n/512 {
		t.Fatalf("%d record buckets for %d records; want at least %d", len(buckets), n, n/512)
	}
	for _, k := range buckets {
		if h := rdb.HLen(ctx, k).Val(); h == 0 || h > 512 {
			t.Fatalf("record bucket %s has %d fields; want 1 to 512", k, h)
		}
		if enc := rdb.ObjectEncoding(ctx, k).Val(); enc != "listpack" {
			t.Fatalf("record bucket %s is a %s; want a listpack", k, enc)
		}
	}
	if c := recordCount(t, rdb, p); c != n {
		t.Fatalf("%d records in the buckets; want %d", c, n)
	}
	for i := 0; i < n; i += 7 { // a sample: one round trip each
		it := items[i]
		want := ledger.Requested
		switch {
		case i < n/4:
			want = ledger.Done
		case i < n/2:
			want = ledger.Queued
		}
		if rec, ok := l.LookupKey(now, it.Key, it.FP); !ok || rec.State != want {
			t.Fatalf("key %d: %+v %v; want %v", i, rec, ok, want)
		}
	}
	if c := l.Counts(); c.Done != n/4 || c.Queued != n/4 || c.Requested != n/2 {
		t.Fatalf("counts %+v; want %d done, %d queued, %d requested", c, n/4, n/4, n/2)
	}
}
