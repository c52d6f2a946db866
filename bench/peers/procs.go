package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// freePort asks the OS for a free loopback TCP port. Redis cannot report
// a port it chose itself, so the port is picked here and handed over; the
// short window in which another process could take it is harmless for a
// benchmark (redis-server then fails to start and the run says so).
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// proc is a child process the benchmark started and must stop.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *strings.Builder
	done chan struct{}
}

// stop ends the process (SIGTERM, then SIGKILL after 10 s) and waits.
func (p *proc) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func rssOf(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("RSS of process %d: %w", pid, err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest) // "12345 kB"
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err == nil {
					return kb * 1024, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("RSS of process %d: no VmRSS line in /proc/%d/status", pid, pid)
}

// settledRSS samples p's RSS every second until three samples in a row
// differ by less than 1% (a collector or allocator finishing its work, a
// serve returning memory once a burst is over), or 15 s.
func settledRSS(pid int) (int64, error) {
	prev, err := rssOf(pid)
	if err != nil {
		return 0, err
	}
	steady := 0
	for range 15 {
		time.Sleep(time.Second)
		cur, err := rssOf(pid)
		if err != nil {
			return 0, err
		}
		if d := cur - prev; max(d, -d) < prev/100 {
			if steady++; steady == 2 {
				return cur, nil
			}
		} else {
			steady = 0
		}
		prev = cur
	}
	return prev, nil
}

// start runs name with args, its output kept (the last 64 KiB) for errors;
// ready, when set, is called with each line of stdout until it returns true.
func start(name string, env []string, ready func(line string) bool, timeout time.Duration, args ...string) (*proc, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	var log strings.Builder
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = &capWriter{b: &log}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: filepath.Base(name), cmd: cmd, log: &log, done: make(chan struct{})}
	found := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		signalled := ready == nil
		if signalled {
			close(found)
		}
		for sc.Scan() {
			if !signalled && ready(sc.Text()) {
				signalled = true
				close(found)
			}
		}
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		close(p.done)
	}()
	select {
	case <-found:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited before it was ready: %s", name, log.String())
	case <-time.After(timeout):
		p.stop()
		return nil, fmt.Errorf("%s not ready after %v: %s", name, timeout, log.String())
	}
}

// capWriter keeps what is written, up to 64 KiB.
type capWriter struct{ b *strings.Builder }

func (w *capWriter) Write(p []byte) (int, error) {
	if w.b.Len() < 64<<10 {
		w.b.Write(p)
	}
	return len(p), nil
}

// redisServer is a redis-server the benchmark started on a free loopback
// port, without persistence.
type redisServer struct {
	*proc
	addr string
}

func startRedis(bin string) (*redisServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p, err := start(bin, nil, func(line string) bool { return strings.Contains(line, "Ready to accept connections") }, 30*time.Second,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--protected-mode", "yes", "--loglevel", "notice", "--logfile", "")
	if err != nil {
		return nil, err
	}
	return &redisServer{proc: p, addr: "127.0.0.1:" + strconv.Itoa(port)}, nil
}

// memory returns Redis's INFO used_memory and used_memory_rss.
func redisMemory(ctx context.Context, c *redis.Client) (used, rss int64, err error) {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, 0, fmt.Errorf("redis INFO memory: %w", err)
	}
	get := func(k string) (int64, error) {
		for line := range strings.Lines(info) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), k+":"); ok {
				return strconv.ParseInt(v, 10, 64)
			}
		}
		return 0, fmt.Errorf("redis INFO memory has no %s", k)
	}
	if used, err = get("used_memory"); err != nil {
		return 0, 0, err
	}
	rss, err = get("used_memory_rss")
	return used, rss, err
}

// droverServer is a `drover serve --store memory` the benchmark started,
// every listener on an OS-chosen loopback port.
type droverServer struct {
	*proc
	peers, admin string
	metrics      string // host:port of /metrics
}

var servingLine = regexp.MustCompile(`^drover serving: peers (\S+), admin (\S+), events (\S+)`)

// startDrover starts drover serve on store ("memory" or a directory) with
// loopback ports and politeness off, plus the extra flags.
func startDrover(bin, store string, extra ...string) (*droverServer, error) {
	return startDroverWait(bin, store, 30*time.Second, extra...)
}

// startDroverWait is startDrover waiting up to wait for the serving line
// (a restart on a big store restores first).
func startDroverWait(bin, store string, wait time.Duration, extra ...string) (*droverServer, error) {
	var peers, admin string
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	metrics := "127.0.0.1:" + strconv.Itoa(port)
	args := append([]string{"serve", "--store", store, "--bind", "tcp://127.0.0.1:*", "--admin", "tcp://127.0.0.1:*",
		"--events", "tcp://127.0.0.1:*", "--metrics", metrics,
		"--crawl-min-delay", "0s", "--crawl-per-host", "0"}, extra...) // a queue like asynq's: no per-host politeness
	p, err := start(bin, []string{"DROVER_CONFIG="}, func(line string) bool {
		if m := servingLine.FindStringSubmatch(line); m != nil {
			peers, admin = m[1], strings.TrimSuffix(m[2], ",")
			return true
		}
		return false
	}, wait, args...)
	if err != nil {
		return nil, err
	}
	return &droverServer{proc: p, peers: peers, admin: admin, metrics: metrics}, nil
}

// heapInuse reads go_memstats_heap_inuse_bytes from the server's /metrics.
func (s *droverServer) heapInuse() (int64, error) {
	return s.metric("go_memstats_heap_inuse_bytes")
}

// metric reads one gauge from the server's /metrics.
func (s *droverServer) metric(name string) (int64, error) {
	v, err := s.gauges(name)
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// gauges reads the named gauges from one scrape of the server's /metrics
// (values of one instant), in the order named.
func (s *droverServer) gauges(names ...string) ([]int64, error) {
	resp, err := http.Get("http://" + s.metrics + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("drover /metrics: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("drover /metrics: %w", err)
	}
	vs := make([]int64, len(names))
	found := 0
	for line := range strings.Lines(string(b)) {
		for i, name := range names {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					return nil, fmt.Errorf("drover /metrics: %s: %w", name, err)
				}
				vs[i] = int64(f)
				found++
			}
		}
	}
	if found != len(names) {
		return nil, fmt.Errorf("drover /metrics: %d of the gauges %v found", found, names)
	}
	return vs, nil
}
