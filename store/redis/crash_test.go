package redis

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"drover/coord/id"
	"drover/coord/ledger"
)

// peerEnv makes the test binary a coordinator process (peerMain) instead
// of running tests: DROVER_REDIS_PEER=ADDRS;PREFIX;FROM;TO.
const peerEnv = "DROVER_REDIS_PEER"

// peerMain is a coordinator's ledger in its own process: it requests keys
// FROM..TO-1 for session 1, prints "held N" and keeps heartbeating until
// it is killed. When it finds it was paused (a gap of over three
// heartbeats between two of its ticks: SIGSTOP, SIGCONT), it acts on what
// it still believes it holds, queueing every key for session 1 and then
// releasing the session, and prints what the cluster made of it: "after
// pause: queued Q not-owner N other O rejoined R swept S".
func peerMain() int {
	f := strings.Split(os.Getenv(peerEnv), ";")
	if len(f) != 4 {
		fmt.Fprintln(os.Stderr, "peer: want ADDRS;PREFIX;FROM;TO")
		return 2
	}
	from, _ := strconv.Atoi(f[2])
	to, _ := strconv.Atoi(f[3])
	rdb := newClusterClient(&goredis.ClusterOptions{Addrs: strings.Split(f[0], ",")})
	l, err := newLedger(context.Background(), rdb, Config{Prefix: f[1], Heartbeat: time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer:", err)
		return 1
	}
	held := 0
	for i := from; i < to; i += 100 {
		batch := make([]ledger.Item, 0, 100)
		for j := i; j < min(i+100, to); j++ {
			batch = append(batch, webKey(j))
		}
		for _, r := range l.RequestBatch(time.Now(), 1, 1, batch, nil) {
			if r.Verdict == ledger.OK {
				held++
			}
		}
	}
	if l.Err() != nil {
		fmt.Fprintln(os.Stderr, "peer:", l.Err())
		return 1
	}
	fmt.Printf("held %d\n", held)
	last := time.Now()
	for {
		now := time.Now()
		l.Tick(now)
		if now.Sub(last) > 3*time.Second {
			var fps []id.Fingerprint
			for i := from; i < to; i++ {
				fps = append(fps, webKey(i).FP)
			}
			queued, notOwner, other := 0, 0, 0
			for _, r := range l.QueueBatch(now, 1, fps, nil) {
				switch {
				case r.Verdict == ledger.OK:
					queued++
				case r.Reason == ledger.ReasonNotOwner:
					notOwner++
				default:
					other++
				}
			}
			l.Release(now, 1)
			fmt.Printf("after pause: queued %d not-owner %d other %d rejoined %d swept %d\n", queued, notOwner, other, l.Rejoined, l.Swept)
		}
		last = now
		time.Sleep(200 * time.Millisecond)
	}
}

// startPeer starts a coordinator process (peerMain) holding keys 0..n-1
// for its session 1, and a live coordinator here on the same prefix; it
// returns the process, its output after "held n", and the live ledger.
func startPeer(t *testing.T, rdb goredis.UniversalClient, n int) (*exec.Cmd, *bufio.Reader, *Ledger) {
	t.Helper()
	prefix := fmt.Sprintf("k%d", prefixes.Add(1))
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s;%s;0;%d", peerEnv, strings.Join(cluster.Addrs(), ","), prefix, n))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != fmt.Sprintf("held %d", n) {
		t.Fatalf("peer process said %q, %v; want held %d", line, err, n)
	}
	live, err := newLedger(context.Background(), rdb, Config{Prefix: prefix, Heartbeat: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.halt() })
	return cmd, r, live
}

// A coordinator process is SIGKILLed while holding thousands of keys on
// which another coordinator's sessions wait: within a few heartbeats the
// survivor sweeps it and every waiting session is handed its key; none is
// lost and none is handed twice.
func TestCoordinatorKilled(t *testing.T) {
	rdb := client(t)
	n := faultKeys(2000, 20_000)
	cmd, _, live := startPeer(t, rdb, n)
	// Sessions 10 and 11 wait on every key, in that order.
	for _, s := range []uint64{10, 11} {
		for i := 0; i < n; i += 100 {
			batch := make([]ledger.Item, 0, 100)
			for j := i; j < i+100; j++ {
				batch = append(batch, webKey(j))
			}
			for j, r := range live.RequestBatch(time.Now(), id.Session(s), s, batch, nil) {
				if r.Verdict != ledger.Wait {
					t.Fatalf("session %d, key %d: %v %v; want wait", s, i+j, r.Verdict, r.Reason)
				}
			}
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed := time.Now()
	got := waitAnswers(t, []*Ledger{live}, n)
	seen := make(map[string]bool)
	for _, a := range got {
		if a.Session != 10 || a.Verdict != ledger.OK || a.Reason != ledger.ReasonHandover {
			t.Fatalf("answer %+v; want ok handover to session 10, first in line", a)
		}
		if seen[a.FP.String()] {
			t.Fatalf("key %v handed over twice", a.FP)
		}
		seen[a.FP.String()] = true
	}
	t.Logf("%d keys handed over %v after the SIGKILL (alive TTL 3s)", len(got), time.Since(killed).Round(100*time.Millisecond))
	for _, w := range live.Waiters(webKey(0).FP) {
		if w.Session != 11 {
			t.Fatalf("waiters of key 0: %+v; want session 11 only", live.Waiters(webKey(0).FP))
		}
	}
	if live.Swept != 1 {
		t.Fatalf("swept %d coordinators; want 1", live.Swept)
	}
}

// A coordinator process is paused (SIGSTOP) past its lease on the cluster
// (three heartbeats) while holding keys others wait on: the live one
// sweeps it and hands every key to the first waiter. Resumed (SIGCONT),
// the paused one still believes it holds them and acts on it: every queue
// it sends is refused (not-owner) and its release changes nothing, so
// what it does after a pause is a no-op; it rejoins the live
// coordinators once, is not swept again, and sweeps no one; nothing is
// handed over a second time and the second waiters still wait.
func TestCoordinatorPaused(t *testing.T) {
	rdb := client(t)
	const n = 500
	cmd, out, live := startPeer(t, rdb, n)
	for _, s := range []uint64{10, 11} {
		for i := 0; i < n; i += 100 {
			batch := make([]ledger.Item, 0, 100)
			for j := i; j < i+100; j++ {
				batch = append(batch, webKey(j))
			}
			for j, r := range live.RequestBatch(time.Now(), id.Session(s), s, batch, nil) {
				if r.Verdict != ledger.Wait {
					t.Fatalf("session %d, key %d: %v %v; want wait", s, i+j, r.Verdict, r.Reason)
				}
			}
		}
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	got := waitAnswers(t, []*Ledger{live}, n)
	for _, a := range got {
		if a.Session != 10 || a.Verdict != ledger.OK {
			t.Fatalf("answer %+v while the peer is paused; want ok to session 10", a)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var queued, notOwner, other, rejoined, swept int
	if _, err := fmt.Sscanf(line, "after pause: queued %d not-owner %d other %d rejoined %d swept %d", &queued, &notOwner, &other, &rejoined, &swept); err != nil {
		t.Fatalf("peer said %q: %v", line, err)
	}
	if queued != 0 || notOwner != n || other != 0 {
		t.Fatalf("the resumed peer's queue of its old keys: %d queued, %d not-owner, %d other; want all %d refused not-owner", queued, notOwner, other, n)
	}
	if rejoined != 1 || swept != 0 {
		t.Fatalf("the resumed peer rejoined %d times and swept %d; want 1 and 0", rejoined, swept)
	}
	// Three more heartbeats: the live one does not sweep the rejoined
	// peer again, and no key moves.
	until := time.Now().Add(3 * time.Second)
	var more []ledger.Answer
	for time.Now().Before(until) {
		live.Tick(time.Now())
		more = live.TakeAnswers(more)
		time.Sleep(100 * time.Millisecond) // ticks the heartbeats for a fixed span; asserts nothing happens in it
	}
	if len(more) != 0 || live.Swept != 1 {
		t.Fatalf("after the peer resumed: %d more answers (first %+v), live swept %d; want none and 1", len(more), more, live.Swept)
	}
	for _, i := range []int{0, n / 2, n - 1} {
		it := webKey(i)
		rec, ok := live.LookupKey(time.Now(), it.Key, it.FP)
		ws := live.Waiters(it.FP)
		if !ok || rec.State != ledger.Requested || rec.Owner != 10 || len(ws) != 1 || ws[0].Session != 11 {
			t.Fatalf("key %d after the pause: %+v %v, waiters %+v; want held by session 10, session 11 waiting", i, rec, ok, ws)
		}
	}
}
