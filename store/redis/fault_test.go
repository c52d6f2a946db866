package redis

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"drover/coord/ledger"
	"drover/store/redis/redistest"
)

// A master is SIGKILLed while two coordinators submit the same keys: its
// replica takes over, and at the end every key is held by one session,
// none is lost, and keys accepted twice (a write the master acknowledged
// but had not yet replicated) are at most the batches in flight at the
// fault. Then the old master comes back as a replica.
//
// `make redis-faults` runs it and TestCoordinatorKilled at full size.
func TestMasterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a master of its own cluster and waits for the failover: not in -short")
	}
	cl := redistest.Start(t)
	rdb := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: cl.Addrs(), MaxRedirects: 16})
	t.Cleanup(func() { rdb.Close() })
	ls := make([]*Ledger, 2)
	for i := range ls {
		l, err := newLedger(context.Background(), rdb, Config{Prefix: "f", Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ls[i] = l
	}
	n, batch := faultKeys(4000, 50_000), 100
	items := make([]ledger.Item, n)
	for i := range items {
		items[i] = webKey(i)
	}
	oks := make([][]int, 2) // per coordinator, per key: OK answers
	var progress atomic.Int64
	var errs [2]int
	var wg sync.WaitGroup
	for c := range ls {
		oks[c] = make([]int, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := time.Now().Add(2 * time.Minute)
			for i := 0; i < n; {
				if time.Now().After(deadline) {
					t.Errorf("coordinator %d: batches still failing after 2 minutes: %v", c, ls[c].Err())
					return
				}
				res := ls[c].RequestBatch(time.Now(), 1, uint64(i), items[i:i+batch], nil)
				failed := false
				for j, r := range res {
					switch r.Verdict {
					case ledger.OK:
						// "owner" after a retried batch: the first try's
						// script ran on that host, its answer was lost
						oks[c][i+j] = 1
					case ledger.Error:
						failed = true
					}
				}
				if failed { // the store was failing over: ask again
					errs[c]++
					time.Sleep(100 * time.Millisecond)
					continue
				}
				i += batch
				progress.Add(int64(batch))
			}
		}()
	}
	for progress.Load() < int64(n/2) {
		time.Sleep(10 * time.Millisecond)
	}
	masters := cl.Masters()
	if len(masters) != 3 {
		t.Fatalf("masters %v; want 3", masters)
	}
	victim := masters[0]
	cl.Kill(victim)
	killed := time.Now()
	if err := cl.WaitOK(60 * time.Second); err != nil {
		t.Fatalf("after killing master %d: %v", cl.Ports[victim], err)
	}
	t.Logf("cluster ok again %v after the kill", time.Since(killed).Round(100*time.Millisecond))
	wg.Wait()
	if t.Failed() {
		return
	}
	dups := 0
	for i, it := range items {
		total := oks[0][i] + oks[1][i]
		if total == 0 {
			t.Fatalf("key %d was never accepted", i)
		}
		dups += total - 1
		rec, ok := ls[0].LookupKey(time.Now(), it.Key, it.FP)
		for try := 0; !ok && ls[0].Err() != nil && try < 100; try++ {
			// a read that met the old topology: go-redis reloads it
			ls[0].err = nil
			time.Sleep(100 * time.Millisecond)
			rec, ok = ls[0].LookupKey(time.Now(), it.Key, it.FP)
		}
		if !ok || rec.State != ledger.Requested {
			t.Fatalf("key %d after the failover: %+v %v; want requested (store error %v)", i, rec, ok, ls[0].Err())
		}
	}
	inFlight := 2 * 2 * batch
	t.Logf("%d keys, failed batches retried %d+%d, keys accepted twice %d (bound %d)", n, errs[0], errs[1], dups, inFlight)
	if dups > inFlight {
		t.Fatalf("%d keys accepted twice; want at most the %d in flight at the fault", dups, inFlight)
	}
	if err := cl.Restart(victim); err != nil {
		t.Fatal(err)
	}
	if err := cl.WaitOK(60 * time.Second); err != nil {
		t.Fatalf("the old master back: %v", err)
	}
	if role := cl.Info(victim, "replication", "role"); role != "slave" {
		t.Fatalf("the old master came back as %q; want a replica", role)
	}
}

// faultKeys is short, or full when DROVER_REDIS_FAULTS=full (make
// redis-faults).
func faultKeys(short, full int) int {
	if os.Getenv("DROVER_REDIS_FAULTS") == "full" {
		return full
	}
	return short
}
