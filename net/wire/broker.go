package wire

import (
	"time"

	"drover/coord/id"
)

// SubmitItem is one job to submit: its key, the headers a worker must
// satisfy, and an opaque payload. It is also the form of a discovered link
// in a result.
type SubmitItem struct {
	Key     id.Key
	Headers Headers
	Payload []byte
}

// Submit submits a batch of jobs (client -> server). For each, atomically:
// request the key, queue it and enqueue the job; SUBMITTED answers item by
// item.
type Submit struct {
	Req  uint64
	Jobs []SubmitItem
}

// Command is CmdSubmit.
func (m *Submit) Command() Command { return CmdSubmit }

// RequestID is the id SUBMITTED echoes.
func (m *Submit) RequestID() uint64 { return m.Req }

func (m *Submit) appendBody(w *writer) {
	w.count("count", len(m.Jobs))
	for i := range m.Jobs {
		w.submitItem(&m.Jobs[i])
	}
}

func (m *Submit) decodeBody(r *reader) {
	n := r.count("count", 1, MaxBatch, minSubmit)
	for it := range items(r, &m.Jobs, n) {
		r.submitItem(it)
	}
	r.end()
}

// Submitted answers SUBMIT (server -> client), one item per job in order.
// Items with status wait are resolved later by another SUBMITTED with the
// same request id, carrying only those items (matched by fingerprint), never
// with status wait.
type Submitted struct {
	Req   uint64
	Items []SubmittedItem
}

// SubmittedItem is the fate of one submitted job. JobID is set when
// accepted, may name the existing job of a duplicate, and is 0 on error and
// wait.
type SubmittedItem struct {
	Status      SubmitStatus
	JobID       uint64
	Fingerprint id.Fingerprint
	Reason      string
}

// Command is CmdSubmitted.
func (m *Submitted) Command() Command { return CmdSubmitted }

// RequestID echoes the SUBMIT's.
func (m *Submitted) RequestID() uint64 { return m.Req }

func (m *Submitted) appendBody(w *writer) {
	w.count("count", len(m.Items))
	for i := range m.Items {
		it := &m.Items[i]
		w.u8(uint8(it.Status))
		w.u64(it.JobID)
		w.b = append(w.b, it.Fingerprint[:]...)
		w.str("reason", it.Reason)
	}
}

func (m *Submitted) decodeBody(r *reader) {
	n := r.count("count", 1, MaxBatch, 1+8+16+2)
	for it := range items(r, &m.Items, n) {
		it.Status = SubmitStatus(r.enum("status", validSubmitStatus, submitStatusNames[:]))
		it.JobID = r.u64("job id")
		if r.err == nil {
			switch {
			case it.Status == SubmitAccepted && it.JobID == 0:
				r.fail(CodeMalformed, "job id", "0, want the new job's id for accepted")
			case (it.Status == SubmitError || it.Status == SubmitWait) && it.JobID != 0:
				r.fail(CodeMalformed, "job id", "%d, want 0 for %s", it.JobID, it.Status)
			}
		}
		it.Fingerprint = r.fingerprint("fingerprint")
		it.Reason = r.str("reason", kLine, 0, MaxReason)
	}
	r.end()
}

func validSubmitStatus(v uint8) bool { return SubmitStatus(v).Valid() }

// Job dispatches a batch of jobs to a worker (server -> worker), never more
// than its free slots.
type Job struct {
	Req  uint64 // 0
	Jobs []JobItem
}

// JobItem is one job to run. Attempt counts dispatches of this job, from 1.
type JobItem struct {
	JobID   uint64
	Attempt uint32
	Key     id.Key
	Headers Headers
	Payload []byte
}

// Command is CmdJob.
func (m *Job) Command() Command { return CmdJob }

// RequestID is 0 by convention.
func (m *Job) RequestID() uint64 { return m.Req }

func (m *Job) appendBody(w *writer) {
	w.count("count", len(m.Jobs))
	for i := range m.Jobs {
		it := &m.Jobs[i]
		w.u64(it.JobID)
		w.u32(it.Attempt)
		w.key(it.Key)
		w.headers(it.Headers)
		w.blob("payload", it.Payload)
	}
}

func (m *Job) decodeBody(r *reader) {
	n := r.count("count", 1, MaxBatch, 8+4+minSubmit)
	for it := range items(r, &m.Jobs, n) {
		it.JobID = r.jobID("job id")
		it.Attempt = r.u32("attempt")
		if r.err == nil && it.Attempt == 0 {
			r.fail(CodeMalformed, "attempt", "0, want at least 1")
		}
		r.key(&it.Key)
		it.Headers = r.headers()
		it.Payload = r.blob("payload", MaxPayload)
	}
	r.end()
}

// Run names one attempt of one job: the attempt is the job's fencing
// token. JOB hands out runs; HELLO's held list, WELCOME's cancel list,
// CANCEL, RESULT, RESULT-OK and PROGRESS name them.
type Run struct {
	JobID   uint64 // at least 1
	Attempt uint32 // at least 1
}

// Cancel tells a worker to stop runs it holds (server -> worker), e.g.
// after an operator requeued their jobs. The worker still answers each
// with a RESULT (whatever its outcome); the server answers it stale. The
// server counts the slot free as soon as it sends CANCEL.
type Cancel struct {
	Req    uint64 // 0
	Runs   []Run
	Reason string
}

// Command is CmdCancel.
func (m *Cancel) Command() Command { return CmdCancel }

// RequestID is 0 by convention.
func (m *Cancel) RequestID() uint64 { return m.Req }

func (m *Cancel) appendBody(w *writer) {
	w.runs("count", m.Runs)
	w.str("reason", m.Reason)
}

func (m *Cancel) decodeBody(r *reader) {
	var n int
	m.Runs, n = r.runs("count", "job id", MaxSlots)
	if r.err == nil && n == 0 {
		r.fail(CodeMalformed, "count", "0, want at least 1")
	}
	m.Reason = r.str("reason", kText, 0, MaxText)
	r.end()
}

// Result reports finished jobs (worker -> server). The worker keeps each
// result until a RESULT-OK acknowledges it and sends it again after a
// reconnect; the server treats a repeated result as the same result.
type Result struct {
	Req   uint64
	Items []ResultItem
}

// ResultItem is how one run (job and attempt) ended. RetryAfter is set
// only for throttled; Links (discovered work, submitted atomically with
// the result) only for ok.
type ResultItem struct {
	JobID      uint64
	Attempt    uint32 // the attempt of the JOB that carried it
	Outcome    Outcome
	RetryAfter time.Duration // whole milliseconds
	Error      string
	Output     []byte
	Links      []SubmitItem
}

// Command is CmdResult.
func (m *Result) Command() Command { return CmdResult }

// RequestID is the id RESULT-OK echoes.
func (m *Result) RequestID() uint64 { return m.Req }

func (m *Result) appendBody(w *writer) {
	w.count("count", len(m.Items))
	for i := range m.Items {
		it := &m.Items[i]
		w.u64(it.JobID)
		w.u32(it.Attempt)
		w.u8(uint8(it.Outcome))
		w.ms("retry after", it.RetryAfter)
		w.str("error", it.Error)
		w.blob("output", it.Output)
		w.count("link count", len(it.Links))
		for j := range it.Links {
			w.submitItem(&it.Links[j])
		}
	}
}

func (m *Result) decodeBody(r *reader) {
	n := r.count("count", 1, MaxBatch, 8+4+1+4+2+4+4)
	var scratchLink SubmitItem
	for it := range items(r, &m.Items, n) {
		it.JobID = r.jobID("job id")
		it.Attempt = r.attempt("attempt")
		it.Outcome = Outcome(r.enum("outcome", validOutcome, outcomeNames[:]))
		it.RetryAfter = r.ms("retry after")
		if r.err == nil && it.RetryAfter != 0 && it.Outcome != OutcomeThrottled {
			r.fail(CodeMalformed, "retry after", "%v for outcome %s, want 0 unless throttled", it.RetryAfter, it.Outcome)
		}
		it.Error = r.str("error", kText, 0, MaxText)
		it.Output = r.blob("output", MaxOutput)
		k := r.count("link count", 0, MaxLinksPerResult, minSubmit)
		if r.err != nil {
			break
		}
		if k > 0 && it.Outcome != OutcomeOK {
			r.fail(CodeMalformed, "link count", "%d links for outcome %s, want links only with ok", k, it.Outcome)
			break
		}
		if !r.fill {
			r.nLinks += k
			if r.nLinks > MaxLinks {
				r.fail(CodeTooLarge, "link count", "%d links in the message so far, want at most %d", r.nLinks, MaxLinks)
				break
			}
		} else if k > 0 {
			it.Links = r.links[:k:k]
			r.links = r.links[k:]
		}
		for j := range k {
			r.link = j
			l := &scratchLink
			if r.fill {
				l = &it.Links[j]
			}
			r.submitItem(l)
		}
		r.link = -1
	}
	r.end()
}

func validOutcome(v uint8) bool { return Outcome(v).Valid() }

// ResultOK acknowledges a RESULT (server -> worker), one item per result in
// order, with the same request id. Accepted and Duplicates count the
// result's links.
type ResultOK struct {
	Req   uint64
	Items []ResultOKItem
}

// ResultOKItem is what the server did with one result, naming its run.
type ResultOKItem struct {
	JobID      uint64
	Attempt    uint32
	Status     ResultStatus
	Accepted   uint32
	Duplicates uint32
}

// Command is CmdResultOK.
func (m *ResultOK) Command() Command { return CmdResultOK }

// RequestID echoes the RESULT's.
func (m *ResultOK) RequestID() uint64 { return m.Req }

func (m *ResultOK) appendBody(w *writer) {
	w.count("count", len(m.Items))
	for i := range m.Items {
		it := &m.Items[i]
		w.u64(it.JobID)
		w.u32(it.Attempt)
		w.u8(uint8(it.Status))
		w.u32(it.Accepted)
		w.u32(it.Duplicates)
	}
}

func (m *ResultOK) decodeBody(r *reader) {
	n := r.count("count", 1, MaxBatch, 8+4+1+4+4)
	for it := range items(r, &m.Items, n) {
		it.JobID = r.jobID("job id")
		it.Attempt = r.attempt("attempt")
		it.Status = ResultStatus(r.enum("status", validResultStatus, resultStatusNames[:]))
		it.Accepted = r.u32("accepted")
		it.Duplicates = r.u32("duplicates")
		if r.err == nil && it.Status != ResultRecorded && (it.Accepted != 0 || it.Duplicates != 0) {
			r.fail(CodeMalformed, "accepted", "%d accepted and %d duplicates for status %s, want 0",
				it.Accepted, it.Duplicates, it.Status)
		}
	}
	r.end()
}

func validResultStatus(v uint8) bool { return ResultStatus(v).Valid() }

// Progress reports how a running job is doing (worker -> server), for the
// console. No reply.
type Progress struct {
	Req     uint64 // 0
	JobID   uint64
	Attempt uint32
	Text    string
}

// Command is CmdProgress.
func (m *Progress) Command() Command { return CmdProgress }

// RequestID is 0 by convention.
func (m *Progress) RequestID() uint64 { return m.Req }

func (m *Progress) appendBody(w *writer) {
	w.u64(m.JobID)
	w.u32(m.Attempt)
	w.str("text", m.Text)
}

func (m *Progress) decodeBody(r *reader) {
	m.JobID = r.jobID("job id")
	m.Attempt = r.attempt("attempt")
	m.Text = r.str("text", kText, 0, MaxText)
	r.end()
}
