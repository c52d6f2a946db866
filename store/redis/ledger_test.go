package redis

import (
	"strings"
	"testing"
	"time"

	"drover/coord/id"
	"drover/coord/ledger"
)

// The ledger's function library is loaded where a call finds it missing:
// after FUNCTION FLUSH on every master (as after a restart without
// persistence, or on a new node) the next calls load it again and answer
// as before.
func TestFunctionLibraryLoadedAgain(t *testing.T) {
	rdb := client(t)
	l, err := newTestLedger(t, rdb, ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var items []ledger.Item
	for i := range 12 {
		items = append(items, webKey(i)) // over several hosts, so several shards
	}
	for _, r := range l.RequestBatch(base, 1, 1, items[:6], nil) {
		if r.Verdict != ledger.OK {
			t.Fatalf("first batch: %+v (err %v); want ok", r, l.Err())
		}
	}
	for _, i := range cluster.Masters() {
		if out, err := cluster.Cli(i, "function", "flush", "sync"); err != nil {
			t.Fatalf("FUNCTION FLUSH: %v %s", err, out)
		}
		if out, _ := cluster.Cli(i, "function", "list"); strings.Contains(out, ledgerFn) {
			t.Fatalf("FUNCTION LIST after FUNCTION FLUSH names %s; want nothing", ledgerFn)
		}
	}
	got := l.RequestBatch(base, 2, 2, items, nil)
	for i, r := range got {
		want := ledger.Result{Verdict: ledger.OK}
		if i < 6 {
			want = ledger.Result{Verdict: ledger.Wait, Reason: ledger.ReasonRequested}
		}
		if r != want {
			t.Fatalf("after FUNCTION FLUSH, key %d: %+v (err %v); want %+v", i, r, l.Err(), want)
		}
	}
	if rec, ok := l.LookupKey(base, items[0].Key, items[0].FP); !ok || rec.Owner != 1 || rec.Waiters != 1 {
		t.Fatalf("LookupKey after FUNCTION FLUSH: %+v %v; want held by 1 with one waiter", rec, ok)
	}
	loaded := 0
	for _, i := range cluster.Masters() {
		if out, _ := cluster.Cli(i, "function", "list", "libraryname", ledgerFn); strings.Contains(out, ledgerFn) {
			loaded++
		}
	}
	if loaded == 0 {
		t.Fatalf("no master lists %s after the calls; want it loaded again", ledgerFn)
	}
}

// While the host's next lease deadline, as the last call reported it, is
// ahead of a call's time, the call skips the lease-expiry check (no
// ZRANGE of the lease order); once it has passed, the check runs and the
// lease expires as before.
func TestLeaseCheckSkippedWhileAhead(t *testing.T) {
	rdb := client(t)
	l, err := newTestLedger(t, rdb, ledger.Config{RequestTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	k := func(label string) ledger.Item {
		x := key(label)
		return ledger.Item{Key: x, FP: x.Fingerprint()}
	}
	l.RequestBatch(base, 1, 1, []ledger.Item{k("a")}, nil)
	if at, ok := l.NextDeadline(); !ok || !at.Equal(base.Add(time.Minute)) {
		t.Fatalf("next deadline %v %v; want %v", at, ok, base.Add(time.Minute))
	}
	zr := commandCalls(t, "zrange")
	got := l.RequestBatch(base.Add(time.Second), 1, 2, []ledger.Item{k("b"), k("c")}, nil)
	if n := commandCalls(t, "zrange") - zr; n != 0 {
		t.Fatalf("a request with the host's deadline ahead ran ZRANGE %d times; want none", n)
	}
	if got[0].Verdict != ledger.OK || got[1].Verdict != ledger.OK {
		t.Fatalf("requests: %+v (err %v); want ok", got, l.Err())
	}
	if at, ok := l.NextDeadline(); !ok || !at.Equal(base.Add(time.Minute)) {
		t.Fatalf("next deadline after the skip %v %v; want %v still", at, ok, base.Add(time.Minute))
	}
	// past the deadline: "a" expires, and session 2 gets it
	now := base.Add(time.Minute + time.Millisecond)
	if v, r := l.Request(now, 2, 3, k("a").Key, k("a").FP); v != ledger.OK {
		t.Fatalf("request of the expired key: %v %v (err %v); want ok", v, r, l.Err())
	}
	var expired []id.Fingerprint
	for _, e := range l.TakeEvents(nil) {
		if e.Kind == ledger.EventExpired {
			expired = append(expired, e.FP)
		}
	}
	if len(expired) != 1 || expired[0] != k("a").FP {
		t.Fatalf("expired %v; want only a's lease", expired)
	}
	if at, ok := l.NextDeadline(); !ok || !at.Equal(base.Add(time.Minute+time.Second)) {
		t.Fatalf("next deadline after the expiry %v %v; want b's, %v", at, ok, base.Add(time.Minute+time.Second))
	}
}
