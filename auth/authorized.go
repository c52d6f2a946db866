package auth

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"

	"drover/net/wire"
)

// Role is what a client key may do (docs/PROTOCOL.md §15).
type Role uint8

// The roles of authorized_keys.
const (
	// Worker takes and runs jobs: HELLO as a worker on the peers socket,
	// RESULT, PROGRESS.
	Worker Role = iota + 1
	// Producer submits jobs and uses the ledger: HELLO as a producer on the
	// peers socket, SUBMIT, REQUEST, QUEUE, DONE.
	Producer
	// Operator may do everything: any role on the peers socket, the admin
	// dialogue with its actions, the event stream.
	Operator
	// Viewer reads: the admin dialogue without ACTION, the event stream.
	Viewer
)

var roleNames = [...]string{Worker: "worker", Producer: "producer", Operator: "operator", Viewer: "viewer"}

// String names the role as authorized_keys spells it.
func (r Role) String() string {
	if int(r) < len(roleNames) && roleNames[r] != "" {
		return roleNames[r]
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// ParseRole reads a role name.
func ParseRole(s string) (Role, error) {
	for r, n := range roleNames {
		if n != "" && n == s {
			return Role(r), nil
		}
	}
	return 0, fmt.Errorf("role %q, want worker, producer, operator or viewer", s)
}

// Listener is one of the coordinator's sockets, as the rights see it.
type Listener uint8

// The listeners.
const (
	Peers  Listener = iota + 1 // workers and producers (ROUTER)
	Admin                      // consoles and the CLI (ROUTER)
	Events                     // the event stream (PUB)
)

var listenerNames = [...]string{Peers: "peers", Admin: "admin", Events: "events"}

// String names the listener.
func (l Listener) String() string {
	if int(l) < len(listenerNames) && listenerNames[l] != "" {
		return listenerNames[l]
	}
	return fmt.Sprintf("listener(%d)", uint8(l))
}

// MayConnect says whether a key of role r completes the handshake on l.
// The peers and admin sockets admit every listed key (a command its role
// does not allow gets ERROR 403, which says why); the events socket, which
// cannot answer, admits only the roles that may read it.
func (r Role) MayConnect(l Listener) bool {
	if l == Events {
		return r == Operator || r == Viewer
	}
	return r >= Worker && r <= Viewer
}

// MayHello says whether a key of role r may open a session with role as
// on l.
func (r Role) MayHello(l Listener, as wire.Role) bool {
	switch {
	case l == Peers && as == wire.RoleWorker:
		return r == Worker || r == Operator
	case l == Peers && as == wire.RoleProducer:
		return r == Producer || r == Operator
	case l == Admin && as == wire.RoleConsole:
		return r == Operator || r == Viewer
	}
	return false
}

// May says whether a key of role r may send command c (other than HELLO:
// MayHello) on l.
func (r Role) May(l Listener, c wire.Command) bool {
	switch c {
	case wire.CmdHeartbeat, wire.CmdDisconnect:
		return true
	}
	if r == Operator {
		return true
	}
	switch l {
	case Peers:
		switch c {
		case wire.CmdResult, wire.CmdProgress, wire.CmdRobots:
			return r == Worker
		case wire.CmdSubmit, wire.CmdRequest, wire.CmdQueue, wire.CmdDone:
			return r == Producer
		}
	case Admin:
		switch c {
		case wire.CmdQuery, wire.CmdStatus:
			return r == Viewer
		}
	}
	return false
}

// Entry is one line of authorized_keys.
type Entry struct {
	Role    Role
	Key     string // the client's public key, Z85
	Comment string // the rest of the line (who the key is)
	Line    int    // where it is, for messages
}

// Label is how logs and metrics name the key: its comment, or its first
// eight characters.
func (e Entry) Label() string {
	if e.Comment != "" {
		return e.Comment
	}
	return e.Key[:8] + "…"
}

// Keyring is a parsed authorized_keys file. It is never changed once
// made: a reload makes a new one.
type Keyring struct {
	File    string
	entries map[string]Entry // by public key
}

// Lookup returns the entry of a client public key (Z85).
func (k *Keyring) Lookup(key string) (Entry, bool) {
	if k == nil {
		return Entry{}, false
	}
	e, ok := k.entries[key]
	return e, ok
}

// Len is the number of keys listed.
func (k *Keyring) Len() int {
	if k == nil {
		return 0
	}
	return len(k.entries)
}

// Entries lists the keys (in no order).
func (k *Keyring) Entries() []Entry {
	if k == nil {
		return nil
	}
	out := make([]Entry, 0, len(k.entries))
	for _, e := range k.entries {
		out = append(out, e)
	}
	return out
}

// ParseAuthorizedKeys reads an authorized_keys text: one client per line,
// `ROLE Z85-PUBLIC-KEY [comment]`, fields separated by blanks; empty
// lines and lines starting with '#' are comments. Any malformed line, or a
// key listed twice, is an error naming name:line.
func ParseAuthorizedKeys(name string, data []byte) (*Keyring, error) {
	k := &Keyring{File: name, entries: make(map[string]Entry)}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		f := strings.Fields(t)
		if len(f) < 2 {
			return nil, fmt.Errorf("%s:%d: %q: want ROLE Z85-PUBLIC-KEY [comment]", name, n, clip(t))
		}
		role, err := ParseRole(f[0])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		if err := CheckKey(f[1]); err != nil {
			return nil, fmt.Errorf("%s:%d: public key: %w", name, n, err)
		}
		if prev, dup := k.entries[f[1]]; dup {
			return nil, fmt.Errorf("%s:%d: key %s is listed already on line %d", name, n, f[1], prev.Line)
		}
		comment := ""
		if len(f) > 2 {
			comment = strings.Join(f[2:], " ")
		}
		k.entries[f[1]] = Entry{Role: role, Key: f[1], Comment: comment, Line: n}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return k, nil
}

// ReadAuthorizedKeys reads and parses the authorized_keys file at path.
func ReadAuthorizedKeys(path string) (*Keyring, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("authorized keys: %w", err)
	}
	return ParseAuthorizedKeys(path, data)
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
