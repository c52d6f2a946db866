package redis

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"drover/store/redis/redistest"
)

// A pipeline whose first command meets a migrating slot (TRYAGAIN) while
// a later one is MOVED by a slot map gone stale: go-redis's own pipeline
// rounds queue the moved command twice, for two nodes (a data race under
// -race) or twice for one (it runs twice). Here it runs once.
func TestPipelineMovedBesideTryAgain(t *testing.T) {
	c := redistest.Start(t)
	ctx := context.Background()
	rdb := newClusterClient(&goredis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	node := func(key string) int { // the index of the master serving key
		m, err := rdb.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.Index(c.Addrs(), m.Options().Addr)
		if i < 0 {
			t.Fatalf("master %s of %q is not one of the cluster's %v", m.Options().Addr, key, c.Addrs())
		}
		return i
	}
	slot := func(key string) string {
		return strconv.FormatInt(rdb.ClusterKeySlot(ctx, key).Val(), 10)
	}
	cli := func(i int, args ...string) {
		if out, err := c.Cli(i, args...); err != nil || !strings.Contains(out, "OK") {
			t.Fatalf("node %d: redis-cli %v: %q, %v", i, args, out, err)
		}
	}
	myid := func(i int) string {
		out, err := c.Cli(i, "cluster", "myid")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}

	tryKeys := []string{"{m}a", "{m}b"}
	a := node(tryKeys[0])
	moved := ""
	for i := 0; moved == ""; i++ {
		if k := fmt.Sprintf("{n%d}x", i); node(k) == a && slot(k) != slot(tryKeys[0]) {
			moved = k
		}
	}
	b := -1
	for _, m := range c.Masters() {
		if m != a {
			b = m
			break
		}
	}
	aid, bid := myid(a), myid(b)
	if err := rdb.Set(ctx, tryKeys[0], "1", 0).Err(); err != nil {
		t.Fatal(err)
	}

	// moved's empty slot goes to b behind the client's back; tryKeys'
	// slot starts migrating to b with tryKeys[0] still on a.
	s := slot(moved)
	cli(b, "cluster", "setslot", s, "importing", aid)
	cli(a, "cluster", "setslot", s, "migrating", bid)
	cli(b, "cluster", "setslot", s, "node", bid)
	cli(a, "cluster", "setslot", s, "node", bid)
	s = slot(tryKeys[0])
	cli(b, "cluster", "setslot", s, "importing", aid)
	cli(a, "cluster", "setslot", s, "migrating", bid)

	pipe := rdb.Pipeline()
	mget := pipe.MGet(ctx, tryKeys...)
	incr := pipe.Incr(ctx, moved)
	_, _ = pipe.Exec(ctx)

	if err := mget.Err(); err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN") {
		t.Errorf("MGET over a migrating slot with one key moved: err = %v; want TRYAGAIN", err)
	}
	if incr.Err() != nil || incr.Val() != 1 {
		t.Errorf("INCR of a moved key: %d, %v; want 1, no error", incr.Val(), incr.Err())
	}
	if got, err := rdb.Get(ctx, moved).Result(); got != "1" {
		t.Fatalf("%s after one INCR = %q, %v; want 1 (run once)", moved, got, err)
	}
}
