package server

import (
	"slices"
	"sync"
	"testing"
	"time"

	"drover/net/wire"
)

// drainsClusterJobs is a cluster that keeps some workers drained, and
// records the drains forgotten.
type drainsClusterJobs struct {
	fakeClusterJobs
	kept      map[string]bool
	mu        sync.Mutex
	forgotten []string
}

func (f *drainsClusterJobs) Drained(w string) bool { return f.kept[w] }

func (f *drainsClusterJobs) UnmarkDrained(ws []string) ([]bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgotten = append(f.forgotten, ws...)
	return make([]bool, len(ws)), nil
}

func (f *drainsClusterJobs) forgot() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.forgotten)
}

// nextNotBeat is c's next message other than a HEARTBEAT.
func nextNotBeat(c *rawClient) wire.Message {
	for {
		if m := c.recv(); m.Command() != wire.CmdHeartbeat {
			return m
		}
	}
}

// A worker the cluster keeps drained is drained as it says HELLO: its
// WELCOME is followed by DISCONNECT 200 drained, never a JOB, though jobs
// wait (another worker gets them); its drain is then forgotten in the
// cluster, since it was let go.
func TestClusterDrainedWorkerDrainedAtHello(t *testing.T) {
	fake := &drainsClusterJobs{kept: map[string]bool{"w-kept": true}}
	s := startServer(t, Options{ClusterJobs: fake})
	p := dial(t, s.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p1", 0)
	submitNumbered(t, p, 2, "http://kept.test/", 3)

	w := dial(t, s.PeersEndpoint())
	hello(t, w, wire.RoleWorker, "w-kept", 4)
	d := expect[*wire.Disconnect](t, nextNotBeat(w))
	if d.Code != wire.CodeOK || d.Reason != "drained" {
		t.Fatalf("the kept-drained worker's DISCONNECT: %d %q; want 200 drained", d.Code, d.Reason)
	}
	other := dial(t, s.PeersEndpoint())
	hello(t, other, wire.RoleWorker, "w-free", 4)
	expect[*wire.Job](t, nextNotBeat(other))

	for deadline := time.Now().Add(20 * time.Second); !slices.Equal(fake.forgot(), []string{"w-kept"}); {
		if time.Now().After(deadline) {
			t.Fatalf("drains forgotten: %v; want w-kept's, let go", fake.forgot())
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
}
