package cli

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pebbe/zmq4"
)

// keys makes a key pair per name with drover keygen in dir and returns
// dir/NAME (PREFIX.key, PREFIX.pub) by name, and each public key.
func keys(t *testing.T, dir string, names ...string) (prefix, public map[string]string) {
	t.Helper()
	if !zmq4.HasCurve() {
		t.Skip("libzmq without CURVE")
	}
	prefix, public = map[string]string{}, map[string]string{}
	for _, n := range names {
		p := filepath.Join(dir, n)
		out, code := run(t, "", "keygen", "--out", p)
		if code != 0 {
			t.Fatalf("keygen %s: exit %d: %s", n, code, out)
		}
		b, err := os.ReadFile(p + ".pub")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l != "" && !strings.HasPrefix(l, "#") {
				public[n] = l
			}
		}
		prefix[n] = p
	}
	return prefix, public
}

// runWithin runs the binary with a bound on how long it may take: a client
// that hangs fails the test instead of stalling it.
func runWithin(t *testing.T, d time.Duration, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := dieWithTest(exec.CommandContext(ctx, drover(t), args...))
	cmd.Env = append(os.Environ(), "DROVER_CONFIG=", "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("drover %v: still running after %v (a refused client must not hang); output:\n%s", args, d, out)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("drover %v: %v", args, err)
	}
	return string(out), code
}

func writeKeys(t *testing.T, path string, lines ...string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// A coordinator with keys, driven by real client processes: each role
// gets exactly its rights, unlisted and missing keys are refused with a
// clear error and a non-zero exit (never a hang), a second key cannot take
// a worker's id, removing a key (SIGHUP) ends its worker, and /metrics
// wants its token.
func TestSecureFleet(t *testing.T) {
	dir := t.TempDir()
	k, pub := keys(t, dir, "server", "w1", "w2", "producer", "ops", "viewer", "stranger")
	ak := filepath.Join(dir, "authorized_keys")
	lines := []string{
		"# the fleet",
		"worker " + pub["w1"] + " first worker",
		"worker " + pub["w2"] + " second worker",
		"producer " + pub["producer"],
		"operator " + pub["ops"] + " ops",
		"viewer " + pub["viewer"] + " dashboard",
	}
	writeKeys(t, ak, lines...)
	srv, srvOut := start(t, append([]string{"serve", "--store", "memory",
		"--metrics", "127.0.0.1:0", "--metrics-token", "s3cret", "--heartbeat-interval", "1s",
		"--key", k["server"] + ".key", "--authorized-keys", ak}, anyPorts...)...)
	at := listening(t, srvOut, "peers", "admin", "events", "metrics")
	peers, adminEP, metrics := at["peers"], at["admin"], strings.TrimPrefix(at["metrics"], "http://")
	as := func(name string) []string {
		return []string{"--key", k[name] + ".key", "--server-key", k["server"] + ".pub"}
	}
	const bound = 15 * time.Second

	w1, w1Out := start(t, append([]string{"worker", "--connect", peers, "--id", "shared", "--heartbeat-interval", "1s",
		"--exec", "echo done"}, as("w1")...)...)

	// producer: submit.
	if out, code := runWithin(t, bound, append([]string{"submit", "--connect", peers, "http://x.test/a"}, as("producer")...)...); code != 0 {
		t.Fatalf("producer submit: exit %d: %s", code, out)
	}
	// viewer: status, and the job done by w1.
	eventually(t, "the job done", 20*time.Second, func() bool {
		out, code := runWithin(t, bound, append([]string{"status", "--json", "--connect", adminEP}, as("viewer")...)...)
		return code == 0 && strings.Contains(out, `"done": 1,`)
	})
	// viewer: no action.
	out, code := runWithin(t, bound, append([]string{"pause", "--connect", adminEP}, as("viewer")...)...)
	if code == 0 || !strings.Contains(out, "403") || !strings.Contains(out, "viewer") {
		t.Fatalf("viewer pause: exit %d, %q: want refused with 403 naming the role", code, out)
	}
	// operator: the action.
	if out, code := runWithin(t, bound, append([]string{"pause", "--connect", adminEP}, as("ops")...)...); code != 0 {
		t.Fatalf("operator pause: exit %d: %s", code, out)
	}
	runWithin(t, bound, append([]string{"resume", "--connect", adminEP}, as("ops")...)...)
	// worker key: neither submit nor status.
	for _, args := range [][]string{
		{"submit", "--connect", peers, "http://x.test/w"},
		{"status", "--connect", adminEP},
	} {
		out, code := runWithin(t, bound, append(args, as("w2")...)...)
		if code == 0 || !strings.Contains(out, "not authorised") {
			t.Errorf("worker key %s: exit %d, %q: want not authorised", args[0], code, out)
		}
	}
	// Unlisted key, no key, on the peers and the admin endpoints.
	for _, args := range [][]string{
		append([]string{"submit", "--connect", peers, "http://x.test/s"}, as("stranger")...),
		{"submit", "--connect", peers, "http://x.test/s"},
		append([]string{"status", "--connect", adminEP}, as("stranger")...),
		{"status", "--connect", adminEP},
	} {
		out, code := runWithin(t, bound, args...)
		if code == 0 || !strings.Contains(out, "not authorised") {
			t.Errorf("%v: exit %d, %q: want a non-zero exit saying not authorised", args, code, out)
		}
	}
	// A second key cannot take over w1's id.
	w2, w2Out := start(t, append([]string{"worker", "--connect", peers, "--id", "shared", "--heartbeat-interval", "1s",
		"--exec", "echo done"}, as("w2")...)...)
	eventually(t, "the second key's HELLO refused", 30*time.Second, func() bool {
		return strings.Contains(w2Out.String(), "held by a live session of another key")
	})
	if strings.Contains(w1Out.String(), "superseded") {
		t.Fatalf("the first worker was superseded by another key:\n%s", w1Out.String())
	}
	w2.Process.Signal(syscall.SIGTERM)
	w2.Wait()

	// Metrics: the token, and the refusals counted.
	get := func(auth string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+metrics+"/metrics", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Errorf("/metrics without the token: %d, want 401", code)
	}
	eventually(t, "refusals in the metrics", 10*time.Second, func() bool {
		code, body := get("Bearer s3cret")
		return code == 200 && strings.Contains(body, `drover_forbidden_total{key="`+pub["viewer"]+`",role="viewer"} 1`) &&
			strings.Contains(body, `drover_handshakes_refused_total{listener="peers"}`)
	})

	// Removing w1's key and saying SIGHUP ends its session: the worker
	// exits, not authorised.
	writeKeys(t, ak, append(lines[:1:1], lines[2:]...)...)
	srv.Process.Signal(syscall.SIGHUP)
	// The server tells it at once (DISCONNECT 403); the bound is only
	// for a loaded machine.
	exited, err := waitWithin(w1, 60*time.Second)
	if !exited {
		t.Fatalf("the revoked worker still runs 60s after SIGHUP; worker:\n%s\nserve:\n%s", w1Out.String(), srvOut.String())
	}
	if err == nil || !strings.Contains(w1Out.String(), "not authorised") {
		t.Fatalf("revoked worker: %v, output:\n%s\nwant a non-zero exit saying not authorised", err, w1Out.String())
	}
	srv.Process.Signal(syscall.SIGTERM)
	if err := srv.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v; output:\n%s", err, srvOut.String())
	}
	if strings.Contains(srvOut.String(), k["server"]) && strings.Contains(srvOut.String(), secretOf(t, k["server"]+".key")) {
		t.Fatal("serve logged its secret key")
	}
}

func secretOf(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			return l
		}
	}
	t.Fatalf("%s: no key", path)
	return ""
}

// serve listens beyond loopback only with keys or --insecure; bad key
// configuration is exit 2, naming the key.
func TestServeExposure(t *testing.T) {
	out, code := runWithin(t, 30*time.Second, "serve", "--store", "memory", "--bind", "tcp://0.0.0.0:0",
		"--admin", anyPort, "--events", anyPort, "--metrics", "")
	if code != 2 || !strings.Contains(out, "--insecure") || !strings.Contains(out, "--key") {
		t.Fatalf("serve on 0.0.0.0 without keys: exit %d, %q: want 2 naming --key and --insecure", code, out)
	}
	srv, srvOut := start(t, "serve", "--store", "memory", "--bind", "tcp://0.0.0.0:0", "--insecure",
		"--admin", anyPort, "--events", anyPort, "--metrics", "")
	serving(t, srvOut)
	srv.Process.Signal(syscall.SIGTERM)
	srv.Wait()

	dir := t.TempDir()
	k, _ := keys(t, dir, "server")
	os.Chmod(k["server"]+".key", 0o644)
	bad := filepath.Join(dir, "ak")
	os.WriteFile(bad, []byte("worker not-a-key\n"), 0o600)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--key", k["server"] + ".key", "--authorized-keys", bad}, "chmod 600"},
		{[]string{"--key", "short", "--authorized-keys", bad}, "security.key"},
	} {
		out, code := runWithin(t, 30*time.Second, append(append([]string{"serve", "--store", "memory", "--metrics", ""}, anyPorts...), tt.args...)...)
		if code != 2 || !strings.Contains(out, tt.want) {
			t.Errorf("serve %v: exit %d, %q: want 2 and %q", tt.args, code, out, tt.want)
		}
	}
	os.Chmod(k["server"]+".key", 0o600)
	out, code = runWithin(t, 30*time.Second, append([]string{"serve", "--store", "memory", "--metrics", "",
		"--key", k["server"] + ".key", "--authorized-keys", bad}, anyPorts...)...)
	if code != 2 || !strings.Contains(out, bad+":1:") {
		t.Errorf("malformed authorized_keys: exit %d, %q: want 2 naming %s:1", code, out, bad)
	}
}

// keygen writes the pair with the modes it promises and never overwrites
// a key without --force.
func TestKeygen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	prefix := filepath.Join(dir, "k")
	if out, code := run(t, "", "keygen", "--out", prefix); code != 0 {
		t.Fatalf("keygen: exit %d: %s", code, out)
	}
	for p, mode := range map[string]os.FileMode{dir: 0o700, prefix + ".key": 0o600, prefix + ".pub": 0o644} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want mode %04o", p, fi.Mode(), err, mode)
		}
	}
	secret := secretOf(t, prefix+".key")
	if out, code := run(t, "", "keygen", "--out", prefix); code == 0 || !strings.Contains(out, "--force") {
		t.Fatalf("keygen over an existing key: exit %d, %q: want a refusal naming --force", code, out)
	}
	if secretOf(t, prefix+".key") != secret {
		t.Fatal("the refused keygen changed the key")
	}
	if out, code := run(t, "", "keygen", "--out", prefix, "--force"); code != 0 || secretOf(t, prefix+".key") == secret {
		t.Fatalf("keygen --force: exit %d, %q: want a new key", code, out)
	}
	out, code := run(t, "", "config", "show")
	if code != 0 {
		t.Fatal(out)
	}
	cmd := dieWithTest(exec.Command(drover(t), "config", "show"))
	cmd.Env = append(os.Environ(), "DROVER_CONFIG=", "DROVER_SECURITY_KEY="+secret)
	b, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(b), secret) {
		t.Fatalf("config show with an inline key: %v, shows the secret: %v", err, strings.Contains(string(b), secret))
	}
}
