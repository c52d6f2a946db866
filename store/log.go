package store

import (
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
)

// pebbleLogger sends Pebble's log lines to slog: its chatty info lines at
// debug level, errors at error level.
type pebbleLogger struct{ log *slog.Logger }

// Infof logs at debug level.
func (l pebbleLogger) Infof(format string, args ...any) {
	l.log.Debug("store: " + fmt.Sprintf(format, args...))
}

// Errorf logs at error level.
func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error("store: " + fmt.Sprintf(format, args...))
}

// Fatalf is Pebble saying it cannot go on (a failed WAL write or sync, a
// broken invariant). Pebble does not expect it to return, so it logs and
// panics with a fatalError; the writer goroutine turns a panic raised
// inside a commit into a sticky error for every caller, and anywhere else
// the process stops, as Pebble's own default logger would stop it.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error("store: fatal: " + msg)
	panic(fatalError(msg))
}

// fatalError is the panic value of pebbleLogger.Fatalf.
type fatalError string

// Error names the error as Pebble's.
func (e fatalError) Error() string { return "store: fatal pebble error: " + string(e) }

// recoverFatal, deferred, turns a fatalError panic into *err; any other
// panic goes on.
func recoverFatal(err *error) {
	if r := recover(); r != nil {
		fe, ok := r.(fatalError)
		if !ok {
			panic(r)
		}
		*err = fe
	}
}

// eventListener logs what an operator should hear about: background
// errors, data corruption, slow disks and write stalls.
func eventListener(log *slog.Logger) *pebble.EventListener {
	return &pebble.EventListener{
		BackgroundError: func(err error) {
			log.Error("store: background error", "err", err)
		},
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			log.Error("store: data corruption", "path", info.Path, "err", info.Details)
		},
		DiskSlow: func(info pebble.DiskSlowInfo) {
			log.Warn("store: disk slow", "path", info.Path, "op", info.OpType.String(), "duration", info.Duration)
		},
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
			log.Warn("store: write stall", "reason", info.Reason)
		},
		WriteStallEnd: func() {
			log.Info("store: write stall ended")
		},
	}
}
