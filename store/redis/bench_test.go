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

// usedMemory is the sum of used_memory over the cluster's masters, less
// what their clients' buffers hold at that moment (mem_clients_slaves and
// mem_clients_normal: replication and replies in flight, not data).
func usedMemory(b *testing.B) int64 {
	var sum int64
	for _, i := range cluster.Masters() {
		out, err := cluster.Cli(i, "info", "memory")
		if err != nil {
			b.Fatalf("INFO memory: %v", err)
		}
		for _, f := range []string{"used_memory", "mem_clients_slaves", "mem_clients_normal"} {
			v, err := strconv.ParseInt(redistest.InfoField(out, f), 10, 64)
			if err != nil {
				b.Fatalf("INFO memory %s: %v", f, err)
			}
			if f != "used_memory" {
				v = -v
			}
			sum += v
		}
	}
	return sum
}

// commandUsec sums, over the cluster's masters, the microseconds Redis
// spent in command cmd (INFO commandstats) since the last CONFIG
// RESETSTAT.
func commandUsec(b *testing.B, cmd string) float64 {
	var sum float64
	for _, i := range cluster.Masters() {
		out, err := cluster.Cli(i, "info", "commandstats")
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(out, "\n") {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":")
			if !ok {
				continue
			}
			for _, f := range strings.Split(rest, ",") {
				if v, ok := strings.CutPrefix(f, "usec="); ok {
					x, _ := strconv.ParseFloat(v, 64)
					sum += x
				}
			}
		}
	}
	return sum
}

func resetStats(b *testing.B) {
	for _, i := range cluster.Masters() {
		if _, err := cluster.Cli(i, "config", "resetstat"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDedupVersusSADD: dedup decisions/s of the ledger's request
// script (batches of 1000 keys over 100 hosts, or one, half duplicates) against
// plain SADD of the same URLs into per-host sets, pipelined 1000 at a
// time, alternating in one run on the local cluster; the time Redis itself
// spends per decision in each (INFO commandstats: FCALL's and SADD's
// usec over the decisions), which the load on the machine hardly moves;
// and the cluster memory per key each leaves (INFO memory used_memory on
// the masters).
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
	rdb := newClusterClient(&goredis.ClusterOptions{Addrs: cluster.Addrs()})
	defer rdb.Close()
	const n = 20_000
	items := benchItems(n, hosts)
	ctx := context.Background()
	var ledgerRate, saddRate, ledgerMem, saddMem []float64
	resetStats(b)
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
	// Redis's own time per decision, whatever the load on the machine
	b.ReportMetric(commandUsec(b, "fcall")*1000/float64(3*b.N*len(items)), "ledger-redis-ns/decision")
	b.ReportMetric(commandUsec(b, "sadd")*1000/float64(3*b.N*len(items)), "sadd-redis-ns/decision")
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

// BenchmarkBytesPerKey: the cluster memory (INFO memory used_memory on
// the masters) each key costs in each state, for 20,000 keys over 100
// hosts (200 a host, so each host's record hash is a hash table, not a
// listpack): requested, then queued, then done (with done and failed TTLs,
// so each done key also has its place in the sweep's FIFO).
//
//	go test -run '^$' -bench BytesPerKey -benchtime 1x ./store/redis
func BenchmarkBytesPerKey(b *testing.B) {
	if ok, why := redistest.Available(); !ok {
		b.Skip(why)
	}
	if clusterErr != nil {
		b.Fatal(clusterErr)
	}
	rdb := newClusterClient(&goredis.ClusterOptions{Addrs: cluster.Addrs()})
	defer rdb.Close()
	const n = 20_000
	items := benchItems(n, 100)[:0]
	for i := range n {
		k := id.Key{Crawler: "c", Processor: "p", URL: fmt.Sprintf("http://h%d.example/page/%d", i%100, i)}
		items = append(items, ledger.Item{Key: k, FP: k.Fingerprint()})
	}
	for round := 0; round < b.N; round++ {
		l, err := newLedger(context.Background(), rdb, Config{Ledger: ledger.Config{RequestTTL: time.Hour, DoneTTL: 24 * time.Hour, FailedTTL: 24 * time.Hour},
			Prefix: fmt.Sprintf("bb%d", round)})
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		before := usedMemory(b)
		fps := make([]id.Fingerprint, 0, 1000)
		for i := 0; i < n; i += 1000 {
			l.RequestBatch(now, 1, 1, items[i:i+1000], nil)
		}
		requested := usedMemory(b)
		for i := 0; i < n; i += 1000 {
			fps = fps[:0]
			for _, it := range items[i : i+1000] {
				fps = append(fps, it.FP)
			}
			l.QueueBatch(now, 1, fps, nil)
		}
		queued := usedMemory(b)
		for i := 0; i < n; i += 1000 {
			l.DoneBatch(now, items[i:i+1000], ledger.DoneOK)
		}
		done := usedMemory(b)
		if err := l.Err(); err != nil {
			b.Fatal(err)
		}
		if c := l.Counts(); c.Done != n {
			b.Fatalf("done %d; want %d", c.Done, n)
		}
		b.ReportMetric(float64(requested-before)/n, "requested-B/key")
		b.ReportMetric(float64(queued-before)/n, "queued-B/key")
		b.ReportMetric(float64(done-before)/n, "done-B/key")
	}
}
