package cli

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pebbe/zmq4"

	"drover/coord/id"
	"drover/net/wire"
)

// TestServeStoreSyncKill is the sync test through the real
// transport: a producer streams SUBMITs (four in flight at a time) to a
// real `drover serve` process, which is SIGKILLed at a random moment, then
// restarted on the same store. Under sync=always and sync=batch (whose
// acknowledgements wait for the fsync every store.sync_interval) every
// submit acknowledged before the kill is in the restarted server: resubmitted,
// each one is a duplicate. (A submit in flight at the kill may or may not
// be there; it was never acknowledged.)
func TestServeStoreSyncKill(t *testing.T) {
	tests := []struct {
		sync     string
		interval string
	}{
		{"always", "10ms"},
		{"batch", "50ms"},
	}
	for _, tt := range tests {
		t.Run(tt.sync, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"serve", "--store", filepath.Join(dir, "store"), "--store-sync", tt.sync,
				"--store-sync-interval", tt.interval, "--metrics", ""}, anyPorts...)
			srv, out := start(t, args...)
			peers, _, _ := serving(t, out)

			seed := time.Now().UnixNano()
			killAfter := time.Duration(150+rand.New(rand.NewPCG(uint64(seed), 0)).IntN(450)) * time.Millisecond
			t.Logf("seed %d: SIGKILL %v after the first acknowledgement", seed, killAfter)
			acked, inFlight := streamSubmits(t, peers, killAfter, func() {
				if err := srv.Process.Kill(); err != nil {
					t.Errorf("kill: %v", err)
				}
			})
			srv.Wait()
			if len(acked) == 0 {
				t.Fatal("no submit acknowledged before the kill")
			}
			t.Logf("sync=%s (interval %s): %d URLs acknowledged before the kill, %d in flight", tt.sync, tt.interval, len(acked), inFlight)

			_, out2 := start(t, args...)
			peers, _, _ = serving(t, out2)
			got, code := run(t, strings.Join(acked, "\n")+"\n", "submit", "-", "--connect", peers, "--crawler", "sync", "--processor", "test")
			want := fmt.Sprintf("%d submitted: 0 accepted, %d duplicates", len(acked), len(acked))
			if code != 0 || !strings.Contains(got, want) {
				t.Fatalf("resubmitting the acknowledged URLs after the restart: exit %d, %q; want %q (every acknowledged submit survives)\nrestart output:\n%s", code, got, want, out2.String())
			}
		})
	}
}

// streamSubmits sends SUBMITs of 25 new URLs to the peers endpoint, four
// outstanding at a time, until kill (called killAfter after the first
// acknowledgement) has run and the server has been silent for a second. It
// returns the URLs whose SUBMITTED said accepted, and how many URLs were
// still unacknowledged at the end.
func streamSubmits(t *testing.T, peers string, killAfter time.Duration, kill func()) (acked []string, inFlight int) {
	t.Helper()
	sk, err := zmq4.NewSocket(zmq4.DEALER)
	if err != nil {
		t.Fatal(err)
	}
	defer sk.Close()
	sk.SetLinger(0)
	if err := sk.Connect(peers); err != nil {
		t.Fatal(err)
	}
	send := func(m wire.Message) {
		frames, err := wire.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		parts := make([]any, len(frames))
		for i, f := range frames {
			parts[i] = f
		}
		if _, err := sk.SendMessage(parts...); err != nil {
			t.Fatal(err)
		}
	}
	poller := zmq4.NewPoller()
	poller.Add(sk, zmq4.POLLIN)
	recv := func(d time.Duration) wire.Message {
		polled, err := poller.Poll(d)
		if err != nil || len(polled) == 0 {
			return nil
		}
		frames, err := sk.RecvMessageBytes(0)
		if err != nil {
			t.Fatal(err)
		}
		m, err := wire.Decode(frames)
		if err != nil {
			t.Fatalf("undecodable message from serve: %v", err)
		}
		return m
	}
	send(&wire.Hello{Req: 1, Role: wire.RoleProducer, ID: "streamer", Host: "test"})
	for {
		m := recv(10 * time.Second)
		if m == nil {
			t.Fatal("no WELCOME from serve")
		}
		if _, ok := m.(*wire.Welcome); ok {
			break
		}
	}
	killed := make(chan struct{})
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	outstanding := map[uint64][]string{}
	req, next := uint64(1), 0
	lastHeard := time.Now()
	for {
		select {
		case <-killed:
		default:
			for len(outstanding) < 4 {
				req++
				jobs := make([]wire.SubmitItem, 25)
				urls := make([]string, len(jobs))
				for i := range jobs {
					urls[i] = fmt.Sprintf("http://sync.test/%d", next)
					next++
					jobs[i] = wire.SubmitItem{Key: id.Key{Crawler: "sync", Processor: "test", URL: urls[i]}}
				}
				outstanding[req] = urls
				send(&wire.Submit{Req: req, Jobs: jobs})
			}
		}
		m := recv(50 * time.Millisecond)
		if m == nil {
			select {
			case <-killed:
				if time.Since(lastHeard) > time.Second {
					for _, u := range outstanding {
						inFlight += len(u)
					}
					return acked, inFlight
				}
			default:
				if time.Since(lastHeard) > 10*time.Second {
					t.Fatal("serve stopped answering before the kill")
				}
			}
			continue
		}
		lastHeard = time.Now()
		switch m := m.(type) {
		case *wire.Heartbeat:
			send(&wire.Heartbeat{})
		case *wire.Submitted:
			urls, ok := outstanding[m.Req]
			if !ok {
				t.Fatalf("SUBMITTED for request %d, which is not outstanding", m.Req)
			}
			delete(outstanding, m.Req)
			for i, it := range m.Items {
				if it.Status != wire.SubmitAccepted {
					t.Fatalf("submit %s: %s %q, want accepted", urls[i], it.Status, it.Reason)
				}
			}
			acked = append(acked, urls...)
			if timer == nil {
				timer = time.AfterFunc(killAfter, func() { kill(); close(killed) })
			}
		default:
			t.Fatalf("unexpected %s from serve", m.Command())
		}
	}
}
