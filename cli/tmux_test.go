package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tmuxSession runs a command in a detached tmux session of the given size
// with its own server socket, so tests never touch a user's tmux.
type tmuxSession struct {
	t      *testing.T
	socket string
	name   string
}

func requireTmux(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is missing: make test installs it (scripts/deps.sh test)")
		}
		t.Skip("tmux not installed: run make test, which installs it")
	}
}

func newTmux(t *testing.T, width, height int, command string) *tmuxSession {
	t.Helper()
	s := &tmuxSession{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock"), name: "drover-test"}
	s.run("new-session", "-d", "-s", s.name, "-x", fmt.Sprint(width), "-y", fmt.Sprint(height),
		"env", "TERM=xterm-256color", "sh", "-c", command+"; echo EXITED $?; sleep 30")
	t.Cleanup(func() { exec.Command("tmux", "-S", s.socket, "kill-server").Run() })
	return s
}

func (s *tmuxSession) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

func (s *tmuxSession) screen() string { return s.run("capture-pane", "-p", "-t", s.name) }

func (s *tmuxSession) keys(keys ...string) {
	s.run(append([]string{"send-keys", "-t", s.name}, keys...)...)
}

// waitFor polls the screen until every want string is on it.
func (s *tmuxSession) waitFor(what string, want ...string) string {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var scr string
	for time.Now().Before(deadline) {
		scr = s.screen()
		ok := true
		for _, w := range want {
			if !strings.Contains(scr, w) {
				ok = false
				break
			}
		}
		if ok {
			return scr
		}
		time.Sleep(50 * time.Millisecond) // polling the screen with a deadline, not waiting for a condition blind
	}
	s.t.Fatalf("%s: %q not on screen within 20s; screen:\n%s", what, want, scr)
	return ""
}

// TestTmuxDemo runs drover demo in a 120x40 tmux pane as an operator would:
// the header and the Workers view appear, 2 switches to Jobs, ? opens the
// help, q quits (asking first while work is in flight), and the summary is
// printed.
func TestTmuxDemo(t *testing.T) {
	requireTmux(t)
	bin := drover(t)
	s := newTmux(t, 120, 40, bin+" demo")
	s.waitFor("header and workers view", "drover", "local-1")
	s.keys("2")
	s.waitFor("jobs view", "http://demo.drover.test/")
	// The demo's crawl is defined on its coordinator: the Crawls view
	// lists it.
	s.keys("6")
	s.waitFor("crawls view", "[6 Crawls]", "DONE", "> crawl ", "host")
	s.keys("?")
	s.waitFor("help", "quit")
	// Any key closes the help; wait until the table is back before q (an
	// Escape followed at once by q would read as alt+q, so none is sent).
	s.keys("?")
	s.waitFor("help closed", "rows ", "q quit")
	s.keys("q")
	// Still crawling, the quit dialog asks first (Cancel focused); after the
	// crawl, q quits at once.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		scr := s.screen()
		if strings.Contains(scr, "esc cancel") {
			s.keys("Tab", "Enter")
			break
		}
		if strings.Contains(scr, "EXITED") {
			break
		}
		time.Sleep(50 * time.Millisecond) // polling the screen with a deadline
	}
	s.waitFor("summary after quitting", "crawl ", "pages fetched", "EXITED 0")
}

// drover with no command is serve with a console: its store keeps what was
// submitted across a quit and a new start (XDG_STATE_HOME points the
// default store into the test's directory).
func TestTmuxEmbeddedKeepsItsStore(t *testing.T) {
	requireTmux(t)
	bin := drover(t)
	state := t.TempDir()
	// The console prints no endpoints, and the restart needs the same
	// ones: unix sockets in the test's directory, no port to guess.
	eps := []string{"ipc://" + filepath.Join(state, "peers"), "ipc://" + filepath.Join(state, "admin"), "ipc://" + filepath.Join(state, "events")}
	cmd := fmt.Sprintf("XDG_STATE_HOME=%s DROVER_CONFIG= NO_COLOR=1 %s --bind %s --admin %s --events %s --metrics ''",
		state, bin, eps[0], eps[1], eps[2])

	first := newTmux(t, 120, 30, cmd)
	first.waitFor("the console", "drover", "embedded", "live")
	if out, code := run(t, "http://kept.test/a\nhttp://kept.test/b\n", "submit", "--connect", eps[0], "-"); code != 0 || !strings.Contains(out, "2 accepted") {
		t.Fatalf("submit: exit %d: %s", code, out)
	}
	first.waitFor("the two jobs queued (no worker)", "queued 2")
	first.keys("q") // work in flight: the quit dialog asks, Cancel focused
	first.waitFor("the quit dialog", "esc cancel")
	first.keys("Tab", "Enter")
	first.waitFor("exit", "EXITED 0")
	if _, err := os.Stat(filepath.Join(state, "drover", "store")); err != nil {
		t.Fatalf("no store under XDG_STATE_HOME: %v", err)
	}

	second := newTmux(t, 120, 30, cmd)
	second.waitFor("the jobs restored", "embedded", "queued 2")
	if out, code := run(t, "http://kept.test/a\n", "submit", "--connect", eps[0], "-"); code != 0 || !strings.Contains(out, "1 duplicates") {
		t.Fatalf("submit after the restart: exit %d: %s", code, out)
	}
	second.keys("q")
	second.waitFor("the quit dialog", "esc cancel")
	second.keys("Tab", "Enter")
	second.waitFor("exit", "EXITED 0")
}
