// Package redistest starts a local Redis Cluster for tests: six
// redis-server processes on loopback (three masters, three replicas,
// cluster-node-timeout 2000 ms) joined with `redis-cli --cluster create
// --cluster-replicas 1`, and stops them when the test ends. The shell
// equivalent for people is scripts/redis-cluster.sh.
package redistest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Nodes is the number of redis-server processes in a cluster: three
// masters, each with one replica.
const Nodes = 6

// NodeTimeout is the cluster-node-timeout the nodes run with: a master
// unreachable this long is failed over to its replica.
const NodeTimeout = 2000 * time.Millisecond

// Cluster is a running local cluster. Its nodes listen on 127.0.0.1 at
// Ports; node i's cluster bus is Ports[i]+10000.
type Cluster struct {
	Ports   []int
	persist bool // append-only file, fsync always: a node restarts with its data
	dir     string
	procs   []*node
	logf    func(string, ...any)
}

// node is a running redis-server: exited is closed when it has exited,
// and err is then what Wait returned.
type node struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// Available reports whether redis-server and redis-cli are on the PATH,
// and if not, what is missing.
func Available() (bool, string) {
	var missing []string
	for _, b := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return false, strings.Join(missing, " and ") + " not found on PATH (scripts/deps.sh test installs them)"
	}
	return true, ""
}

// Start starts a cluster for t, or skips t when redis-server is not
// installed; the cluster is stopped when t ends. Its nodes keep nothing
// on disk.
func Start(t testing.TB) *Cluster {
	t.Helper()
	return start(t, false)
}

// StartPersistent is Start with every node writing an append-only file
// (fsync always), so a node killed and restarted comes back with its data.
func StartPersistent(t testing.TB) *Cluster {
	t.Helper()
	return start(t, true)
}

func start(t testing.TB, persist bool) *Cluster {
	t.Helper()
	if ok, why := Available(); !ok {
		t.Skipf("Redis Cluster tests need redis-server: %s", why)
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		c := &Cluster{dir: t.TempDir(), logf: t.Logf, persist: persist}
		if err = c.start(); err == nil {
			t.Cleanup(func() {
				if t.Failed() {
					c.LogTails(logLines)
				}
				c.Stop()
			})
			return c
		}
		c.Stop()
		t.Logf("starting a Redis cluster (attempt %d): %v", attempt+1, err)
		c.LogTails(logLines)
	}
	t.Fatalf("starting a Redis cluster: %v", err)
	return nil
}

// Launch starts a cluster with its files under dir, for a TestMain that
// shares one cluster among a package's tests; Stop it when done.
func Launch(dir string, logf func(string, ...any)) (*Cluster, error) {
	if ok, why := Available(); !ok {
		return nil, errors.New(why)
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		c := &Cluster{dir: filepath.Join(dir, strconv.Itoa(attempt)), logf: logf}
		if err = c.start(); err == nil {
			return c, nil
		}
		c.Stop()
	}
	return nil, err
}

// Addrs are the nodes' addresses, host:port.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Ports))
	for i, p := range c.Ports {
		out[i] = "127.0.0.1:" + strconv.Itoa(p)
	}
	return out
}

// URL is a store URL naming every node as a seed: redis://a,b,...
func (c *Cluster) URL() string { return "redis://" + strings.Join(c.Addrs(), ",") }

// freePorts finds n consecutive ports p such that p and its cluster bus
// port p+10000 are free on loopback, all below the kernel's range of
// ephemeral ports when it leaves room (ports 10000 up to it): a node's
// port inside that range could be taken, while the node is down, as the
// local port of any process's outgoing connection, and the node started
// again would then exit at once (bind: address already in use).
func freePorts(n int) ([]int, error) {
	lo, hi := 20000, 45000 // without room below the ephemeral range
	if e, ok := ephemeralLow(); ok && e-10000-n > 10000+1000 {
		lo, hi = 10000, e-10000-n
	}
	for try := 0; try < 50; try++ {
		base := lo + rand.IntN(hi-lo)
		ok := true
		for p := base; p < base+n && ok; p++ {
			for _, q := range []int{p, p + 10000} {
				l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(q))
				if err != nil {
					ok = false
					break
				}
				l.Close()
			}
		}
		if ok {
			ports := make([]int, n)
			for i := range ports {
				ports[i] = base + i
			}
			return ports, nil
		}
	}
	return nil, errors.New("no run of free ports with free bus ports (+10000) found in 50 tries")
}

// ephemeralLow is the first port of the kernel's range of ephemeral
// ports (Linux: /proc/sys/net/ipv4/ip_local_port_range), ok false when
// it cannot be read.
func ephemeralLow() (int, bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, false
	}
	p, err := strconv.Atoi(f[0])
	return p, err == nil
}

func (c *Cluster) start() error {
	ports, err := freePorts(Nodes)
	if err != nil {
		return err
	}
	c.Ports = ports
	for i := range ports {
		if err := c.startNode(i); err != nil {
			return err
		}
	}
	for i := range ports {
		if err := c.waitNode(i, nodeStart); err != nil {
			return err
		}
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("redis-cli --cluster create: %w\n%s", err, out)
	}
	return c.WaitOK(60 * time.Second)
}

// startNode starts (or restarts, keeping its nodes file) node i.
func (c *Cluster) startNode(i int) error {
	p := c.Ports[i]
	dir := filepath.Join(c.dir, strconv.Itoa(p))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("node dir: %w", err)
	}
	aof := []string{"--appendonly", "no"}
	if c.persist {
		aof = []string{"--appendonly", "yes", "--appendfsync", "always"}
	}
	args := append([]string{
		"--port", strconv.Itoa(p), "--bind", "127.0.0.1", "--protected-mode", "yes",
		"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", strconv.Itoa(int(NodeTimeout / time.Millisecond)),
		"--dir", dir, "--save", "", "--daemonize", "no",
		"--logfile", "redis.log"}, aof...)
	cmd := exec.Command("redis-server", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting redis-server on port %d: %w", p, err)
	}
	n := &node{cmd: cmd, exited: make(chan struct{})}
	go func() {
		n.err = cmd.Wait()
		close(n.exited)
	}()
	for len(c.procs) <= i {
		c.procs = append(c.procs, nil)
	}
	c.procs[i] = n
	return nil
}

// logPath is node i's log file.
func (c *Cluster) logPath(i int) string {
	return filepath.Join(c.dir, strconv.Itoa(c.Ports[i]), "redis.log")
}

// logLines is how many of a node's last log lines a failure shows.
const logLines = 15

// LogTail is the last n lines of node i's log file (or why it cannot be
// read).
func (c *Cluster) LogTail(i, n int) string {
	b, err := os.ReadFile(c.logPath(i))
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// LogTails logs the last n lines of every node's log file.
func (c *Cluster) LogTails(n int) {
	for i, p := range c.Ports {
		c.logf("redis-server on port %d, last lines of %s:\n%s", p, c.logPath(i), c.LogTail(i, n))
	}
}

// Stop stops every node (SIGTERM, then SIGKILL after 10 s) and waits for
// them. The nodes stop at once: one by one, each master would wait for
// replicas already gone (shutdown-timeout).
func (c *Cluster) Stop() {
	var wg sync.WaitGroup
	for i := range c.procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.stopNode(i, syscall.SIGTERM)
		}()
	}
	wg.Wait()
}

func (c *Cluster) stopNode(i int, sig syscall.Signal) {
	n := c.procs[i]
	if n == nil {
		return
	}
	c.procs[i] = nil
	_ = n.cmd.Process.Signal(sig)
	select {
	case <-n.exited:
	case <-time.After(10 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.exited
	}
}

// Kill sends SIGKILL to node i and waits for it to exit.
func (c *Cluster) Kill(i int) { c.stopNode(i, syscall.SIGKILL) }

// nodeStart bounds how long a node started (or started again, loading
// its append-only file) may take to answer PING: seconds when idle, with
// a margin for a loaded machine (load 20 on 2 cores).
const nodeStart = 90 * time.Second

// Restart starts node i again after Kill, with its cluster identity, and
// waits for it to answer PING (its cluster_state is WaitOK's).
func (c *Cluster) Restart(i int) error {
	if err := c.startNode(i); err != nil {
		return err
	}
	return c.waitNode(i, nodeStart)
}

// waitNode polls node i with PING until it answers PONG (not LOADING),
// failing at once if it exits, or after timeout; the error has the last
// lines of its log.
func (c *Cluster) waitNode(i int, timeout time.Duration) error {
	n, p := c.procs[i], c.Ports[i]
	deadline := time.Now().Add(timeout)
	for {
		out, err := cli(p, "ping")
		if err == nil && strings.TrimSpace(out) == "PONG" {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("answered %q", strings.TrimSpace(out))
		}
		select {
		case <-n.exited:
			return fmt.Errorf("redis-server on port %d exited (%v) before answering PING; the last lines of its log:\n%s", p, n.err, c.LogTail(i, logLines))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on port %d did not answer PING within %v: %v; the last lines of its log:\n%s", p, timeout, err, c.LogTail(i, logLines))
		}
		select {
		case <-n.exited:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Cli runs redis-cli against node i and returns its output.
func (c *Cluster) Cli(i int, args ...string) (string, error) {
	return cli(c.Ports[i], args...)
}

func cli(port int, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "redis-cli", append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(port)}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("redis-cli -p %d %s: %w: %s", port, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// Info returns field of node i's INFO section (e.g. "replication",
// "role"), or "" if absent.
func (c *Cluster) Info(i int, section, field string) string {
	out, err := c.Cli(i, "info", section)
	if err != nil {
		return ""
	}
	return infoField(out, field)
}

// InfoField is field's value in the output of INFO, or "" if absent.
func InfoField(out, field string) string { return infoField(out, field) }

func infoField(out, field string) string {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), field+":"); ok {
			return v
		}
	}
	return ""
}

// ReplicaOf returns the index of master node m's first replica, or -1.
func (c *Cluster) ReplicaOf(m int) int {
	v := c.Info(m, "replication", "slave0")
	for _, f := range strings.Split(v, ",") {
		if p, ok := strings.CutPrefix(f, "port="); ok {
			for i, q := range c.Ports {
				if strconv.Itoa(q) == p {
					return i
				}
			}
		}
	}
	return -1
}

// State is node i's cluster_state ("ok", "fail"), or "" if it does not answer.
func (c *Cluster) State(i int) string {
	out, err := c.Cli(i, "cluster", "info")
	if err != nil {
		return ""
	}
	return infoField(out, "cluster_state")
}

// Masters returns the indexes of the nodes that are masters now.
func (c *Cluster) Masters() []int {
	var out []int
	for i := range c.Ports {
		if c.procs[i] != nil && c.Info(i, "replication", "role") == "master" {
			out = append(out, i)
		}
	}
	return out
}

// Reshard moves slots hash slots from master node from to master node to
// (redis-cli --cluster reshard), key by key, while the cluster serves.
func (c *Cluster) Reshard(from, to, slots int) error {
	ids := make([]string, 2)
	for i, n := range []int{from, to} {
		out, err := c.Cli(n, "cluster", "myid")
		if err != nil {
			return err
		}
		ids[i] = strings.TrimSpace(out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "redis-cli", "--cluster", "reshard", c.Addrs()[from],
		"--cluster-from", ids[0], "--cluster-to", ids[1], "--cluster-slots", strconv.Itoa(slots),
		"--cluster-yes", "--cluster-pipeline", "100").CombinedOutput()
	if err != nil {
		return fmt.Errorf("redis-cli --cluster reshard: %w\n%s", err, out)
	}
	return c.WaitOK(60 * time.Second)
}

// WaitOK polls every running node until it reports cluster_state:ok and
// every running replica reports master_link_status:up, or the timeout
// passes.
func (c *Cluster) WaitOK(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		bad := ""
		for i, p := range c.Ports {
			if c.procs[i] == nil {
				continue
			}
			out, err := cli(p, "cluster", "info")
			if err != nil {
				bad = err.Error()
				break
			}
			if st := infoField(out, "cluster_state"); st != "ok" {
				bad = fmt.Sprintf("node %d: cluster_state:%s", p, st)
				break
			}
			if c.Info(i, "replication", "role") == "slave" {
				if st := c.Info(i, "replication", "master_link_status"); st != "up" {
					bad = fmt.Sprintf("replica %d: master_link_status:%s", p, st)
					break
				}
			}
		}
		if bad == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster not ok after %v: %s", timeout, bad)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
