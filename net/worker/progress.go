package worker

import (
	"context"
	"sync/atomic"
	"time"

	"drover/net/internal/conn"
	"drover/net/wire"
)

// ProgressEvery is the shortest interval between two progress reports of
// one job; reports in between are dropped (DRV/2 asks for at most one
// PROGRESS per job per second).
const ProgressEvery = time.Second

// progressKey is the context key of a job's progress reporter.
type progressKey struct{}

// reporter sends a job's PROGRESS through the worker's connection.
type reporter struct {
	run  wire.Run // the job and attempt it reports on
	c    *conn.Conn
	last atomic.Int64 // unix ns of the last report sent; 0: none yet
}

// Progress tells the coordinator how the job running under ctx is doing
// (the console shows it), e.g. "fetched 3 of 7". Reports less than
// ProgressEvery after the previous one are dropped, and so are reports
// made while the worker is not connected. Outside a job's context it does
// nothing.
func Progress(ctx context.Context, text string) {
	r, ok := ctx.Value(progressKey{}).(*reporter)
	if !ok {
		return
	}
	now := r.c.Clock().Now().UnixNano()
	last := r.last.Load()
	if last != 0 && now-last < int64(ProgressEvery) || !r.last.CompareAndSwap(last, now) {
		return
	}
	msg := &wire.Progress{JobID: r.run.JobID, Attempt: r.run.Attempt, Text: wire.Clip(toValid(text), wire.MaxText)}
	r.c.Post(func(l *conn.Link) {
		if l.Up() {
			l.Send(msg)
		}
	})
}
