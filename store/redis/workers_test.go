package redis

import (
	"context"
	"testing"
	"time"

	"drover/admin"
	"drover/coord/ledger"
)

// A worker one coordinator notes is found there by the others, live;
// once that coordinator's heartbeat expires it is found there dead; a
// worker nobody notes, and one a coordinator notes of itself, is not
// found.
func TestWorkerAt(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 3, ledger.Config{})
	a, b, c := ls[0], ls[1], ls[2]
	ctx := context.Background()
	now := time.Now()
	b.JobView().NoteWorkers([]string{"w-2", "w-1"})
	a.JobView().NoteWorkers([]string{"w-a"})
	for _, l := range []*Ledger{a, b} {
		if err := l.PublishSummary(ctx, admin.ClusterCoordinator{Peers: "tcp://" + l.coord, Heartbeat: now}); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range []string{"w-1", "w-2"} {
		co, peers, alive, err := c.JobView().WorkerAt(w)
		if err != nil || co != b.coord || peers != "tcp://"+b.coord || !alive {
			t.Fatalf("WorkerAt(%s) from c: %q %q %v %v; want coordinator %s, alive", w, co, peers, alive, err, b.coord)
		}
	}
	if co, _, _, err := c.JobView().WorkerAt("w-3"); err != nil || co != "" {
		t.Fatalf("WorkerAt of a worker nobody has: %q, %v; want none", co, err)
	}
	if co, _, _, err := a.JobView().WorkerAt("w-a"); err != nil || co != "" {
		t.Fatalf("WorkerAt from a of its own worker: %q, %v; want none (not another coordinator's)", co, err)
	}
	b.halt()
	if err := rdb.Del(ctx, b.aliveKey(b.coord)).Err(); err != nil { // its heartbeat expired
		t.Fatal(err)
	}
	if co, _, alive, err := c.JobView().WorkerAt("w-1"); err != nil || co != b.coord || alive {
		t.Fatalf("WorkerAt(w-1) after b died: %q %v %v; want coordinator %s, dead", co, alive, err, b.coord)
	}
}
