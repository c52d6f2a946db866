package zsock

import (
	"slices"
	"testing"
	"time"
)

// BenchmarkRoundTrip is the floor under drover's latency figures: one
// message at a time DEALER -> ROUTER -> DEALER over TCP loopback, both
// ends blocking in libzmq (the lowest-latency way to wait), each socket
// owned by its own goroutine.
func BenchmarkRoundTrip(b *testing.B) {
	router, ep, err := Loopback(Router)
	if err != nil {
		b.Fatal(err)
	}
	d, err := Dealer(ep, "")
	if err != nil {
		router.Close()
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer router.Close()
		for {
			msg, err := router.RecvMessageBytes(0)
			if err != nil || len(msg) == 2 && string(msg[1]) == "stop" {
				return
			}
			if _, err := router.SendMessage(msg); err != nil {
				return
			}
		}
	}()
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t0 := time.Now()
		if _, err := d.SendMessage("ping"); err != nil {
			b.Fatal(err)
		}
		if _, err := d.RecvMessageBytes(0); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	d.SendMessage("stop")
	<-done
	d.Close()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
