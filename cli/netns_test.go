//go:build linux

package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// netns is a pair of network namespaces joined by a veth pair, addressed
// in a /30 that exists only inside them: traffic between the two never
// touches the host's network.
type netns struct {
	a, b         string // namespace names
	addrA, addrB string // their addresses on the veth pair
}

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// newNetns makes the namespaces, or skips the test saying why it cannot.
// They are deleted when the test ends, whatever its outcome.
func newNetns(t *testing.T) *netns {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip command (iproute2)")
	}
	id := os.Getpid() % 100000
	n := &netns{a: fmt.Sprintf("drv-a-%d", id), b: fmt.Sprintf("drv-b-%d", id), addrA: "10.213.77.1", addrB: "10.213.77.2"}
	if err := ipCmd("netns", "add", n.a); err != nil {
		t.Skipf("cannot create network namespaces here: %v", err)
	}
	t.Cleanup(func() {
		for _, ns := range []string{n.a, n.b} {
			if err := ipCmd("netns", "del", ns); err != nil {
				t.Logf("cleanup: %v", err)
			}
		}
	})
	steps := [][]string{
		{"netns", "add", n.b},
		{"-n", n.a, "link", "add", "veth-a", "type", "veth", "peer", "name", "veth-b", "netns", n.b},
		{"-n", n.a, "addr", "add", n.addrA + "/30", "dev", "veth-a"},
		{"-n", n.b, "addr", "add", n.addrB + "/30", "dev", "veth-b"},
		{"-n", n.a, "link", "set", "lo", "up"},
		{"-n", n.b, "link", "set", "lo", "up"},
		{"-n", n.a, "link", "set", "veth-a", "up"},
		{"-n", n.b, "link", "set", "veth-b", "up"},
	}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// start runs the binary inside namespace ns in the background, killed when
// the test ends.
func (n *netns) start(t *testing.T, ns string, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	return startCmd(t, exec.Command("ip", append([]string{"netns", "exec", ns, drover(t)}, args...)...))
}

// run runs the binary inside namespace ns to completion, bounded.
func (n *netns) run(t *testing.T, ns string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := dieWithTest(exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, drover(t)}, args...)...))
	cmd.Env = append(os.Environ(), "DROVER_CONFIG=", "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("drover %v in %s: still running after 30s; output:\n%s", args, ns, out)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("drover %v in %s: %v", args, ns, err)
	}
	return string(out), 0
}

// A worker in one network namespace serves a coordinator in another over
// CURVE, across a veth pair; a worker without the keys is refused.
func TestWorkerAcrossNamespaces(t *testing.T) {
	n := newNetns(t)
	dir := t.TempDir()
	k, pub := keys(t, dir, "server", "worker", "producer", "ops")
	ak := filepath.Join(dir, "authorized_keys")
	writeKeys(t, ak, "worker "+pub["worker"], "producer "+pub["producer"], "operator "+pub["ops"])
	peers := "tcp://" + n.addrA + ":5570"
	adminEP := "tcp://127.0.0.1:5571" // loopback of namespace a
	srv, srvOut := n.start(t, n.a, "serve", "--store", "memory", "--bind", peers, "--admin", adminEP,
		"--events", "tcp://127.0.0.1:5572", "--metrics", "", "--heartbeat-interval", "1s",
		"--key", k["server"]+".key", "--authorized-keys", ak)
	eventually(t, "serve listening in namespace a", 10*time.Second, func() bool { return strings.Contains(srvOut.String(), "drover serving") })
	as := func(name string) []string {
		return []string{"--key", k[name] + ".key", "--server-key", k["server"] + ".pub"}
	}
	n.start(t, n.b, append([]string{"worker", "--connect", peers, "--id", "far-worker", "--heartbeat-interval", "1s",
		"--exec", "echo fetched $DROVER_URL"}, as("worker")...)...)
	if out, code := n.run(t, n.a, append([]string{"submit", "--connect", peers, "http://x.test/1", "http://x.test/2"}, as("producer")...)...); code != 0 {
		t.Fatalf("submit: exit %d: %s", code, out)
	}
	eventually(t, "both jobs done by the worker in namespace b", 30*time.Second, func() bool {
		out, code := n.run(t, n.a, append([]string{"status", "--json", "--connect", adminEP}, as("ops")...)...)
		return code == 0 && strings.Contains(out, `"done": 2,`) && strings.Contains(out, `"id": "far-worker"`)
	})
	out, code := n.run(t, n.b, "worker", "--connect", peers, "--id", "keyless", "--exec", "true")
	if code == 0 || !strings.Contains(out, "not authorised") {
		t.Fatalf("a worker without keys in namespace b: exit %d, %q: want not authorised", code, out)
	}
	srv.Process.Signal(syscall.SIGTERM)
	if err := srv.Wait(); err != nil {
		t.Fatalf("serve: %v; output:\n%s", err, srvOut.String())
	}
}
