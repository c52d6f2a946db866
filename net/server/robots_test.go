package server

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"drover/coord"
	"drover/coord/broker"
	"drover/net/wire"
	"drover/store"
)

// TestRobotsHeaderIsOneName: the broker decides which workers probe a
// host's robots.txt by the same HELLO header the wire and the worker
// library use.
func TestRobotsHeaderIsOneName(t *testing.T) {
	if broker.RobotsHeader != wire.RobotsHeader {
		t.Fatalf("broker.RobotsHeader %q, wire.RobotsHeader %q: want one name", broker.RobotsHeader, wire.RobotsHeader)
	}
}

// TestRobotsRefusedCountedOnce: a ROBOTS report the coordinator refuses is
// answered ERROR with its request id and the code of its refusal (409 for
// a host the worker holds no job of, 400 for an origin that is not one),
// and counted once in malformed; a report for a host the worker holds a
// job of is taken without an answer.
func TestRobotsRefusedCountedOnce(t *testing.T) {
	s := startServer(t, Options{})
	w := dial(t, s.PeersEndpoint())
	hello(t, w, wire.RoleWorker, "w", 1)
	p := dial(t, s.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p", 0)
	p.send(&wire.Submit{Req: 2, Jobs: []wire.SubmitItem{{Key: key("http://held.test/x")}}})
	expect[*wire.Submitted](t, p.recv())
	expect[*wire.Job](t, w.recv())
	before := totals(t, s).Malformed

	w.send(&wire.Robots{Req: 10, Origin: "http://held.test", TTL: time.Hour}) // taken: no answer
	for _, c := range []struct {
		req    uint64
		origin string
		code   wire.Code
	}{
		{11, "http://other.test", wire.CodeConflict},
		{12, "http://held.test/robots.txt", wire.CodeMalformed},
	} {
		w.send(&wire.Robots{Req: c.req, Origin: c.origin, TTL: time.Hour})
		e := expect[*wire.Error](t, w.recv())
		if e.Req != c.req || e.Code != c.code {
			t.Fatalf("ROBOTS %d for %s: ERROR %d for request %d (%s), want ERROR %d for request %d", c.req, c.origin, e.Code, e.Req, e.Msg, c.code, c.req)
		}
	}
	if got := totals(t, s).Malformed - before; got != 2 {
		t.Fatalf("malformed rose by %d, want 2: each refused report counted once", got)
	}
}

// robotsHello says HELLO as a worker that takes the fleet's robots.txt
// copies (drv.robots=1).
func robotsHello(t *testing.T, c *rawClient, name string, slots uint32) {
	t.Helper()
	c.send(&wire.Hello{Req: 1, Role: wire.RoleWorker, ID: name, Host: "test", Slots: slots, Headers: wire.HeadersOf(map[string]string{wire.RobotsHeader: "1"})})
	expect[*wire.Welcome](t, c.recv())
}

// TestRobotsSurviveKill: the robots.txt copy a worker reported, and the
// Crawl-delay it gave, are durable like the coordinator's other records.
// A coordinator process dispatches a.test's first job as the probe; its
// worker reports the file (Crawl-delay 2) and the job's result; the
// process is SIGKILLed once a later batch is durable. Restarted on its
// store, it sends a worker that takes copies the copy before its first
// JOB of a.test — no probe: the fleet does not fetch the file again — no
// sooner than the Crawl-delay after the restart, and spaces a.test's next
// job by the Crawl-delay from the end of that one.
// Without the record the first job after the restart would be a probe
// (no copy sent) and the next one would follow its result at once.
func TestRobotsSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	const delay = 2 * time.Second
	body := []byte("User-agent: *\nCrawl-delay: 2\nDisallow: /private/\n")
	dir := filepath.Join(t.TempDir(), "store")
	c1 := startUnrecChild(t, dir, "DROVER_UNRECORDED_ROBOTS=1")
	p := dial(t, c1.peers)
	hello(t, p, wire.RoleProducer, "p1", 0)
	p.send(&wire.Submit{Req: 2, Jobs: []wire.SubmitItem{{Key: key("http://a.test/1")}}})
	expect[*wire.Submitted](t, p.recv())
	a := dial(t, c1.peers)
	robotsHello(t, a, "w-a", 1)
	probe := expect[*wire.Job](t, a.recv()).Jobs[0] // no copy yet: this worker fetches the file
	a.send(&wire.Robots{Req: 7, Origin: "http://a.test", TTL: time.Hour, CrawlDelay: delay, Content: body})
	a.send(&wire.Result{Req: 3, Items: []wire.ResultItem{{JobID: probe.JobID, Attempt: probe.Attempt, Outcome: wire.OutcomeOK}}})
	expect[*wire.ResultOK](t, a.recv())
	// Batches apply in order: once this SUBMITTED comes (its batch
	// durable), so is the batch that holds the copy.
	p.send(&wire.Submit{Req: 3, Jobs: []wire.SubmitItem{{Key: key("http://a.test/2")}, {Key: key("http://a.test/3")}}})
	expect[*wire.Submitted](t, p.recv())
	c1.kill()

	restarted := time.Now()
	c2 := startUnrecChild(t, dir, "DROVER_UNRECORDED_ROBOTS=1")
	b := dial(t, c2.peers)
	robotsHello(t, b, "w-b", 2)
	m, err := b.recvWithin(delay + 20*time.Second) // the first dispatch waits the interval from the start
	if err != nil {
		t.Fatal(err)
	}
	r, ok := m.(*wire.Robots)
	if !ok {
		t.Fatalf("after the restart the worker got %s %+v first: want the kept robots.txt copy before its JOB (no new probe)", m.Command(), m)
	}
	if r.Origin != "http://a.test" || r.CrawlDelay != delay || !bytes.Equal(r.Content, body) || r.TTL <= 0 || r.TTL > time.Hour {
		t.Fatalf("copy after the restart: origin %q, Crawl-delay %v, TTL %v, content %q; want http://a.test, %v, (0, 1h], %q", r.Origin, r.CrawlDelay, r.TTL, r.Content, delay, body)
	}
	first := expect[*wire.Job](t, b.recv()).Jobs
	if len(first) != 1 {
		t.Fatalf("first JOB after the restart carries %d jobs, want 1 (the Crawl-delay spaces a.test)", len(first))
	}
	if since := time.Since(restarted); since < delay-100*time.Millisecond {
		// The coordinator before may have dispatched to a.test just
		// before it died: the interval runs from the start.
		t.Fatalf("a.test's first job came %v after the restart: want at least its Crawl-delay %v", since, delay)
	}
	ended := time.Now()
	b.send(&wire.Result{Req: 2, Items: []wire.ResultItem{{JobID: first[0].JobID, Attempt: first[0].Attempt, Outcome: wire.OutcomeOK}}})
	for {
		m, err := b.recvWithin(delay + 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := m.(*wire.ResultOK); ok {
			continue
		}
		next := expect[*wire.Job](t, m)
		if gap := time.Since(ended); gap < delay-100*time.Millisecond {
			t.Fatalf("a.test's next job came %v after the result of the one before: want at least its Crawl-delay %v (kept across the restart)", gap, delay)
		}
		if len(next.Jobs) != 1 || next.Jobs[0].JobID == first[0].JobID {
			t.Fatalf("next JOB %+v: want a.test's other job", next.Jobs)
		}
		return
	}
}

// TestRobotsExpiredNotRestored: a copy kept in the store is restored only
// until it expires. Of two stored copies, the live one is sent before its
// host's job; the expired one is not (its host's job goes out as a probe),
// and its record is deleted with the first batch.
func TestRobotsExpiredNotRestored(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st := openStore(t, dir, store.SyncAlways)
	t.Cleanup(func() { st.Close() })
	now := time.Now()
	b := st.NewBatch()
	for _, r := range []struct {
		host string
		rec  store.RobotsRecord
	}{
		{"old.test", store.RobotsRecord{Origin: "http://old.test", CrawlDelay: 5 * time.Second, Expires: now.Add(-time.Second), Body: []byte("User-agent: *\nCrawl-delay: 5\n")}},
		{"new.test", store.RobotsRecord{Origin: "http://new.test", Expires: now.Add(time.Hour), Body: []byte("User-agent: *\nDisallow: /x\n")}},
	} {
		if err := b.PutRobots(r.host, &r.rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Commit(b); err != nil {
		t.Fatal(err)
	}
	s, stop := runServer(t, Options{Store: st, Coord: coord.Config{Broker: broker.Config{Politeness: broker.Politeness{ShareRobots: true}}}})
	p := dial(t, s.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p1", 0)
	p.send(&wire.Submit{Req: 2, Jobs: []wire.SubmitItem{{Key: key("http://old.test/1")}, {Key: key("http://new.test/1")}}})
	expect[*wire.Submitted](t, p.recv())
	w := dial(t, s.PeersEndpoint())
	robotsHello(t, w, "w1", 2)
	var copies []string
	jobs := map[string]bool{}
	for len(jobs) < 2 {
		switch m := w.recv().(type) {
		case *wire.Robots:
			if jobs["http://new.test/1"] {
				t.Fatalf("new.test's copy came after its job")
			}
			copies = append(copies, m.Origin)
		case *wire.Job:
			for _, it := range m.Jobs {
				jobs[it.Key.URL] = true
			}
		default:
			t.Fatalf("worker got %s %+v, want ROBOTS or JOB", m.Command(), m)
		}
	}
	if !slices.Equal(copies, []string{"http://new.test"}) {
		t.Fatalf("copies sent %q, want only new.test's (old.test's expired before the restart)", copies)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var kept []string
	if err := st.ReadRobots(func(h string, _ *store.RobotsRecord) error { kept = append(kept, h); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kept, []string{"new.test"}) {
		t.Fatalf("robots records left in the store: %q, want new.test's (old.test's deleted)", kept)
	}
}
