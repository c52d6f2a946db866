package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// The error classes of the store. Errors returned by the package wrap one of
// them where it applies; test with errors.Is or the IsX helpers.
var (
	// ErrLocked: another process (or another Store in this process) has the
	// store's directory open.
	ErrLocked = errors.New("store is locked")
	// ErrCorrupt: the directory holds a store whose files cannot be read
	// back as written (bad manifest, table, marker or record). The store is
	// never silently replaced by a fresh one.
	ErrCorrupt = errors.New("store is corrupt")
	// ErrUnusable: the path cannot hold a store (not a directory, permission
	// denied, a non-empty directory that is not a store, a store written by
	// an unknown format).
	ErrUnusable = errors.New("store path is unusable")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store is closed")
)

// IsLocked reports whether err says the store is in use by someone else.
func IsLocked(err error) bool { return errors.Is(err, ErrLocked) }

// IsCorrupt reports whether err says the store's files are corrupt.
func IsCorrupt(err error) bool { return errors.Is(err, ErrCorrupt) }

// corrupt wraps a Pebble error in ErrCorrupt when Pebble says it is
// corruption, leaving other errors as they are.
func corrupt(err error) error {
	if err != nil && pebble.IsCorruptionError(err) && !errors.Is(err, ErrCorrupt) {
		return fmt.Errorf("%w: %w", ErrCorrupt, pebbleError{err})
	}
	return err
}

// pebbleError shows only the first line of a Pebble error: its corruption
// errors end in a "<corruption detail carrier>" line that means nothing to
// an operator. The whole error stays reachable through Unwrap.
type pebbleError struct{ err error }

// Error is the first line of the Pebble error.
func (e pebbleError) Error() string {
	msg := e.err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

// Unwrap returns the Pebble error.
func (e pebbleError) Unwrap() error { return e.err }
