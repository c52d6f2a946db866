package redis

import (
	"fmt"
	"testing"
	"time"

	"drover/admin"
	"drover/coord/broker"
	"drover/coord/ledger"
)

// Each coordinator's summary shows in the cluster view, with the shared
// queue's length, the jobs the live coordinators claimed and the jobs
// done and failed on the cluster; a coordinator whose heartbeat expired
// shows as not alive, and is left out a minute later, its jobs done still
// counted.
func TestClusterView(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	now := time.Now()
	for i := range 5 {
		if _, err := ls[0].Jobs().Push(now, jobSpec(i)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ls[1].Jobs().Claim(now, 3)
	if err != nil || len(got) != 3 {
		t.Fatalf("claimed %d jobs, %v; want 3", len(got), err)
	}
	ls[1].Jobs().Finish(now, items(got[:1]), items(got[1:2]))
	for i, l := range ls {
		if err := l.PublishSummary(t.Context(), admin.ClusterCoordinator{Peers: fmt.Sprintf("tcp://c%d", i), Done: 10 * (i + 1), Dispatched: i * 2, Heartbeat: now}); err != nil {
			t.Fatal(err)
		}
	}
	v, err := ls[0].ClusterView(t.Context(), now)
	if err != nil {
		t.Fatal(err)
	}
	if v.Queued != 2 || v.Claimed != 2 || v.Done != 1 || v.Failed != 1 || len(v.Coordinators) != 2 {
		t.Fatalf("view %+v; want 2 queued, 2 claimed (as published), 1 done, 1 failed, 2 coordinators", v)
	}
	for i, c := range v.Coordinators {
		if c.ID != ls[i].Coordinator() || !c.Alive || c.Peers != fmt.Sprintf("tcp://c%d", i) {
			t.Fatalf("coordinator %d: %+v; want id %s, alive, its peers", i, c, ls[i].Coordinator())
		}
	}
	ls[1].halt()
	rdb.Del(t.Context(), ls[1].aliveKey(ls[1].Coordinator())) // its heartbeat expired
	if v, _ = ls[0].ClusterView(t.Context(), now); len(v.Coordinators) != 2 || v.Coordinators[1].Alive || v.Claimed != 0 || v.Done != 1 || v.Failed != 1 {
		t.Fatalf("after b's heartbeat expired: %+v; want b listed, not alive, its claims not counted, its jobs done and failed counted", v)
	}
	if v, _ = ls[0].ClusterView(t.Context(), now.Add(2*forgetSummary)); len(v.Coordinators) != 1 || v.Done != 1 || v.Failed != 1 {
		t.Fatalf("two minutes later: %+v; want b left out, its jobs done and failed still counted", v)
	}
}

// The cluster view lists the hosts holding polite jobs back in the shared
// queue, as any live coordinator's claims found them: b's claim finds the
// host at its cap (a holds its one slot), and a's view shows it with its
// waiting jobs, the slot in use and the limits.
func TestClusterViewPoliteHosts(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	a, b := ls[0].Jobs(), ls[1].Jobs()
	policy := politeAll(broker.Limits{PerHost: 1, MinDelay: time.Minute})
	a.HoldPoliteness(policy)
	b.HoldPoliteness(policy)
	for i := range 3 {
		if _, err := a.Push(time.Now(), politeJob("fetch", i)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := a.Claim(time.Now(), 10); err != nil || len(got) != 1 {
		t.Fatalf("a claimed %d jobs, %v; want 1", len(got), err)
	}
	if got, err := b.Claim(time.Now(), 10); err != nil || len(got) != 0 {
		t.Fatalf("b claimed %d jobs, %v; want 0 (the host at its cap)", len(got), err)
	}
	ctx := t.Context()
	for _, l := range ls {
		if err := l.PublishSummary(ctx, admin.ClusterCoordinator{Heartbeat: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	v, err := ls[0].ClusterView(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	host := politeJob("fetch", 0).Host
	want := admin.HostRow{Host: host, Jobs: 2, Polite: true, InFlight: 1, Limit: "1 at once, 1 per 1m0s"}
	if len(v.PoliteHosts) != 1 || v.PoliteHosts[0] != want {
		t.Fatalf("the cluster view's polite hosts: %+v; want [%+v] (found by b's claim)", v.PoliteHosts, want)
	}
}
