package wire

import (
	"errors"
	"fmt"
)

// Code is a DRV/2 status code, carried by ERROR and DISCONNECT.
type Code uint16

// The codes. Decode produces 400, 413, 501 and 505; the others come from the
// server's (or client's) handling of a well-formed message.
const (
	CodeOK             Code = 200 // DISCONNECT only: an ordinary goodbye
	CodeMalformed      Code = 400 // bad framing, encoding, enum value, count or trailing bytes
	CodeHelloRequired  Code = 401 // no session: send HELLO (again)
	CodeForbidden      Code = 403 // the session's role or read-only flag does not allow this
	CodeNotFound       Code = 404 // unknown job, key or worker
	CodeTimeout        Code = 408 // DISCONNECT: heartbeats stopped for heartbeat x liveness
	CodeConflict       Code = 409 // wrong state, not the owner, superseded by a newer session
	CodeEvicted        Code = 410 // DISCONNECT: an operator evicted the worker
	CodeTooLarge       Code = 413 // a frame, string, blob, batch or count is over its limit
	CodeSlowDown       Code = 429 // the server is overloaded: retry later
	CodeInternal       Code = 500 // the server failed; the request may be retried
	CodeUnknownCommand Code = 501 // the command frame names no DRV/2 command
	CodeUnavailable    Code = 503 // shutting down or paused for this kind of request
	CodeVersion        Code = 505 // the protocol frame names a version this peer does not speak
)

var codeNames = map[Code]string{
	CodeOK:             "ok",
	CodeMalformed:      "malformed",
	CodeHelloRequired:  "hello required",
	CodeForbidden:      "forbidden",
	CodeNotFound:       "not found",
	CodeTimeout:        "timeout",
	CodeConflict:       "conflict",
	CodeEvicted:        "evicted",
	CodeTooLarge:       "too large",
	CodeSlowDown:       "slow down",
	CodeInternal:       "internal",
	CodeUnknownCommand: "unknown command",
	CodeUnavailable:    "unavailable",
	CodeVersion:        "version not supported",
}

// String names the code ("malformed", "too large", ...).
func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return "code " + itoa(uint64(c))
}

// Error is a DRV/2 error: the value Decode returns for a bad message and the
// Message of the ERROR command. Req is the request id of the message it is
// about (0 when that could not be read).
type Error struct {
	Req  uint64
	Code Code
	Msg  string
}

// Error renders the error as "drv <code> <name>: <message>".
func (e *Error) Error() string {
	return fmt.Sprintf("drv %d %s: %s", uint16(e.Code), e.Code, e.Msg)
}

// Command is CmdError.
func (e *Error) Command() Command { return CmdError }

// RequestID is the request id the error is about.
func (e *Error) RequestID() uint64 { return e.Req }

// CodeOf returns the code of the *Error in err's chain, or 0 if there is none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// IsCode reports whether err's chain holds a *Error with code c.
func IsCode(err error, c Code) bool { return err != nil && CodeOf(err) == c }

func errorf(req uint64, code Code, format string, args ...any) *Error {
	return &Error{Req: req, Code: code, Msg: fmt.Sprintf(format, args...)}
}
