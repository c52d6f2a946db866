package conn

import (
	"testing"
	"time"

	"github.com/pebbe/zmq4"

	"drover/net/wire"
	"drover/net/zsock"
)

// TestShutdownDisconnectDelivered: a server that stops sends DISCONNECT
// 503 to every session. zsock.Dealer sets IMMEDIATE, and with IMMEDIATE
// libzmq discards a DEALER's unread input when its connection drops, so the
// server keeps its connections open a moment after the DISCONNECTs; without
// that the DISCONNECT was lost in about one run in five and clients found
// out only after heartbeat × liveness of silence.
func TestShutdownDisconnectDelivered(t *testing.T) {
	lost := 0
	const runs = 20
	for range runs {
		s, stop := startServer(t, "")
		d, err := zsock.Dealer(s.PeersEndpoint(), "")
		if err != nil {
			t.Fatal(err)
		}
		frames, err := wire.Encode(&wire.Hello{Req: 1, Role: wire.RoleProducer, ID: "bug"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.SendMessage(frames); err != nil {
			t.Fatal(err)
		}
		p := zmq4.NewPoller()
		p.Add(d, zmq4.POLLIN)
		got := false
		stopped := false
		deadline := time.Now().Add(2 * time.Second)
		for !got && time.Now().Before(deadline) {
			polled, err := p.Poll(50 * time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if len(polled) == 0 {
				continue
			}
			fr, err := d.RecvMessageBytes(0)
			if err != nil {
				t.Fatal(err)
			}
			m, err := wire.Decode(fr)
			if err != nil {
				t.Fatal(err)
			}
			switch m := m.(type) {
			case *wire.Welcome:
				if !stopped {
					stopped = true
					go stop()
				}
			case *wire.Disconnect:
				got = m.Code == wire.CodeUnavailable
			}
		}
		d.Close()
		stop()
		if !got {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("the shutdown DISCONNECT 503 was lost in %d of %d runs, want 0", lost, runs)
	}
}
