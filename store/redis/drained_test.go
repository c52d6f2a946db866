package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"drover/admin"
	"drover/coord/ledger"
)

// A drain one coordinator keeps is seen at once there and by the others
// once they read the cluster (their summary, or joining it); an undrain
// forgets it and says which workers had one; a drain older than
// drainKeep is forgotten; past maxDrained drains a new one is refused,
// an existing one kept.
func TestDrainKept(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	a, b := ls[0], ls[1]
	ctx := context.Background()
	av, bv := a.JobView(), b.JobView()
	if refused, err := av.MarkDrained([]string{"w-1", "w-2"}); err != nil || len(refused) != 0 {
		t.Fatalf("MarkDrained: refused %v, %v; want none", refused, err)
	}
	if !av.Drained("w-1") || !av.Drained("w-2") || av.Drained("w-3") {
		t.Fatalf("a's drains after marking w-1 and w-2: w-1 %v w-2 %v w-3 %v; want true true false", av.Drained("w-1"), av.Drained("w-2"), av.Drained("w-3"))
	}
	if bv.Drained("w-1") {
		t.Fatal("b sees w-1 drained before reading the cluster; want it read with its summary")
	}
	if err := b.PublishSummary(ctx, admin.ClusterCoordinator{Heartbeat: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if !bv.Drained("w-1") || !bv.Drained("w-2") {
		t.Fatal("b does not see w-1 and w-2 drained after its summary")
	}
	c, err := newLedger(ctx, rdb, Config{Prefix: a.cfg.Prefix, Heartbeat: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.halt)
	if !c.JobView().Drained("w-1") {
		t.Fatal("a coordinator joining does not see w-1 drained")
	}

	had, err := bv.UnmarkDrained([]string{"w-1", "w-3"})
	if err != nil || !slices.Equal(had, []bool{true, false}) {
		t.Fatalf("UnmarkDrained(w-1, w-3): %v, %v; want [true false]", had, err)
	}
	if bv.Drained("w-1") {
		t.Fatal("b still sees w-1 drained after undraining it")
	}
	if err := a.PublishSummary(ctx, admin.ClusterCoordinator{Heartbeat: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if av.Drained("w-1") || !av.Drained("w-2") {
		t.Fatal("a, after its summary, does not see w-1 undrained and w-2 drained")
	}

	// A drain older than drainKeep is forgotten.
	old, _ := json.Marshal(drainMark{At: time.Now().Add(-drainKeep - time.Minute), By: a.coord})
	if err := rdb.HSet(ctx, a.drainedKey(), "w-old", old).Err(); err != nil {
		t.Fatal(err)
	}
	if err := a.readDrained(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if av.Drained("w-old") {
		t.Fatal("a drain older than drainKeep is still seen")
	}
	if n, err := rdb.HExists(ctx, a.drainedKey(), "w-old").Result(); err != nil || n {
		t.Fatalf("a drain older than drainKeep is still kept: %v, %v", n, err)
	}

	// Full: a new drain is refused, one kept already is not.
	fill := make([]any, 0, 2*maxDrained)
	for i := range maxDrained {
		fill = append(fill, fmt.Sprintf("f-%d", i), old)
	}
	if err := rdb.HSet(ctx, a.drainedKey(), fill...).Err(); err != nil {
		t.Fatal(err)
	}
	refused, err := av.MarkDrained([]string{"w-new", "w-2"})
	if err != nil || !slices.Equal(refused, []string{"w-new"}) {
		t.Fatalf("MarkDrained past %d drains: refused %v, %v; want w-new only", maxDrained, refused, err)
	}
	if av.Drained("w-new") || !av.Drained("w-2") {
		t.Fatal("a's copy after a refused drain: want w-new not drained, w-2 drained")
	}
}
