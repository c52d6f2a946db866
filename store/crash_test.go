package store

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Crash-test protocol: the child writes, for writer w, batches with ids
// w, w+crashWriters, w+2*crashWriters, ... (each batch: the done key of
// testKey(id) and job id+1) and prints one line per event on stdout:
//
//	s <id> <unix ns>   Apply called for id
//	a <id>             id acknowledged (durable under the policy)
const (
	crashWriters  = 4
	crashInflight = 256 // batches in flight per writer
)

// TestCrashChild is the child process of TestCrashKill: it writes until it
// is killed.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("DROVER_STORE_CRASH_DIR")
	if dir == "" {
		t.Skip("helper process for TestCrashKill")
	}
	policy, err := ParseSync(os.Getenv("DROVER_STORE_CRASH_SYNC"))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	s, err := Open(Options{Path: dir, Sync: policy, Log: quiet})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if _, err := fmt.Fprintf(os.Stdout, format, args...); err != nil {
			os.Exit(3)
		}
	}
	var wg sync.WaitGroup
	for w := range crashWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem := make(chan struct{}, crashInflight)
			for i := w; ; i += crashWriters {
				b := s.NewBatch()
				k := keyRec(i, KeyDone, base)
				j := JobRecord{ID: uint64(i) + 1, FP: k.FP, Key: k.Key, State: JobDone, Created: base, Updated: base, Payload: []byte("p")}
				if err := b.PutKey(&k); err != nil {
					os.Exit(4)
				}
				if err := b.PutJob(&j); err != nil {
					os.Exit(4)
				}
				sem <- struct{}{}
				say("s %d %d\n", i, time.Now().UnixNano())
				s.Apply(b, func(err error) {
					<-sem
					if err != nil {
						say("error %d %v\n", i, err)
						return
					}
					say("a %d\n", i)
				})
			}
		}()
	}
	wg.Wait() // never: the parent kills us
}

// crashRun is what the parent saw of one child.
type crashRun struct {
	mu      sync.Mutex
	sent    map[int]int64 // id -> Apply time, unix ns
	acked   map[int]bool
	errs    []string
	target  int
	reached chan struct{}
}

func (r *crashRun) line(l string) {
	f := strings.Fields(l)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case len(f) == 3 && f[0] == "s":
		i, err1 := strconv.Atoi(f[1])
		ns, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 == nil && err2 == nil {
			r.sent[i] = ns
		}
	case len(f) == 2 && f[0] == "a":
		if i, err := strconv.Atoi(f[1]); err == nil {
			r.acked[i] = true
			if r.reached != nil && len(r.acked) >= r.target {
				close(r.reached)
				r.reached = nil
			}
		}
	default:
		if len(r.errs) < 5 {
			r.errs = append(r.errs, l)
		}
	}
}

// TestCrashKill runs a child that writes batches and SIGKILLs it after a
// random number of acknowledgements, then reopens the store and checks:
// every acknowledged batch is there (always, batch), what is there is a
// prefix of each writer's sequence with no holes (all policies), and each
// batch is all there or not at all. It reports what was lost.
func TestCrashKill(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	for _, tc := range []struct {
		policy   Sync
		lossless bool
	}{
		{SyncAlways, true},
		{SyncBatch, true},
		{SyncNone, false},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			for range 2 {
				killAfter := 100 + rng.IntN(3000)
				crashRound(t, tc.policy, tc.lossless, killAfter)
			}
		})
	}
}

func crashRound(t *testing.T, policy Sync, lossless bool, killAfter int) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$")
	cmd.Env = append(os.Environ(), "DROVER_STORE_CRASH_DIR="+dir, "DROVER_STORE_CRASH_SYNC="+string(policy))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	run := &crashRun{sent: map[int]int64{}, acked: map[int]bool{}, target: killAfter, reached: make(chan struct{})}
	reached := run.reached
	eof := make(chan struct{})
	go func() {
		defer close(eof)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			run.line(sc.Text())
		}
	}()
	select {
	case <-reached:
	case <-eof:
	case <-time.After(60 * time.Second):
	}
	killAt := time.Now().UnixNano()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-eof // everything the child wrote before dying
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die of SIGKILL: %v (its odd lines: %q)", err, run.errs)
	}
	if len(run.acked) < killAfter {
		t.Fatalf("child acknowledged %d batches before the kill, want %d (its odd lines: %q)", len(run.acked), killAfter, run.errs)
	}

	s, err := Open(Options{Path: dir, Log: quiet})
	if err != nil {
		t.Fatalf("reopening after SIGKILL: %v", err)
	}
	keys, jobs := map[[16]byte]bool{}, map[int]bool{}
	if _, err := s.Recover(func(r Record) error {
		switch r.Kind {
		case KindKey:
			keys[r.Key.FP] = true
		case KindJob:
			jobs[int(r.Job.ID)-1] = true
		}
		return nil
	}); err != nil {
		t.Fatalf("recover after SIGKILL: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Atomic batches: a key without its job or the reverse is a torn batch.
	if len(keys) != len(jobs) {
		t.Errorf("%d keys but %d jobs recovered: a batch was torn", len(keys), len(jobs))
	}
	for i := range jobs {
		if !keys[testFP(i)] {
			t.Fatalf("job %d recovered without its key", i)
		}
		if _, ok := run.sent[i]; !ok {
			t.Fatalf("recovered %d, which was never sent", i)
		}
	}
	// Prefixes: writer w's recovered ids are w, w+W, ... with no hole.
	for w := range crashWriters {
		seen := true
		for i := w; i < w+crashWriters*(len(run.sent)+1); i += crashWriters {
			if jobs[i] && !seen {
				t.Fatalf("writer %d: %d recovered after a hole", w, i)
			}
			seen = jobs[i]
		}
	}
	lostAcked, lost := 0, 0
	var oldest time.Duration
	for i, at := range run.sent {
		if jobs[i] {
			continue
		}
		lost++
		if run.acked[i] {
			lostAcked++
		}
		if age := time.Duration(killAt - at); age > oldest {
			oldest = age
		}
	}
	t.Logf("sync=%s: killed after %d acks; %d sent, %d acked, %d recovered; lost %d unacknowledged (oldest sent %v before the kill), %d acknowledged",
		policy, killAfter, len(run.sent), len(run.acked), len(jobs), lost-lostAcked, oldest.Round(time.Microsecond), lostAcked)
	if lossless && lostAcked > 0 {
		t.Errorf("sync=%s lost %d acknowledged batches", policy, lostAcked)
	}
}
