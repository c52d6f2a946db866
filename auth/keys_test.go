package auth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"drover/net/wire"
)

func TestWriteKeyPair(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "keys")
	prefix := filepath.Join(dir, "server")
	kp, err := WriteKeyPair(prefix, false)
	if err != nil {
		t.Fatal(err)
	}
	for path, mode := range map[string]os.FileMode{prefix + ".key": 0o600, prefix + ".pub": 0o644, dir: 0o700} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %04o, want %04o", path, fi.Mode().Perm(), mode)
		}
	}
	got, err := LoadSecret(prefix + ".key")
	if err != nil || got != kp {
		t.Fatalf("LoadSecret = %v, %v; want the pair written", got, err)
	}
	pub, err := LoadPublic(prefix + ".pub")
	if err != nil || pub != kp.Public {
		t.Fatalf("LoadPublic = %q, %v; want %q", pub, err, kp.Public)
	}
	if _, err := WriteKeyPair(prefix, false); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("overwriting without force: %v, want a refusal naming --force", err)
	}
	again, err := WriteKeyPair(prefix, true)
	if err != nil || again.Public == kp.Public {
		t.Fatalf("force: %v, %v; want a new pair", again, err)
	}
	if strings.Contains(kp.String(), kp.Secret) {
		t.Fatal("KeyPair.String shows the secret")
	}
}

func TestLoadKeys(t *testing.T) {
	kp, err := NewKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := LoadSecret(kp.Secret); err != nil || got != kp {
		t.Fatalf("inline secret: %v, %v", got, err)
	}
	if got, err := LoadPublic(kp.Public); err != nil || got != kp.Public {
		t.Fatalf("inline public: %v, %v", got, err)
	}
	dir := t.TempDir()
	open := filepath.Join(dir, "open.key")
	os.WriteFile(open, []byte(kp.Secret+"\n"), 0o644)
	if _, err := LoadSecret(open); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a secret others may read: %v, want a refusal", err)
	}
	for name, text := range map[string]string{
		"two.key":   "# c\n" + kp.Secret + "\n" + kp.Secret + "\n",
		"none.key":  "# nothing\n\n",
		"short.key": "abc\n",
		"bad.key":   strings.Repeat("~", 40) + "\n",
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o600)
		if _, err := LoadSecret(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want an error naming the file", name, err)
		}
	}
	if _, err := LoadSecret(filepath.Join(dir, "missing.key")); err == nil {
		t.Error("missing file: no error")
	}
}

func TestParseAuthorizedKeys(t *testing.T) {
	a, _ := NewKeyPair()
	b, _ := NewKeyPair()
	k, err := ParseAuthorizedKeys("ak", []byte("# fleet\n\nworker "+a.Public+" alice laptop\n  viewer\t"+b.Public+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := k.Lookup(a.Public); !ok || e.Role != Worker || e.Comment != "alice laptop" || e.Line != 3 {
		t.Fatalf("a: %+v %v", e, ok)
	}
	if e, ok := k.Lookup(b.Public); !ok || e.Role != Viewer || e.Label() != b.Public[:8]+"…" {
		t.Fatalf("b: %+v %v", e, ok)
	}
	for text, want := range map[string]string{
		"worker\n":                      "ak:1: ",
		"# x\nadmin " + a.Public + "\n": "ak:2: role \"admin\"",
		"worker abc\n":                  "ak:1: public key",
		"worker " + a.Public + "\nviewer " + a.Public: "ak:2: key " + a.Public + " is listed already on line 1",
	} {
		if _, err := ParseAuthorizedKeys("ak", []byte(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}

func TestRights(t *testing.T) {
	// The table of docs/PROTOCOL.md §15; the server's tests check the same
	// over real sockets.
	all := []Role{Worker, Producer, Operator, Viewer}
	only := func(rs ...Role) map[Role]bool {
		m := map[Role]bool{}
		for _, r := range rs {
			m[r] = true
		}
		return m
	}
	cmds := []struct {
		l   Listener
		cmd wire.Command
		who map[Role]bool
	}{
		{Peers, wire.CmdResult, only(Worker, Operator)},
		{Peers, wire.CmdProgress, only(Worker, Operator)},
		{Peers, wire.CmdRobots, only(Worker, Operator)},
		{Peers, wire.CmdSubmit, only(Producer, Operator)},
		{Peers, wire.CmdRequest, only(Producer, Operator)},
		{Peers, wire.CmdQueue, only(Producer, Operator)},
		{Peers, wire.CmdDone, only(Producer, Operator)},
		{Peers, wire.CmdHeartbeat, only(all...)},
		{Admin, wire.CmdQuery, only(Viewer, Operator)},
		{Admin, wire.CmdStatus, only(Viewer, Operator)},
		{Admin, wire.CmdAction, only(Operator)},
		{Admin, wire.CmdDisconnect, only(all...)},
	}
	for _, c := range cmds {
		for _, r := range all {
			if got := r.May(c.l, c.cmd); got != c.who[r] {
				t.Errorf("%s may %s on %s: %v, want %v", r, c.cmd, c.l, got, c.who[r])
			}
		}
	}
	hellos := []struct {
		l   Listener
		as  wire.Role
		who map[Role]bool
	}{
		{Peers, wire.RoleWorker, only(Worker, Operator)},
		{Peers, wire.RoleProducer, only(Producer, Operator)},
		{Admin, wire.RoleConsole, only(Viewer, Operator)},
		{Peers, wire.RoleConsole, only()},
	}
	for _, h := range hellos {
		for _, r := range all {
			if got := r.MayHello(h.l, h.as); got != h.who[r] {
				t.Errorf("%s may HELLO as %s on %s: %v, want %v", r, h.as, h.l, got, h.who[r])
			}
		}
	}
	for _, r := range all {
		if got, want := r.MayConnect(Events), r == Viewer || r == Operator; got != want {
			t.Errorf("%s may subscribe: %v, want %v", r, got, want)
		}
		if !r.MayConnect(Peers) || !r.MayConnect(Admin) {
			t.Errorf("%s may not connect to peers or admin", r)
		}
	}
}
