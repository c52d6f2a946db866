package redis

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"drover/coord/id"
	"drover/coord/ledger"
)

// BenchmarkCoordinators: keys/s through a coordinator's whole cycle on
// the ledger (request a batch of 1000 keys over 100 hosts, queue the ones
// granted, mark them done) with 1, 2 and 3 coordinators on the local
// cluster, each a Ledger with its own connections running on its own
// goroutine over its share of the keys, against the embedded (in-memory)
// ledger of one coordinator doing the same, and one coordinator with
// WaitReplicas 1 (store.redis.wait_replicas: each batch WAITs for the
// shards' replicas). The five set-ups alternate, three rounds, in one run;
// the figure is the median round.
//
//	go test -run '^$' -bench Coordinators -benchtime 1x ./store/redis
func BenchmarkCoordinators(b *testing.B) {
	if clusterErr != nil {
		b.Fatal(clusterErr)
	}
	const n = 30_000
	items := make([]ledger.Item, n)
	for i := range items {
		k := id.Key{Crawler: "c", Processor: "p", URL: fmt.Sprintf("http://h%d.example/page/%d", i%100, i)}
		items[i] = ledger.Item{Key: k, FP: k.Fingerprint()}
	}
	setups := []string{"embedded", "redis-1", "redis-2", "redis-3", "redis-1-wait"}
	rates := make(map[string][]float64)
	for round := 0; round < 3*b.N; round++ {
		for _, s := range setups {
			var coords int
			fmt.Sscanf(s, "redis-%d", &coords)
			wait := 0
			if strings.HasSuffix(s, "-wait") {
				wait = 1
			}
			rates[s] = append(rates[s], cycleRate(b, items, coords, wait, fmt.Sprintf("bc%d-%s", round, s)))
		}
	}
	var log []string
	for _, s := range setups {
		xs := append([]float64(nil), rates[s]...)
		sort.Float64s(xs)
		b.ReportMetric(xs[len(xs)/2], s+"-keys/s")
		log = append(log, s+" "+fmtRates(rates[s]))
	}
	b.Logf("rounds (keys/s): %s", strings.Join(log, "; "))
}

// cycleRate runs every item through request, queue and done, split over
// coords Redis ledgers (0: one embedded ledger) WAITing for wait replicas,
// and returns keys/s.
func cycleRate(b *testing.B, items []ledger.Item, coords, wait int, prefix string) float64 {
	var bes []ledger.Backend
	if coords == 0 {
		l, err := ledger.New(ledger.Config{RequestTTL: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		bes = append(bes, l)
	}
	for range coords {
		rdb := newClusterClient(&goredis.ClusterOptions{Addrs: cluster.Addrs()}) // closed by l.Close
		l, err := newLedger(context.Background(), rdb, Config{Ledger: ledger.Config{RequestTTL: time.Hour}, Prefix: prefix, WaitReplicas: wait, WaitTimeout: 2 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		bes = append(bes, l)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(bes))
	start := time.Now()
	for c, be := range bes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var res []ledger.Result
			var fps []id.Fingerprint
			var won []ledger.Item
			for i := c * 1000; i < len(items); i += 1000 * len(bes) {
				batch := items[i:min(i+1000, len(items))]
				now := time.Now()
				res = be.RequestBatch(now, 1, uint64(i), batch, res[:0])
				fps, won = fps[:0], won[:0]
				for j, r := range res {
					if r.Verdict != ledger.OK {
						errs[c] = fmt.Errorf("coordinator %d: request %d: %v %v", c, i+j, r.Verdict, r.Reason)
						return
					}
					fps, won = append(fps, batch[j].FP), append(won, batch[j])
				}
				res = be.QueueBatch(now, 1, fps, res[:0])
				be.DoneBatch(now, won, ledger.DoneOK)
				_ = be.TakeEvents(nil)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	for _, be := range bes {
		if l, ok := be.(*Ledger); ok {
			if l.Err() != nil {
				b.Fatal(l.Err())
			}
			l.Close()
		}
	}
	return float64(len(items)) / el.Seconds()
}
