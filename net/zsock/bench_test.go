package zsock

import (
	"testing"
	"time"

	"drover/coord/id"
	"drover/net/wire"

	"github.com/pebbe/zmq4"
)

// echoWindow is how many messages the echo keeps in flight.
const echoWindow = 100

// BenchmarkEchoBaseline is the ceiling drover's end-to-end dispatch is
// compared with: a bare pebbe/zmq4 DEALER -> ROUTER pipelined echo over TCP
// loopback, echoWindow messages in flight, each message three frames the
// size of a small JOB (protocol, command, a one-job body). Both ends run in
// this process, each socket owned by its own goroutine, both configured by
// this package as drover's are. It reports round trips per second (msg/s):
// each counted message went DEALER -> ROUTER -> DEALER.
func BenchmarkEchoBaseline(b *testing.B) {
	frames, err := wire.Encode(&wire.Job{Jobs: []wire.JobItem{{
		JobID: 123456, Attempt: 1,
		Key:     id.Key{Crawler: "news", Processor: "html", URL: "https://example.com/section/article-12345.html"},
		Headers: wire.Headers{{Name: "lang", Value: "en"}},
		Payload: []byte(`{"depth":2}`),
	}}})
	if err != nil {
		b.Fatal(err)
	}
	msg := [][]byte{frames[0], frames[1], frames[3]}
	size := 0
	for _, f := range msg {
		size += len(f)
	}
	n := b.N

	// The ROUTER: created, used and closed by its own goroutine. It closes
	// only once the DEALER has everything: closing earlier would drop the
	// echoes still queued in libzmq.
	endpoint := make(chan string, 1)
	echoed := make(chan error, 1)
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		router, ep, err := Loopback(Router)
		if err != nil {
			endpoint <- ""
			echoed <- err
			return
		}
		defer router.Close()
		defer func() { <-finished }()
		if err := router.SetRcvtimeo(10 * time.Second); err != nil {
			endpoint <- ""
			echoed <- err
			return
		}
		endpoint <- ep
		for range n {
			m, err := router.RecvMessageBytes(0)
			if err != nil {
				echoed <- err
				return
			}
			if _, err := router.SendMessage(m); err != nil {
				echoed <- err
				return
			}
		}
		echoed <- nil
	}()
	ep := <-endpoint
	if ep == "" {
		b.Fatal(<-echoed)
	}

	// The DEALER: owned by the benchmark goroutine.
	dealer, err := Dealer(ep, "", WithLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	defer dealer.Close()
	if err := dealer.SetRcvtimeo(10 * time.Second); err != nil {
		b.Fatal(err)
	}
	// IMMEDIATE is on: wait for the connection so the first sends do not
	// block in the timed part.
	poller := zmq4.NewPoller()
	poller.Add(dealer, zmq4.POLLOUT)
	if polled, err := poller.Poll(10 * time.Second); err != nil || len(polled) == 0 {
		b.Fatalf("dealer never connected: %v", err)
	}

	b.SetBytes(int64(2 * size))
	b.ReportAllocs()
	b.ResetTimer()
	sent, received := 0, 0
	for received < n {
		for sent < n && sent-received < echoWindow {
			if _, err := dealer.SendMessage(msg); err != nil {
				b.Fatalf("send %d: %v", sent, err)
			}
			sent++
		}
		back, err := dealer.RecvMessageBytes(0)
		if err != nil {
			select {
			case rerr := <-echoed:
				b.Fatalf("receive %d: %v (router: %v)", received, err, rerr)
			default:
				b.Fatalf("receive %d: %v (router still running)", received, err)
			}
		}
		if len(back) != len(msg) {
			b.Fatalf("echo has %d frames, want %d", len(back), len(msg))
		}
		received++
	}
	b.StopTimer()
	if err := <-echoed; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msg/s")
}
