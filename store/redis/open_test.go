package redis

import (
	"context"
	"testing"
	"time"

	"drover/coord/ledger"
	"drover/internal/redisurl"
	"drover/store/redis/redistest"
)

// TestOpenByURL: a store URL naming the cluster's nodes, as a user gives
// it, opens a ledger through the cluster client; a key requested through
// it is found by a second ledger opened from the same URL (another
// coordinator), which is answered wait.
func TestOpenByURL(t *testing.T) {
	cl := redistest.Start(t)
	target, err := redisurl.Parse(cl.URL())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	open := func() *Ledger {
		l, err := Open(ctx, target, Config{Prefix: "open"})
		if err != nil {
			t.Fatalf("open %s: %v", cl.URL(), err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	a, b := open(), open()
	now := time.Now()
	if v, r := a.Request(now, 1, 1, key("x"), fpOf("x")); v != ledger.OK {
		t.Fatalf("first request through %s: %v %v, want ok", cl.URL(), v, r)
	}
	if v, r := b.Request(now, 2, 1, key("x"), fpOf("x")); v != ledger.Wait {
		t.Fatalf("the same key through a second coordinator: %v %v, want wait", v, r)
	}
}
