package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"drover/coord"
	"drover/coord/broker"
	"drover/net/wire"
	"drover/net/zsock"
	"drover/store"
)

// TestUnrecordedChild is the coordinator process of
// TestUnrecordedDispatchSurvivesKill and TestSubmitMemoSurvivesKill: a server on a store whose batches a
// gate can hold (commands on stdin: close, open, stop), killed by the
// parent.
func TestUnrecordedChild(t *testing.T) {
	dir := os.Getenv("DROVER_UNRECORDED_DIR")
	if dir == "" {
		t.Skip("helper process for TestUnrecordedDispatchSurvivesKill")
	}
	st, err := store.Open(store.Options{Path: dir, Sync: store.SyncAlways})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	g := &gatedStore{}
	cc := coord.Config{Heartbeat: 5 * time.Second, ReclaimTimeout: time.Minute}
	if os.Getenv("DROVER_UNRECORDED_ROBOTS") != "" {
		// TestRobotsSurviveKill: robots.txt shared by the fleet, and the
		// politeness clock run from the start, as drover serve does.
		cc.Broker.Politeness = broker.Politeness{ShareRobots: true, Since: time.Now()}
	}
	s, err := New(Options{Peers: zsock.Ephemeral, Admin: zsock.Ephemeral, Events: "-", Store: st, BeforeCommit: g.beforeCommit, Coord: cc})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx) }()
	fmt.Println("ready", s.PeersEndpoint(), s.AdminEndpoint())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		switch sc.Text() {
		case "close":
			g.close()
		case "open":
			g.open()
		case "stop":
			g.open()
			cancel()
			if err := <-ran; err != nil {
				fmt.Println("error", err)
				os.Exit(2)
			}
			if err := st.Close(); err != nil {
				fmt.Println("error", err)
				os.Exit(2)
			}
		}
		fmt.Println("did", sc.Text())
	}
	os.Exit(0) // stdin closed: the parent is gone
}

// unrecChild is a running TestUnrecordedChild.
type unrecChild struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	peers string
	admin string
}

func startUnrecChild(t *testing.T, dir string, env ...string) *unrecChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestUnrecordedChild$")
	cmd.Env = append(append(os.Environ(), "DROVER_UNRECORDED_DIR="+dir), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &unrecChild{t: t, cmd: cmd, in: in, lines: make(chan string, 16)}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	f := strings.Fields(c.line("ready "))
	if len(f) != 3 {
		t.Fatalf("coordinator process said %q, want ready PEERS ADMIN", f)
	}
	c.peers, c.admin = f[1], f[2]
	return c
}

// line returns the child's next line, which must start with prefix.
func (c *unrecChild) line(prefix string) string {
	c.t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok || !strings.HasPrefix(l, prefix) {
			c.t.Fatalf("coordinator process said %q (open %v), want %q...", l, ok, prefix)
		}
		return l
	case <-time.After(30 * time.Second):
		c.t.Fatalf("coordinator process: no %q within 30s", prefix)
	}
	return ""
}

// do sends a command and waits until the child did it.
func (c *unrecChild) do(cmd string) {
	c.t.Helper()
	if _, err := fmt.Fprintln(c.in, cmd); err != nil {
		c.t.Fatal(err)
	}
	c.line("did " + cmd)
}

func (c *unrecChild) kill() {
	c.cmd.Process.Kill()
	c.cmd.Wait()
}

// TestUnrecordedDispatchSurvivesKill: a JOB does not wait for the fsync
// of its dispatch, and a SIGKILL that loses the dispatch never lets one
// run identity (job, attempt) name two runs. A coordinator process
// dispatches two jobs, whose submits are durable, to worker w-a while its
// store's batches are held back: the JOBs leave at once (the old design
// held them until durable: this test fails there). The process is killed:
// the store never saw the dispatches. After a restart on the store, worker
// w-b comes first and gets job 1 as attempt 2 (attempt 1 is skipped: it
// may be running unrecorded), and that first dispatch after a restart
// waits for its batch. Then w-a reconnects holding both runs: job 2's
// attempt 1 is adopted (its RESULT recorded), job 1's attempt 1 is
// cancelled and its skipped history entry names w-a.
func TestUnrecordedDispatchSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := filepath.Join(t.TempDir(), "store")
	c1 := startUnrecChild(t, dir)
	p := dial(t, c1.peers)
	hello(t, p, wire.RoleProducer, "p1", 0)
	p.send(&wire.Submit{Req: 2, Jobs: []wire.SubmitItem{{Key: key("http://a.test/1")}, {Key: key("http://a.test/2")}}})
	expect[*wire.Submitted](t, p.recv()) // durable

	c1.do("close")
	a := dial(t, c1.peers)
	hello(t, a, wire.RoleWorker, "w-a", 2)
	var runs []wire.Run
	for len(runs) < 2 {
		m, err := a.recvWithin(10 * time.Second)
		if err != nil {
			t.Fatalf("worker got %v while the dispatch's batch was not durable: %v; want the JOBs at once", runs, err)
		}
		for _, it := range expect[*wire.Job](t, m).Jobs {
			runs = append(runs, wire.Run{JobID: it.JobID, Attempt: it.Attempt})
		}
	}
	slices.SortFunc(runs, func(x, y wire.Run) int { return int(x.JobID) - int(y.JobID) })
	if want := []wire.Run{{JobID: 1, Attempt: 1}, {JobID: 2, Attempt: 1}}; !slices.Equal(runs, want) {
		t.Fatalf("runs %v, want %v", runs, want)
	}
	c1.kill() // the dispatches were never written

	c2 := startUnrecChild(t, dir)
	c2.do("close")
	b := dial(t, c2.peers)
	hello(t, b, wire.RoleWorker, "w-b", 1)
	if m, err := b.recvWithin(500 * time.Millisecond); err == nil {
		t.Fatalf("w-b got %s %+v before the first dispatch after the restart was durable", m.Command(), m)
	}
	c2.do("open")
	jb := expect[*wire.Job](t, b.recv())
	if len(jb.Jobs) != 1 || jb.Jobs[0].JobID != 1 || jb.Jobs[0].Attempt != 2 {
		t.Fatalf("w-b got %+v: want job 1 as attempt 2 (attempt 1 skipped)", jb.Jobs)
	}

	a2 := dial(t, c2.peers)
	a2.send(&wire.Hello{Req: 1, Role: wire.RoleWorker, ID: "w-a", Host: "test", Slots: 2, Held: runs})
	w := expect[*wire.Welcome](t, a2.recv())
	if want := []wire.Run{{JobID: 1, Attempt: 1}}; !slices.Equal(w.Cancel, want) {
		t.Fatalf("welcome cancels %v, want %v: job 1's attempt 1 dropped, job 2's adopted", w.Cancel, want)
	}
	a2.send(&wire.Result{Req: 2, Items: []wire.ResultItem{{JobID: 2, Attempt: 1, Outcome: wire.OutcomeOK}}})
	b.send(&wire.Result{Req: 2, Items: []wire.ResultItem{{JobID: 1, Attempt: 2, Outcome: wire.OutcomeOK}}})
	for _, c := range []*rawClient{a2, b} {
		ok := expect[*wire.ResultOK](t, c.recv())
		if ok.Items[0].Status != wire.ResultRecorded {
			t.Fatalf("result-ok %+v: want recorded", ok.Items)
		}
	}
	c2.do("stop")

	st := openStore(t, dir, store.SyncAlways)
	defer st.Close()
	want := map[uint64][]store.Attempt{
		1: {{Worker: "w-a", Outcome: broker.OutcomeSkipped}, {Worker: "w-b", Outcome: "ok"}},
		2: {{Worker: "w-a", Outcome: "ok"}},
	}
	for id, hist := range want {
		r, found, err := st.GetJob(id)
		if err != nil || !found {
			t.Fatalf("job %d in the store: %v %v", id, found, err)
		}
		got := make([]store.Attempt, len(r.History))
		for i, a := range r.History {
			got[i] = store.Attempt{Worker: a.Worker, Outcome: a.Outcome}
		}
		if r.State != store.JobDone || r.Attempts != len(hist) || !slices.Equal(got, hist) {
			t.Errorf("job %d stored %s, %d attempts, history %+v: want done, %d attempts, %+v", id, r.State, r.Attempts, got, len(hist), hist)
		}
	}
}

// TestCleanRestartSkipsNothing: a coordinator process stopped cleanly
// (what SIGTERM and drover stop do: workers told, their jobs requeued,
// every record durable, then the store's clean mark) restarts without
// supposing any attempt ran unrecorded: the jobs its worker held go out
// again as the next attempt, at once, and no history entry says skipped.
// That restart then dies by SIGKILL with a dispatch unrecorded: the mark
// of the clean stop before it does not speak for it, and the next restart
// skips the attempt as after any crash.
func TestCleanRestartSkipsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := filepath.Join(t.TempDir(), "store")
	c1 := startUnrecChild(t, dir)
	p := dial(t, c1.peers)
	hello(t, p, wire.RoleProducer, "p1", 0)
	p.send(&wire.Submit{Req: 2, Jobs: []wire.SubmitItem{{Key: key("http://a.test/1")}, {Key: key("http://a.test/2")}}})
	expect[*wire.Submitted](t, p.recv())
	a := dial(t, c1.peers)
	hello(t, a, wire.RoleWorker, "w-a", 2)
	got := recvRuns(t, a, 2)
	if want := []wire.Run{{JobID: 1, Attempt: 1}, {JobID: 2, Attempt: 1}}; !slices.Equal(got, want) {
		t.Fatalf("w-a got %v, want %v", got, want)
	}
	c1.do("stop") // the clean shutdown: w-a is told, its jobs go back
	c1.kill()     // the process (its store closed already)

	// A clean restart: attempt 2 of each job leaves at once, while the
	// store holds every batch back (after a crash the first dispatch of
	// each job waits for its batch), and nothing is skipped.
	c2 := startUnrecChild(t, dir)
	c2.do("close")
	b := dial(t, c2.peers)
	hello(t, b, wire.RoleWorker, "w-b", 2)
	got = recvRuns(t, b, 2)
	if want := []wire.Run{{JobID: 1, Attempt: 2}, {JobID: 2, Attempt: 2}}; !slices.Equal(got, want) {
		t.Fatalf("after a clean restart w-b got %v, want %v (attempt 1 left with w-a, none skipped)", got, want)
	}
	c2.kill() // SIGKILL: both dispatches unrecorded

	// After the crash: w-c comes first and gets job 1 as attempt 3
	// (attempt 2 skipped); w-b reconnects holding both runs: job 2's
	// attempt 2 is adopted, job 1's is dropped.
	c3 := startUnrecChild(t, dir)
	c := dial(t, c3.peers)
	hello(t, c, wire.RoleWorker, "w-c", 1)
	if got := recvRuns(t, c, 1); !slices.Equal(got, []wire.Run{{JobID: 1, Attempt: 3}}) {
		t.Fatalf("after a crash w-c got %v, want job 1 as attempt 3 (attempt 2 skipped: it may be running)", got)
	}
	b2 := dial(t, c3.peers)
	b2.send(&wire.Hello{Req: 1, Role: wire.RoleWorker, ID: "w-b", Host: "test", Slots: 2, Held: got})
	w := expect[*wire.Welcome](t, b2.recv())
	if want := []wire.Run{{JobID: 1, Attempt: 2}}; !slices.Equal(w.Cancel, want) {
		t.Fatalf("welcome cancels %v, want %v: job 1's attempt 2 dropped, job 2's adopted", w.Cancel, want)
	}
	c.send(&wire.Result{Req: 2, Items: []wire.ResultItem{{JobID: 1, Attempt: 3, Outcome: wire.OutcomeOK}}})
	b2.send(&wire.Result{Req: 2, Items: []wire.ResultItem{{JobID: 2, Attempt: 2, Outcome: wire.OutcomeOK}}})
	for _, cl := range []*rawClient{c, b2} {
		if ok := expect[*wire.ResultOK](t, cl.recv()); ok.Items[0].Status != wire.ResultRecorded {
			t.Fatalf("result-ok %+v: want recorded", ok.Items)
		}
	}
	c3.do("stop")

	st := openStore(t, dir, store.SyncAlways)
	defer st.Close()
	want := map[uint64][]store.Attempt{
		1: {{Worker: "w-a", Outcome: "left"}, {Worker: "w-b", Outcome: broker.OutcomeSkipped}, {Worker: "w-c", Outcome: "ok"}},
		2: {{Worker: "w-a", Outcome: "left"}, {Worker: "w-b", Outcome: "ok"}},
	}
	for id, hist := range want {
		r, found, err := st.GetJob(id)
		if err != nil || !found {
			t.Fatalf("job %d in the store: %v %v", id, found, err)
		}
		got := make([]store.Attempt, len(r.History))
		for i, a := range r.History {
			got[i] = store.Attempt{Worker: a.Worker, Outcome: a.Outcome}
		}
		if r.State != store.JobDone || r.Attempts != len(hist) || !slices.Equal(got, hist) {
			t.Errorf("job %d stored %s, %d attempts, history %+v: want done, %d attempts, %+v", id, r.State, r.Attempts, got, len(hist), hist)
		}
	}
}

// recvRuns reads JOBs on c until it has n runs, sorted.
func recvRuns(t *testing.T, c *rawClient, n int) []wire.Run {
	t.Helper()
	var runs []wire.Run
	for len(runs) < n {
		m, err := c.recvWithin(30 * time.Second)
		if err != nil {
			t.Fatalf("got %v, want %d runs: %v", runs, n, err)
		}
		if _, beat := m.(*wire.Heartbeat); beat {
			continue
		}
		for _, it := range expect[*wire.Job](t, m).Jobs {
			runs = append(runs, wire.Run{JobID: it.JobID, Attempt: it.Attempt})
		}
	}
	slices.SortFunc(runs, func(x, y wire.Run) int { return int(x.JobID) - int(y.JobID) })
	return runs
}
