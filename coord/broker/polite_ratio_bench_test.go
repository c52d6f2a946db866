package broker

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"drover/admin"
	"drover/coord/id"
)

// hostsBench is one backlog of BenchmarkDispatchHosts and
// BenchmarkDispatchHostsRatio: 100 single-slot workers and 200,000 queued
// jobs over a number of hosts, kept up by 100 new jobs a cycle.
type hostsBench struct {
	br    *Broker
	hosts []string
	next  int
	now   time.Time
	as    []Assignment
	fin   []Finished
	evs   []admin.Event
	specs []Spec
}

const benchWorkers, benchBacklog = 100, 200_000

func newHostsBench(b *testing.B, hosts int, lim Limits) *hostsBench {
	br, err := New(Config{Jitter: -1, MaxRequestFailures: 1, DoneRetention: 1000, Politeness: Politeness{Default: lim}})
	if err != nil {
		b.Fatal(err)
	}
	s := &hostsBench{br: br, hosts: make([]string, hosts), now: epoch, specs: make([]Spec, benchWorkers)}
	for i := range s.hosts {
		s.hosts[i] = "h" + strconv.Itoa(i) + ".example.com"
	}
	for i := range benchWorkers {
		if err := br.Register(s.now, id.Session(i+1), WorkerInfo{ID: "w" + strconv.Itoa(i)}, nil); err != nil {
			b.Fatal(err)
		}
	}
	for range benchBacklog {
		br.Submit(s.now, s.spec())
	}
	br.TakeEvents(nil)
	return s
}

// spec is the next job, round robin over the hosts.
func (s *hostsBench) spec() Spec {
	h := s.hosts[s.next%len(s.hosts)]
	key := id.Key{Crawler: "c", Processor: "p", URL: "https://" + h + "/page/" + strconv.Itoa(s.next)}
	s.next++
	return Spec{Key: key, Host: h}
}

// decide runs the part of a cycle that is timed: Tick, Dispatch and the
// results of the dispatched jobs, 1 ms later than the last cycle. It
// returns the decisions.
func (s *hostsBench) decide(b *testing.B) int {
	s.now = s.now.Add(time.Millisecond)
	s.br.Tick(s.now)
	s.as = s.br.Dispatch(s.now, s.as[:0])
	for _, a := range s.as {
		if _, err := s.br.Result(s.now, a.Session, Run{Job: a.Job, Attempt: a.Attempt}, Outcome{Kind: OK}); err != nil {
			b.Fatal(err)
		}
	}
	return len(s.as)
}

// refill submits the cycle's new jobs and takes what the broker produced.
func (s *hostsBench) refill() {
	for i := range s.specs {
		s.specs[i] = s.spec()
	}
	for i := range s.specs {
		s.br.Submit(s.now, s.specs[i])
	}
	s.fin = s.br.TakeFinished(s.fin[:0])
	s.evs = s.br.TakeEvents(s.evs[:0])
}

// threadCPU is the CPU time the calling thread has used, to the
// nanosecond (CLOCK_THREAD_CPUTIME_ID: getrusage's thread times advance
// by scheduler ticks, and a block of a few milliseconds often read 0).
func threadCPU(b *testing.B) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ts.Nano())
}

// BenchmarkDispatchHostsRatio measures what the issue asks for — dispatch
// decisions per second with the backlog on 1 host against 100,000 hosts,
// politeness off — in a form a loaded machine does not swing: both
// backlogs are built once, and every iteration runs a block of cycles on
// each, the order alternating per iteration, each cycle's Tick, Dispatch
// and results timed by the CPU time of the thread that runs them (the
// goroutine is locked to it), so time spent waiting for a CPU while other
// processes run does not count. It reports decisions per CPU-second of
// each side and ratio = 100,000 hosts / 1 host (goal ≥ 0.9); wall-ratio is
// the same ratio by wall-clock time, for comparison. Run it several times
// and compare with benchstat:
//
//	go test -run '^$' -bench DispatchHostsRatio -benchtime 40x -count 6 ./coord/broker | tee /tmp/ratio.txt
func BenchmarkDispatchHostsRatio(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	sides := [2]*hostsBench{newHostsBench(b, 1, Limits{}), newHostsBench(b, 100_000, Limits{})}
	const block = 50 // cycles per side per iteration
	var cpu, wall [2]time.Duration
	var decisions [2]int
	b.ResetTimer()
	for i := range b.N {
		for k := range 2 {
			side := (i + k) % 2 // 0,1 then 1,0
			s := sides[side]
			for range block {
				w0, c0 := time.Now(), threadCPU(b)
				decisions[side] += s.decide(b)
				cpu[side] += threadCPU(b) - c0
				wall[side] += time.Since(w0)
				s.refill()
			}
		}
	}
	b.StopTimer()
	for side := range sides {
		if decisions[side] < b.N*block*benchWorkers {
			b.Fatalf("side %d: only %d decisions in %d cycles", side, decisions[side], b.N*block)
		}
	}
	rate := func(side int, d [2]time.Duration) float64 { return float64(decisions[side]) / d[side].Seconds() }
	b.ReportMetric(rate(0, cpu), "1host-decisions/cpu-s")
	b.ReportMetric(rate(1, cpu), "100khosts-decisions/cpu-s")
	b.ReportMetric(rate(1, cpu)/rate(0, cpu), "ratio")
	b.ReportMetric(rate(1, wall)/rate(0, wall), "wall-ratio")
}
