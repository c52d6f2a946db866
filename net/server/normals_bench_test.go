package server

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"drover/coord"
	"drover/coord/ledger"
	"drover/net/client"
	"drover/net/wire"
	"drover/net/zsock"
	"drover/store"
)

// BenchmarkSubmitStoredKeys: a producer submits b.N keys that are done in
// the store but not in the coordinator's memory (its done set keeps 1,000
// keys), as a re-crawl does or a crawl's discovered links: every SUBMIT
// waits for its keys' store lookups (parked) before the coordinator
// answers them duplicates. It reports the process's CPU per key beside
// the time. Keys repeat past 120,000: run it with -benchtime 100000x.
//
//	go test -run '^$' -bench SubmitStoredKeys -benchtime 100000x -count 6 ./net/server
func BenchmarkSubmitStoredKeys(b *testing.B) {
	const stored = 120_000
	quiet := slog.New(slog.DiscardHandler)
	st, err := store.Open(store.Options{Memory: true, Log: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	loadDoneKeys(b, st, stored, time.Now().Add(-time.Hour))
	s, err := New(Options{Peers: zsock.Ephemeral, Admin: zsock.Ephemeral, Events: "-", Store: st, Log: quiet,
		Coord: coord.Config{Heartbeat: time.Second, Ledger: ledger.Config{DoneCache: 1000}}})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx) }()
	defer func() { cancel(); <-ran }()
	p, err := client.Dial(ctx, client.Options{Connect: s.PeersEndpoint(), ID: "producer"})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	items := make([]wire.SubmitItem, b.N)
	for i := range items {
		items[i] = wire.SubmitItem{Key: benchDoneKey(i % stored)}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	sts, err := p.Submit(ctx, items)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N)/1e3, "cpu-us/key")
	for i, it := range sts {
		if it.Status != wire.SubmitDuplicate {
			b.Fatalf("key %d: %s, want duplicate (done in the store)", i, it.Status)
		}
	}
	if l := s.dur.look.stats; l.Lookups == 0 {
		b.Fatalf("no store lookups (%+v): the keys were not parked", l)
	}
}
