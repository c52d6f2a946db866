package cli

import (
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// sshClientKey makes a client key pair and returns its signer and its
// authorized-keys line.
func sshClientKey(t *testing.T, comment string) (gossh.Signer, string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s, strings.TrimSpace(string(gossh.MarshalAuthorizedKey(s.PublicKey()))) + " " + comment
}

// sshConsole is one SSH session's console, its screen output kept.
type sshConsole struct {
	t     *testing.T
	sess  *gossh.Session
	stdin io.WriteCloser
	out   *syncBuffer
}

// dialConsole logs in with signer and opens a console on a pty.
func dialConsole(t *testing.T, addr string, hostKey gossh.PublicKey, signer gossh.Signer) (*sshConsole, error) {
	t.Helper()
	c, err := gossh.Dial("tcp", addr, &gossh.ClientConfig{
		User: "ops", Auth: []gossh.AuthMethod{gossh.PublicKeys(signer)},
		HostKeyCallback: gossh.FixedHostKey(hostKey), Timeout: 10 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.RequestPty("xterm-256color", 40, 140, gossh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	in, err := sess.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	sess.Stdout, sess.Stderr = out, out
	if err := sess.Shell(); err != nil {
		t.Fatal(err)
	}
	return &sshConsole{t: t, sess: sess, stdin: in, out: out}, nil
}

// waitFor polls the session's output until it shows want.
func (c *sshConsole) waitFor(want string) {
	c.t.Helper()
	eventually(c.t, "console shows "+want, 20*time.Second, func() bool { return strings.Contains(c.out.String(), want) })
}

func (c *sshConsole) press(keys string) {
	c.t.Helper()
	if _, err := io.WriteString(c.stdin, keys); err != nil {
		c.t.Fatal(err)
	}
}

// TestSSHConsole serves the console over SSH from a real serve: an
// operator's session renders it and may pause, a viewer's is read-only
// (its action refused, the coordinator unchanged) and ends when its key
// is removed, an unlisted key is refused at login; the host key is
// generated 0600.
func TestSSHConsole(t *testing.T) {
	dir := t.TempDir()
	opSigner, opLine := sshClientKey(t, "alice@ops")
	viewSigner, viewLine := sshClientKey(t, "bob@dashboard")
	strangerSigner, _ := sshClientKey(t, "mallory")
	keys := filepath.Join(dir, "console_keys")
	if err := os.WriteFile(keys, []byte("# who may use the console\noperator "+opLine+"\n\nviewer\t  "+viewLine+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hostKeyPath := filepath.Join(dir, "state", "ssh_host_key")
	_, out := start(t, append([]string{"serve", "--store", "memory", "--metrics", "",
		"--ssh", "127.0.0.1:0", "--ssh-authorized-keys", keys, "--ssh-host-key", hostKeyPath}, anyPorts...)...)
	_, adminEP, _ := serving(t, out)
	m := regexp.MustCompile(`drover console over ssh on (127\.0\.0\.1:[1-9][0-9]*)\n`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("serve output %q: want the ssh address, with the port the OS chose", out.String())
	}
	sshAddr := m[1]
	fi, err := os.Stat(hostKeyPath)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("host key %v, %v: want a file of mode 0600", fi, err)
	}
	pemBytes, _ := os.ReadFile(hostKeyPath)
	hostSigner, err := gossh.ParsePrivateKey(pemBytes)
	if err != nil {
		t.Fatalf("host key: %v", err)
	}
	hostKey := hostSigner.PublicKey()

	// An unlisted key is refused at login.
	if _, err := dialConsole(t, sshAddr, hostKey, strangerSigner); err == nil || !strings.Contains(err.Error(), "unable to authenticate") {
		t.Fatalf("unlisted key: %v, want an authentication failure", err)
	}

	// The viewer sees the console, read-only, and cannot pause.
	viewer, err := dialConsole(t, sshAddr, hostKey, viewSigner)
	if err != nil {
		t.Fatal(err)
	}
	viewer.waitFor("drover ")
	viewer.waitFor("read-only")
	viewer.press("P")
	viewer.waitFor("read-only console: pause (P) is disabled")
	if tot, _ := totals(t, adminEP); tot.Paused {
		t.Fatal("dispatch paused from a viewer's session")
	}

	// Removing the viewer's line (the file replaced, as editors do) ends
	// its session at once.
	if err := os.WriteFile(keys+".new", []byte("operator "+opLine+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(keys+".new", keys); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- viewer.sess.Wait() }()
	select {
	case <-ended:
	case <-time.After(20 * time.Second):
		t.Fatal("the viewer's session still open 20s after its key was removed")
	}
	if _, err := dialConsole(t, sshAddr, hostKey, viewSigner); err == nil {
		t.Fatal("a removed key logged in again")
	}

	// The operator pauses: P opens the dialog, tab moves to Pause, enter.
	op, err := dialConsole(t, sshAddr, hostKey, opSigner)
	if err != nil {
		t.Fatal(err)
	}
	op.waitFor("drover ")
	op.press("P")
	op.waitFor("Pause dispatch?")
	op.press("\t\r")
	eventually(t, "paused by the operator", 10*time.Second, func() bool { tot, _ := totals(t, adminEP); return tot.Paused })
	if strings.Contains(op.out.String(), "read-only") {
		t.Error("the operator's console says read-only")
	}
	op.press("q")
	if err := op.sess.Wait(); err != nil {
		t.Errorf("operator session after q: %v, want a clean end", err)
	}
}

// A bad SSH console configuration exits 2 naming what is wrong.
func TestSSHConsoleConfigErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "keys")
	os.WriteFile(bad, []byte("admin ssh-ed25519 AAAA x\nviewer not-a-key\n"), 0o600)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--ssh", ":0"}, []string{"ssh.authorized_keys is empty", "--ssh-authorized-keys"}},
		{[]string{"--ssh", ":0", "--ssh-authorized-keys", bad}, []string{bad + ":1: role \"admin\"", bad + ":2: want viewer followed by an OpenSSH public key"}},
		{[]string{"--ssh", "nohostport"}, []string{"ssh.listen"}},
	} {
		args := append(append([]string{"serve", "--store", "memory", "--metrics", "",
			"--ssh-host-key", filepath.Join(dir, "hostkey")}, anyPorts...), c.args...)
		out, code := run(t, "", args...)
		if code != 2 {
			t.Errorf("drover %v: exit %d, %q: want 2", c.args, code, out)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("drover %v: %q does not say %q", c.args, out, w)
			}
		}
	}
}

func TestSSHListenAndSessionID(t *testing.T) {
	for in, want := range map[string]string{":2222": "127.0.0.1:2222", "0.0.0.0:22": "0.0.0.0:22", "[::1]:2222": "[::1]:2222"} {
		if got := sshListen(in); got != want {
			t.Errorf("sshListen(%q) = %q, want %q", in, got, want)
		}
	}
	if got := sshSessionID(7, "al ice\x1b[31m"+strings.Repeat("x", 40)); got != "ssh-7-al_ice__31m"+strings.Repeat("x", 21) {
		t.Errorf("sshSessionID = %q", got)
	}
}
