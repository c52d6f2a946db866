package coord

import (
	"errors"
	"fmt"
)

// The kinds of error the coordinator returns for an input. Every such error
// wraps one of these (or one of coord/broker's: ErrUnknownJob,
// ErrUnknownWorker, ErrWrongState, ErrOrphan, ErrBadOutcome), so a transport
// picks its answer with errors.Is — net/server maps them to DRV/2 error
// codes in one table — while the text still says what was wrong and what
// was expected.
var (
	// ErrUnknownSession: input from a session that never said hello, or
	// whose session ended.
	ErrUnknownSession = errors.New("unknown session: send HELLO first")
	// ErrInvalid: an argument outside its domain (a role, a view, a filter,
	// a key's spelling, an action without targets).
	ErrInvalid = errors.New("invalid")
	// ErrNotFound: the job, key or worker named does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the input does not fit the current state (a second
	// hello, a requeue of a key other work holds).
	ErrConflict = errors.New("conflict")
	// ErrForbidden: the session's role may not send this input.
	ErrForbidden = errors.New("forbidden")
)

// kindError is an error of a kind (one of the sentinels above) whose text
// is the error's own.
type kindError struct{ kind, err error }

func (e kindError) Error() string   { return e.err.Error() }
func (e kindError) Unwrap() []error { return []error{e.kind, e.err} }

// errorf formats an error of the given kind; %w in format wraps as usual.
func errorf(kind error, format string, args ...any) error {
	return kindError{kind: kind, err: fmt.Errorf(format, args...)}
}

// Errorf formats an error of kind (one of the sentinels above) for the
// layers around the coordinator that answer inputs themselves (net/server's
// own and the cluster's views), so that the one table of wire codes picks
// their answer too; the text is format's alone.
func Errorf(kind error, format string, args ...any) error { return errorf(kind, format, args...) }
