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
// it is killed.
func peerMain() int {
	f := strings.Split(os.Getenv(peerEnv), ";")
	if len(f) != 4 {
		fmt.Fprintln(os.Stderr, "peer: want ADDRS;PREFIX;FROM;TO")
		return 2
	}
	from, _ := strconv.Atoi(f[2])
	to, _ := strconv.Atoi(f[3])
	rdb := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: strings.Split(f[0], ",")})
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
	for {
		l.Tick(time.Now())
		time.Sleep(200 * time.Millisecond)
	}
}

// A coordinator process is SIGKILLed while holding thousands of keys on
// which another coordinator's sessions wait: within a few heartbeats the
// survivor sweeps it and every waiting session is handed its key; none is
// lost and none is handed twice.
func TestCoordinatorKilled(t *testing.T) {
	rdb := client(t)
	n := faultKeys(2000, 20_000)
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
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != fmt.Sprintf("held %d", n) {
		t.Fatalf("peer process said %q, %v; want held %d", line, err, n)
	}
	live, err := newLedger(context.Background(), rdb, Config{Prefix: prefix, Heartbeat: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.halt() })
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
