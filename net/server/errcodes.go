package server

import (
	"errors"

	"drover/coord"
	"drover/coord/broker"
	"drover/net/wire"
)

// errorCodes maps the coordinator's errors to the DRV/2 error code of the
// ERROR that answers them (docs/PROTOCOL.md §7): the one place that does.
// The first entry the error matches with errors.Is wins.
var errorCodes = []struct {
	err  error
	code wire.Code
}{
	{coord.ErrUnknownSession, wire.CodeHelloRequired},
	{coord.ErrInvalid, wire.CodeMalformed},
	{broker.ErrBadOutcome, wire.CodeMalformed},
	{coord.ErrForbidden, wire.CodeForbidden},
	{coord.ErrNotFound, wire.CodeNotFound},
	{broker.ErrUnknownJob, wire.CodeNotFound},
	{broker.ErrUnknownWorker, wire.CodeNotFound},
	{coord.ErrConflict, wire.CodeConflict},
	{broker.ErrWrongState, wire.CodeConflict},
	{broker.ErrJobIDsExhausted, wire.CodeUnavailable},
}

// errorCode is the code that answers err; an error of no listed kind is the
// server's own failure (internal).
func errorCode(err error) wire.Code {
	for _, e := range errorCodes {
		if errors.Is(err, e.err) {
			return e.code
		}
	}
	return wire.CodeInternal
}
