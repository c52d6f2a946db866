package redis

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"drover/clock"
	"drover/coord/ledger"
)

// waitCalls sums the WAIT commands the cluster's masters have run.
func waitCalls(t *testing.T) int {
	t.Helper()
	return commandCalls(t, "wait")
}

// commandCalls sums the calls of command cmd the cluster's masters have run.
func commandCalls(t *testing.T, cmd string) int {
	t.Helper()
	sum := 0
	for _, i := range cluster.Masters() {
		out, err := cluster.Cli(i, "info", "commandstats")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls="); ok {
				n, _ := strconv.Atoi(v[:strings.IndexByte(v, ',')])
				sum += n
			}
		}
	}
	return sum
}

// With WaitReplicas 1 every batch waits for the shards' replicas (one
// each here) and is answered as usual; asking for more replicas than a
// shard has, the master does the transition but the ledger answers
// "unavailable" and sends Done again later, as it would for a shard whose
// replica is down.
func TestWaitReplicas(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	open := func(wait int) *Ledger {
		l, err := newLedger(ctx, rdb, Config{Ledger: ledger.Config{DoneTTL: time.Hour}, Prefix: "wait" + strconv.FormatInt(prefixes.Add(1), 10),
			WaitReplicas: wait, WaitTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	var items []ledger.Item
	for i := range 30 {
		items = append(items, webKey(i)) // over several hosts, so several shards
	}
	now := time.Now()
	before := waitCalls(t)
	l := open(1)
	for i, r := range l.RequestBatch(now, 1, 1, items, nil) {
		if r.Verdict != ledger.OK {
			t.Fatalf("item %d with one replica wanted: %v %v (%v); want ok", i, r.Verdict, r.Reason, l.Err())
		}
	}
	if after := waitCalls(t); after <= before {
		t.Fatalf("WAIT calls on the masters: %d before the batch, %d after; want more", before, after)
	}
	l.DoneBatch(now, items, ledger.DoneOK)
	if l.Pending() != 0 || l.Err() != nil {
		t.Fatalf("done with one replica wanted: %d calls pending, error %v; want none", l.Pending(), l.Err())
	}
	// a batch of keys all done already changes nothing: no WAIT for it
	dupWaits := waitCalls(t)
	for i, r := range l.RequestBatch(now, 2, 2, items, nil) {
		if r.Verdict != ledger.No || r.Reason != ledger.ReasonDone {
			t.Fatalf("item %d asked again: %v %v; want no, done", i, r.Verdict, r.Reason)
		}
	}
	if after := waitCalls(t); after != dupWaits {
		t.Fatalf("an all-duplicate batch over %d hosts ran %d WAITs; want none (it changed nothing)", len(items), after-dupWaits)
	}

	l2 := open(2) // each master has one replica
	res := l2.RequestBatch(now, 1, 1, items[:5], nil)
	for i, r := range res {
		if r.Verdict != ledger.Error || r.Reason != ReasonUnavailable {
			t.Fatalf("item %d with two replicas wanted of one: %v %v; want error unavailable", i, r.Verdict, r.Reason)
		}
	}
	if err := l2.Err(); err == nil || !strings.Contains(err.Error(), "WAIT") {
		t.Fatalf("the ledger's error: %v; want one naming WAIT", err)
	}
	// the master did it: the key is requested by the session, which a
	// retry finds (ok, owner) and Release lets go of; the shard is now
	// known to lack the replicas, so these calls are refused without
	// another WAIT (a coordinator's loop must not stall on each), and
	// a ROLE tells when the window has passed
	waits := waitCalls(t)
	if rec, ok := l2.LookupKey(now, items[0].Key, items[0].FP); !ok || rec.State != ledger.Requested || rec.Owner != 1 {
		t.Fatalf("the first key on the master: %+v %v; want requested by session 1", rec, ok)
	}
	l2.Release(now, 1)
	if rec, ok := l2.LookupKey(now, items[0].Key, items[0].FP); ok {
		t.Fatalf("after Release: %+v; want no record", rec)
	}
	if l2.Pending() == 0 {
		t.Fatalf("Release unconfirmed by the replicas: nothing pending; want it sent again")
	}
	if after := waitCalls(t); after != waits {
		t.Fatalf("WAIT calls after the shard was found without its replicas: %d more; want none", after-waits)
	}
	// a tick that sweeps the done hosts and finds nothing expired changes
	// nothing: no WAIT for it
	waits = waitCalls(t)
	calls := commandCalls(t, "fcall")
	l.Tick(now)
	if commandCalls(t, "fcall") == calls {
		t.Fatalf("the tick ran no script on the done hosts; want their sweep")
	}
	if after := waitCalls(t); after != waits || l.Err() != nil {
		t.Fatalf("a tick with nothing due: %d WAITs, error %v; want none", after-waits, l.Err())
	}
	// a call sent again (its WAIT was not confirmed) WAITs even when the
	// script finds nothing left to write: its writes may be on the master
	// alone, and a retry that skipped the WAIT would count them confirmed
	host := hostOf(&items[0].Key)
	rel := call{host: host, keys: l.sessKeys(l.baseKeys(host, 3), host, 9), args: append(l.args("release", now, 1), l.owner(9))}
	waits = waitCalls(t)
	l.execRetrying([]call{rel})
	if after := waitCalls(t); after != waits {
		t.Fatalf("a release of a session holding nothing: %d WAITs; want none", after-waits)
	}
	rel.resent = true
	l.execRetrying([]call{rel})
	if after := waitCalls(t); after != waits+1 || l.Err() != nil {
		t.Fatalf("the same release sent again: %d WAITs, error %v; want one", after-waits, l.Err())
	}
	if _, err := newLedger(ctx, rdb, Config{WaitReplicas: 1, WaitTimeout: 5 * time.Second}); err == nil {
		t.Fatalf("WaitTimeout 5s with Timeout 5s: no error; want one")
	}
}

// A master whose replicas did not acknowledge a WAIT is refused at once
// for noReplicaFor on the ledger's clock, then probed (ROLE) before the
// next WAIT: the window is the fake clock's, not the machine's.
func TestNoReplicaWindowOnTheClock(t *testing.T) {
	rdb := client(t)
	clk := clock.NewFake(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	l, err := newLedger(context.Background(), rdb, Config{Prefix: "nr" + strconv.FormatInt(prefixes.Add(1), 10),
		WaitReplicas: 5, WaitTimeout: time.Millisecond, Clock: clk}) // more replicas than any shard has
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	try := func(what, want string) {
		t.Helper()
		errs := l.waitHosts(ctx, []string{"a.test"})
		if err := errs["a.test"]; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %v; want an error saying %q", what, err, want)
		}
	}
	try("the first WAIT", "(WAIT)")
	try("again at once", "no replica acknowledged a WAIT")
	clk.Advance(noReplicaFor - time.Millisecond)
	try("just before the window ends", "no replica acknowledged a WAIT")
	clk.Advance(time.Millisecond)
	try("when it ends", "(ROLE)")
	try("after the probe failed", "no replica acknowledged a WAIT")
}
