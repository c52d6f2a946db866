package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"drover/coord/id"
	"drover/coord/ledger"
	"drover/store/redis/redistest"
)

// benchItems are n keys over hosts hosts, each key twice (half the
// decisions are duplicates), in batches of 1000.
func benchItems(n, hosts int) []ledger.Item {
	items := make([]ledger.Item, 0, 2*n)
	for i := 0; i < n; i += 500 {
		for r := 0; r < 2; r++ {
			for j := i; j < min(i+500, n); j++ {
				k := id.Key{Crawler: "c", Processor: "p", URL: fmt.Sprintf("http://h%d.example/page/%d", j%hosts, j)}
				items = append(items, ledger.Item{Key: k, FP: k.Fingerprint()})
			}
		}
	}
	return items
}

// usedMemory is the sum of used_memory over the cluster's masters.
func usedMemory(b *testing.B) int64 {
	var sum int64
	for _, i := range cluster.Masters() {
		v, err := strconv.ParseInt(cluster.Info(i, "memory", "used_memory"), 10, 64)
		if err != nil {
			b.Fatalf("INFO memory: %v", err)
		}
		sum += v
	}
	return sum
}

// BenchmarkDedupVersusSADD: dedup decisions/s of the ledger's request
// script (batches of 1000 keys over 100 hosts, or one, half duplicates) against
// plain SADD of the same URLs into per-host sets, pipelined 1000 at a
// time, alternating in one run on the local cluster; and the cluster
// memory per key each leaves (INFO memory used_memory on the masters).
//
//	go test -run '^$' -bench DedupVersusSADD -benchtime 1x ./store/redis
func BenchmarkDedupVersusSADD(b *testing.B) {
	for _, hosts := range []int{100, 1} {
		b.Run(fmt.Sprintf("hosts=%d", hosts), func(b *testing.B) { benchDedup(b, hosts) })
	}
}

func benchDedup(b *testing.B, hosts int) {
	if ok, why := redistest.Available(); !ok {
		b.Skip(why)
	}
	if clusterErr != nil {
		b.Fatal(clusterErr)
	}
	rdb := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: cluster.Addrs()})
	defer rdb.Close()
	const n = 20_000
	items := benchItems(n, hosts)
	ctx := context.Background()
	var ledgerRate, saddRate, ledgerMem, saddMem []float64
	for round := 0; round < 3*b.N; round++ {
		// the ledger
		l, err := newLedger(ctx, rdb, Config{Ledger: ledger.Config{RequestTTL: time.Hour}, Prefix: fmt.Sprintf("bl%d-%d", hosts, round)})
		if err != nil {
			b.Fatal(err)
		}
		before := usedMemory(b)
		start := time.Now()
		for i := 0; i < len(items); i += 1000 {
			l.RequestBatch(start, 1, 1, items[i:i+1000], nil)
		}
		el := time.Since(start)
		if l.Err() != nil {
			b.Fatal(l.Err())
		}
		ledgerRate = append(ledgerRate, float64(len(items))/el.Seconds())
		ledgerMem = append(ledgerMem, float64(usedMemory(b)-before)/n)
		// SADD
		before = usedMemory(b)
		start = time.Now()
		for i := 0; i < len(items); i += 1000 {
			pipe := rdb.Pipeline()
			for _, it := range items[i : i+1000] {
				pipe.SAdd(ctx, fmt.Sprintf("bs%d-%d:{%s}:seen", hosts, round, hostOf(&it.Key)), it.Key.URL)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
		el = time.Since(start)
		saddRate = append(saddRate, float64(len(items))/el.Seconds())
		saddMem = append(saddMem, float64(usedMemory(b)-before)/n)
	}
	med := func(xs []float64) float64 {
		s := append([]float64(nil), xs...)
		for i := range s {
			for j := i + 1; j < len(s); j++ {
				if s[j] < s[i] {
					s[i], s[j] = s[j], s[i]
				}
			}
		}
		return s[len(s)/2]
	}
	b.ReportMetric(med(ledgerRate), "ledger-decisions/s")
	b.ReportMetric(med(saddRate), "sadd-decisions/s")
	b.ReportMetric(med(ledgerRate)/med(saddRate), "ratio")
	b.ReportMetric(med(ledgerMem), "ledger-B/key")
	b.ReportMetric(med(saddMem), "sadd-B/key")
	b.Logf("rounds: ledger %v, SADD %v decisions/s", fmtRates(ledgerRate), fmtRates(saddRate))
}

func fmtRates(xs []float64) string {
	var s []string
	for _, x := range xs {
		s = append(s, fmt.Sprintf("%.0fk", x/1000))
	}
	return strings.Join(s, " ")
}
