package conn

import (
	"os"
	"testing"
	"time"

	"github.com/pebbe/zmq4"

	"drover/net/wire"
	"drover/net/zsock"
)

// knownBug skips a test that shows a bug outside this package unless
// DROVER_KNOWN_BUGS is set, so that the package stays green while the
// test documents the bug and fails until it is fixed.
func knownBug(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("DROVER_KNOWN_BUGS") == "" {
		t.Skipf("known bug outside net/internal/conn (set DROVER_KNOWN_BUGS=1 to run): %s", what)
	}
}

// TestKnownBugShutdownDisconnectLost: a server that stops sends DISCONNECT
// 503 to every session and closes its ROUTER. zsock.Dealer sets IMMEDIATE,
// and with IMMEDIATE libzmq terminates a DEALER's pipe when its connection
// drops, discarding inbound messages the application has not read yet: the
// DISCONNECT is lost in a good share of runs (about one in five here), and
// clients find out only after heartbeat × liveness of silence.
func TestKnownBugShutdownDisconnectLost(t *testing.T) {
	knownBug(t, "zsock.Dealer's IMMEDIATE drops the server's shutdown DISCONNECT")
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
