package auth

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Settle is how long the authorized_keys file must stay unchanged after a
// change before Watch reads it.
const Settle = 250 * time.Millisecond

// Authorizer keeps the current authorized_keys: read at start, re-read on
// SIGHUP and whenever the file changes (Watch). A file that no longer
// parses is reported and the keys in force stay. Safe for concurrent use.
type Authorizer struct {
	path string
	log  *slog.Logger
	cur  atomic.Pointer[Keyring]

	mu   sync.Mutex
	subs map[int]func()
	next int
}

// NewAuthorizer reads the authorized_keys file at path; a missing or
// malformed file is an error.
func NewAuthorizer(path string, log *slog.Logger) (*Authorizer, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Authorizer{path: path, log: log, subs: make(map[int]func())}
	k, err := ReadAuthorizedKeys(path)
	if err != nil {
		return nil, err
	}
	a.cur.Store(k)
	return a, nil
}

// Static is an Authorizer over a fixed keyring (tests, embedded uses).
func Static(k *Keyring) *Authorizer {
	a := &Authorizer{log: slog.New(slog.DiscardHandler), subs: make(map[int]func())}
	a.cur.Store(k)
	return a
}

// Path is the file the keys come from ("" for Static).
func (a *Authorizer) Path() string { return a.path }

// Keys is the keyring in force.
func (a *Authorizer) Keys() *Keyring { return a.cur.Load() }

// Set puts k in force and tells the subscribers.
func (a *Authorizer) Set(k *Keyring) {
	a.cur.Store(k)
	a.mu.Lock()
	subs := make([]func(), 0, len(a.subs))
	for _, f := range a.subs {
		subs = append(subs, f)
	}
	a.mu.Unlock()
	for _, f := range subs {
		f()
	}
}

// Reload reads the file again and, when it parses, puts it in force. On
// error the keys in force stay.
func (a *Authorizer) Reload() error {
	if a.path == "" {
		return nil
	}
	k, err := ReadAuthorizedKeys(a.path)
	if err != nil {
		a.log.Error("authorized keys not reloaded: the keys in force stay", "file", a.path, "err", err)
		return err
	}
	old := a.Keys()
	added, removed := 0, 0
	for _, e := range k.Entries() {
		if o, ok := old.Lookup(e.Key); !ok || o.Role != e.Role {
			added++
		}
	}
	for _, e := range old.Entries() {
		if n, ok := k.Lookup(e.Key); !ok || n.Role != e.Role {
			removed++
		}
	}
	a.log.Info("authorized keys reloaded", "file", a.path, "keys", k.Len(), "added_or_changed", added, "removed_or_changed", removed)
	a.Set(k)
	return nil
}

// OnChange calls f (on the goroutine that reloaded; f must not block)
// after each change of the keys in force; cancel stops it.
func (a *Authorizer) OnChange(f func()) (cancel func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.next
	a.next++
	a.subs[n] = f
	return func() {
		a.mu.Lock()
		delete(a.subs, n)
		a.mu.Unlock()
	}
}

// Watch re-reads the file on SIGHUP and when it changes (written, or
// replaced by a rename as editors and configuration tools do), until ctx
// ends. It returns an error only if it cannot watch at all.
func (a *Authorizer) Watch(ctx context.Context) error {
	if a.path == "" {
		<-ctx.Done()
		return nil
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching %s: %w", a.path, err)
	}
	defer w.Close()
	// The directory, not the file: a file replaced by a rename is a new
	// file the old watch would not see.
	dir, base := filepath.Split(a.path)
	if dir == "" {
		dir = "."
	}
	if err := w.Add(dir); err != nil {
		return fmt.Errorf("watching %s: %w", a.path, err)
	}
	// A file written in place is empty, or half written, for a moment: an
	// empty file is valid (it admits nobody) and would end every session.
	// So a change is read once the file has been quiet for Settle.
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	defer settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-hup:
			a.log.Info("SIGHUP: reloading the authorized keys", "file", a.path)
			a.Reload()
		case <-settle.C:
			if _, err := os.Stat(a.path); err != nil {
				a.log.Warn("the authorized keys file is gone: the keys in force stay", "file", a.path, "err", err)
				continue
			}
			a.Reload()
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if filepath.Base(ev.Name) != base || !ev.Has(fsnotify.Write|fsnotify.Create|fsnotify.Rename|fsnotify.Remove) {
				continue
			}
			settle.Reset(Settle)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			a.log.Warn("watching the authorized keys", "file", a.path, "err", err)
		}
	}
}
