package worker

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"drover/net/internal/conn"
	"drover/net/wire"
)

// outcome is the result's outcome with the zero value resolved.
func (r Result) outcome() wire.Outcome {
	if r.Outcome != 0 {
		return r.Outcome
	}
	if r.Error == "" {
		return wire.OutcomeOK
	}
	return wire.OutcomeInternal
}

// toItem turns a handler's result into what DRV/2 carries, within its
// limits: a result that cannot be carried becomes a failure saying why.
func toItem(run wire.Run, res Result) wire.ResultItem {
	id, at := run.JobID, run.Attempt
	o := res.outcome()
	if !o.Valid() {
		return wire.ResultItem{JobID: id, Attempt: at, Outcome: wire.OutcomeInternal,
			Error: fmt.Sprintf("handler returned outcome %d, want ok, internal, external or throttled", uint8(o))}
	}
	if len(res.Output) > wire.MaxOutput {
		return wire.ResultItem{JobID: id, Attempt: at, Outcome: wire.OutcomeInternal,
			Error: fmt.Sprintf("output of %d bytes, want at most %d", len(res.Output), wire.MaxOutput)}
	}
	it := wire.ResultItem{JobID: id, Attempt: at, Outcome: o, Error: text(res.Error), Output: res.Output}
	if o == wire.OutcomeThrottled && res.RetryAfter > 0 {
		// Whole milliseconds, rounded up so that a short Retry-After does
		// not become "use the server's default".
		ra := (res.RetryAfter + time.Millisecond - 1).Truncate(time.Millisecond)
		it.RetryAfter = min(ra, wire.MaxRetryAfter.Truncate(time.Millisecond))
	}
	if o == wire.OutcomeOK && len(res.Links) > 0 {
		if len(res.Links) > wire.MaxLinksPerResult {
			return wire.ResultItem{JobID: id, Attempt: at, Outcome: wire.OutcomeExternal,
				Error: fmt.Sprintf("%d discovered links, want at most %d per result", len(res.Links), wire.MaxLinksPerResult)}
		}
		it.Links = res.Links
	}
	return it
}

// text makes s valid UTF-8 within wire.MaxText bytes.
func text(s string) string { return wire.Clip(toValid(s), wire.MaxText) }

// toValid replaces invalid UTF-8 in s.
func toValid(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// itemSize is a result's encoded size.
func itemSize(it *wire.ResultItem) int {
	n := 8 + 4 + 1 + 4 + 2 + len(it.Error) + 4 + len(it.Output) + 4
	for i := range it.Links {
		n += submitItemSize(&it.Links[i])
	}
	return n
}

func submitItemSize(s *wire.SubmitItem) int {
	n := 6 + len(s.Key.Crawler) + len(s.Key.Processor) + len(s.Key.URL) + 2 + 4 + len(s.Payload)
	for _, h := range s.Headers {
		n += 4 + len(h.Name) + len(h.Value)
	}
	return n
}

// sendResults sends the results in the outbox, as few RESULT messages as
// the server's limits allow.
func (s *session) sendResults(l *conn.Link) {
	maxBatch, maxBody := wire.MaxBatch, wire.MaxBody
	if w := l.Welcome(); w != nil {
		maxBatch, maxBody = int(w.Limits.MaxBatch), int(w.Limits.MaxBody)
	}
	var (
		// A RESULT's items are its own (a pipe hands the message to the
		// server as it is); ids stay in inflight until the RESULT-OK.
		batch []wire.ResultItem
		ids   []wire.Run
		size  = 4
		links int
	)
	batch, ids = newBatch()
	for _, id := range s.outbox {
		r := s.jobs[id]
		if r == nil || r.result == nil || r.abandoned || r.sentIn != 0 {
			continue
		}
		sz, nl := itemSize(r.result), len(r.result.Links)
		if len(batch) > 0 && (len(batch) >= maxBatch || size+sz > maxBody || links+nl > wire.MaxLinks) {
			s.sendBatch(l, batch, ids, true)
			batch, ids = newBatch()
			size, links = 4, 0
		}
		batch = append(batch, *r.result)
		ids = append(ids, id)
		size += sz
		links += nl
	}
	if len(batch) > 0 {
		s.sendBatch(l, batch, ids, true)
	}
	s.outbox = s.outbox[:0]
}

// newBatch makes the items and ids of a RESULT with room for one result
// in one allocation (most RESULTs carry one); more grow them as usual.
func newBatch() ([]wire.ResultItem, []wire.Run) {
	b := &struct {
		item [1]wire.ResultItem
		id   [1]wire.Run
	}{}
	return b.item[:0], b.id[:0]
}

// sendBatch sends one RESULT. If DRV/2 refuses it, the results it cannot
// carry are replaced by external failures naming the problem (the job, not
// the worker, produced them), and the batch is sent again once.
func (s *session) sendBatch(l *conn.Link, batch []wire.ResultItem, ids []wire.Run, retry bool) {
	req := l.NextReq()
	err := l.Send(&wire.Result{Req: req, Items: batch})
	if err != nil {
		if errors.Is(err, conn.ErrNotUp) || !retry {
			s.opts.Log.Warn("results not sent", "results", len(batch), "err", err)
			return
		}
		for i := range batch {
			if _, err := s.enc.Encode(&wire.Result{Req: req, Items: batch[i : i+1]}); err != nil {
				batch[i] = wire.ResultItem{JobID: batch[i].JobID, Attempt: batch[i].Attempt, Outcome: wire.OutcomeExternal,
					Error: text("result not sendable: " + err.Error())}
				*s.jobs[ids[i]].result = batch[i]
				s.opts.Log.Warn("result not sendable: reporting an external failure", "job", ids[i], "err", err)
			}
		}
		s.sendBatch(l, batch, ids, false)
		return
	}
	for _, id := range ids {
		s.jobs[id].sentIn = req
	}
	s.inflight[req] = ids
}
