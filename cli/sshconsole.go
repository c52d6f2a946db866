package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	tea "charm.land/bubbletea/v2"
	"charm.land/ssh"
	"charm.land/wish/v2"
	"charm.land/wish/v2/activeterm"
	bm "charm.land/wish/v2/bubbletea"
	"github.com/fsnotify/fsnotify"
	gossh "golang.org/x/crypto/ssh"

	"drover/config"
	"drover/net/client"
	"drover/net/server"
	"drover/tui"
)

// The console over SSH (drover serve --ssh): one console per SSH session,
// attached to the coordinator over the in-process admin transport, for
// operators without a shell on the coordinator's host.

// SSH console roles, the first word of each line of ssh.authorized_keys.
const (
	sshOperator = "operator" // may act: evict, drain, requeue, pause
	sshViewer   = "viewer"   // read-only console
)

// sshKey is one line of ssh.authorized_keys.
type sshKey struct {
	role    string
	key     gossh.PublicKey
	comment string
}

// readSSHKeys reads an SSH console authorized-keys file: one key per line,
// ROLE followed by an OpenSSH public key line (TYPE BASE64 [comment]), ROLE
// operator or viewer; blank lines and lines starting with # are skipped.
// Every bad line is an error naming its number.
func readSSHKeys(path string) ([]sshKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ssh.authorized_keys: %w", err)
	}
	var keys []sshKey
	var errs []error
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		role, rest := line, ""
		if i := strings.IndexAny(line, " \t"); i >= 0 {
			role, rest = line[:i], line[i+1:]
		}
		if role != sshOperator && role != sshViewer {
			errs = append(errs, fmt.Errorf("%s:%d: role %q, want operator or viewer, then an OpenSSH public key", path, n, role))
			continue
		}
		k, comment, _, _, err := gossh.ParseAuthorizedKey([]byte(strings.TrimSpace(rest)))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: want %s followed by an OpenSSH public key (ssh-ed25519 AAAA... comment): %w", path, n, role, err))
			continue
		}
		keys = append(keys, sshKey{role: role, key: k, comment: comment})
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("ssh.authorized_keys %s: %w", path, err))
	}
	return keys, errors.Join(errs...)
}

// sshRole is the role path gives key, or "" when it is not listed (or the
// file cannot be read now).
func sshRole(path string, key ssh.PublicKey, log *slog.Logger) string {
	keys, err := readSSHKeys(path)
	if err != nil {
		log.Warn("ssh console: authorized keys", "err", err) // the good lines still count
	}
	for _, k := range keys {
		if ssh.KeysEqual(k.key, key) {
			return k.role
		}
	}
	return ""
}

// sshListen is the SSH console's listen address: a port alone listens on
// loopback.
func sshListen(addr string) string {
	if strings.HasPrefix(addr, ":") {
		return "127.0.0.1" + addr
	}
	return addr
}

// sshHostKeyPath is ssh.host_key, or the default beside the store's.
func sshHostKeyPath(cfg *config.Config) (string, error) {
	if p := cfg.SSH.HostKey; p != "" {
		return p, nil
	}
	return statePath("ssh.host_key", "ssh_host_ed25519_key")
}

// ensureHostKey writes a new ed25519 host key to path (mode 0600, its
// directory made 0700) when there is none.
func ensureHostKey(path string) (created bool, err error) {
	if _, err := os.Stat(path); err == nil {
		return false, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("ssh.host_key: %w", err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return false, err
	}
	block, err := gossh.MarshalPrivateKey(priv, "drover ssh console host key")
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, fmt.Errorf("ssh.host_key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return false, fmt.Errorf("ssh.host_key: %w", err)
	}
	if err := pem.Encode(f, block); err != nil {
		f.Close()
		return false, fmt.Errorf("ssh.host_key %s: %w", path, err)
	}
	return true, f.Close()
}

// startSSHConsole serves the console over SSH on cfg.SSH.Listen until ctx
// ends; the returned function waits for it to stop. Each session gets its
// own console on an admin client of srv (read-only for viewer keys, which
// the coordinator enforces too).
func startSSHConsole(ctx context.Context, cfg *config.Config, srv *server.Server, log *slog.Logger) (wait func(), addr net.Addr, err error) {
	if cfg.SSH.AuthorizedKeys == "" {
		return nil, nil, &exitError{code: 2, err: errors.New("ssh.listen is set and ssh.authorized_keys is empty: want the file of keys admitted to the console (--ssh-authorized-keys FILE)")}
	}
	if _, err := readSSHKeys(cfg.SSH.AuthorizedKeys); err != nil {
		return nil, nil, &exitError{code: 2, err: err}
	}
	keyPath, err := sshHostKeyPath(cfg)
	if err != nil {
		return nil, nil, &exitError{code: 2, err: err}
	}
	created, err := ensureHostKey(keyPath)
	if err != nil {
		return nil, nil, err
	}
	if created {
		log.Info("ssh console: host key generated", "path", keyPath)
	}
	topts, err := consoleOptions(cfg, false, false)
	if err != nil {
		return nil, nil, err
	}
	authorized := cfg.SSH.AuthorizedKeys
	var sessions atomic.Uint64
	// Each console runs on a context of its own, ended (with its admin
	// client) by the innermost middleware once the program has quit: the
	// bubbletea middleware quits it when the session ends.
	var ends sync.Map // ssh.Session -> func(): what ends its console
	live := &sshLive{sessions: map[ssh.Session]string{}}
	program := func(sess ssh.Session) *tea.Program {
		role := sshRole(authorized, sess.PublicKey(), log)
		if role == "" { // removed since the login
			wish.Fatalln(sess, "drover: this key is no longer authorised for the console")
			return nil
		}
		o := topts
		o.ReadOnly = o.ReadOnly || role == sshViewer
		id := sshSessionID(sessions.Add(1), sess.User())
		slg := log.With("ssh_session", id, "role", role, "remote", sess.RemoteAddr().String())
		pctx, cancel := context.WithCancel(ctx)
		a, err := client.DialAdmin(pctx, client.AdminOptions{Connect: srv.InprocAdmin(), ID: id, ReadOnly: o.ReadOnly, Log: slg})
		if err != nil {
			cancel()
			wish.Fatalln(sess, "drover: attaching to the coordinator:", err)
			return nil
		}
		p, err := tui.NewProgram(pctx, a, o, sess.Environ(), bm.MakeOptions(sess)...)
		if err != nil {
			cancel()
			a.Close()
			wish.Fatalln(sess, "drover:", err)
			return nil
		}
		slg.Info("ssh console session")
		live.add(sess, role)
		ends.Store(sess, func() {
			live.remove(sess)
			cancel()
			a.Close()
			slg.Info("ssh console session ended")
		})
		return p
	}
	end := func(next ssh.Handler) ssh.Handler {
		return func(sess ssh.Session) {
			next(sess)
			if f, ok := ends.LoadAndDelete(sess); ok {
				f.(func())()
			}
		}
	}
	s, err := wish.NewServer(
		wish.WithAddress(sshListen(cfg.SSH.Listen)),
		wish.WithHostKeyPath(keyPath),
		wish.WithPublicKeyAuth(func(_ ssh.Context, key ssh.PublicKey) bool {
			return sshRole(authorized, key, log) != ""
		}),
		wish.WithMiddleware(end, bm.MiddlewareWithProgramHandler(program), activeterm.Middleware()),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("ssh console: %w", err)
	}
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("ssh console: ssh.listen %s: %w", s.Addr, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.Serve(ln); err != nil && !errors.Is(err, ssh.ErrServerClosed) {
			log.Error("ssh console", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		s.Close() // ends the sessions too: each console quits with its session
	}()
	go watchSSHKeys(ctx, authorized, live, log)
	log.Info("ssh console listening", "addr", ln.Addr().String())
	return func() { <-done }, ln.Addr(), nil
}

// sshSessionID names the n-th SSH session's admin client for the
// coordinator's logs: ssh-N-USER, the user name kept to letters, digits and
// ._- and clipped.
func sshSessionID(n uint64, user string) string {
	clean := strings.Map(func(r rune) rune {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return r
		}
		return '_'
	}, user)
	if len(clean) > 32 {
		clean = clean[:32]
	}
	return fmt.Sprintf("ssh-%d-%s", n, clean)
}

// sshLive are the consoles open now, with the role each logged in with.
type sshLive struct {
	mu       sync.Mutex
	sessions map[ssh.Session]string
}

func (l *sshLive) add(s ssh.Session, role string) {
	l.mu.Lock()
	l.sessions[s] = role
	l.mu.Unlock()
}

func (l *sshLive) remove(s ssh.Session) {
	l.mu.Lock()
	delete(l.sessions, s)
	l.mu.Unlock()
}

// revoke ends the sessions whose key path no longer lists with the role
// they logged in with (removed, or made a viewer): they may log in again
// with what the file now grants. A file that cannot be read changes
// nothing.
func (l *sshLive) revoke(path string, log *slog.Logger) {
	if _, err := os.Stat(path); err != nil {
		return // removed or mid-rename: the new file's event follows
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for s, role := range l.sessions {
		if now := sshRole(path, s.PublicKey(), log); now != role {
			log.Info("ssh console: session ended, its key's role changed", "user", s.User(), "remote", s.RemoteAddr().String(), "was", role, "now", now)
			wish.Errorln(s, "\r\ndrover: this key's console access was revoked or changed")
			if c, ok := s.Context().Value(ssh.ContextKeyConn).(interface{ Close() error }); ok {
				c.Close()
			}
			delete(l.sessions, s)
		}
	}
}

// watchSSHKeys re-checks the live sessions against the keys file when it
// changes (written, or replaced by a rename) and on SIGHUP, until ctx ends.
func watchSSHKeys(ctx context.Context, path string, live *sshLive, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	w, err := fsnotify.NewWatcher()
	if err != nil {
		log.Warn("ssh console: not watching the keys file (SIGHUP still re-reads it)", "err", err)
	} else {
		defer w.Close()
		if err := w.Add(filepath.Dir(path)); err != nil {
			log.Warn("ssh console: not watching the keys file (SIGHUP still re-reads it)", "err", err)
		}
	}
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w != nil {
		events, errs = w.Events, w.Errors
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			live.revoke(path, log)
		case ev, ok := <-events:
			if !ok {
				return
			}
			if filepath.Base(ev.Name) == filepath.Base(path) && ev.Has(fsnotify.Write|fsnotify.Create|fsnotify.Rename) {
				live.revoke(path, log)
			}
		case err := <-errs:
			log.Warn("ssh console: watching the keys file", "err", err)
		}
	}
}
