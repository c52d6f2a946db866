package coord

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"drover/admin"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"
)

// ReasonBadKey is the reason of an Error verdict for a key whose URL does not
// normalise (not http(s), no host, bad escapes ...); Verdict.Detail says why.
const ReasonBadKey ledger.Reason = "bad-key"

// ReasonMaxJobs rejects a submit over Config.MaxJobs.
const ReasonMaxJobs ledger.Reason = "max-jobs"

// ReasonJobIDs rejects a submit once every job ID is given
// (broker.ErrJobIDsExhausted); Verdict.Detail says so.
const ReasonJobIDs ledger.Reason = "job-ids-exhausted"

// WireReasons lists every reason a verdict, a late answer or a submit
// verdict can carry to a peer (DRV/2 §6.8 lists the same; a test compares
// them). The ledger's other reasons (expired, released, bad-session) only
// ever appear in events.
var WireReasons = []ledger.Reason{
	ledger.ReasonNone, ledger.ReasonOwner, ledger.ReasonHandover, ledger.ReasonRequested,
	ledger.ReasonQueued, ledger.ReasonDone, ledger.ReasonFailed,
	ledger.ReasonNotOwner, ledger.ReasonUnknown, ledger.ReasonWrongState,
	ReasonBadKey, ReasonMaxJobs, ReasonJobIDs,
}

// Verdict is the answer for one key of a REQUEST, QUEUE or DONE batch.
type Verdict struct {
	FP      id.Fingerprint
	Verdict ledger.Verdict
	Reason  ledger.Reason
	Detail  string // for ReasonBadKey: what was wrong with the URL
}

// JobSpec is one job as a producer submits it; the URL is normalised here.
type JobSpec struct {
	Key     id.Key
	Headers map[string]string
	Payload []byte
}

// SubmitStatus is what became of one submitted job.
type SubmitStatus uint8

// The submit statuses.
const (
	Accepted  SubmitStatus = iota + 1 // a new job was queued
	Duplicate                         // the key is queued, done or failed already (see Reason)
	Waiting                           // another session holds the key in requested: the answer comes later
	Rejected                          // the spec is invalid (see Detail)
)

// String names the status as the wire protocol does.
func (s SubmitStatus) String() string {
	switch s {
	case Accepted:
		return "accepted"
	case Duplicate:
		return "duplicate"
	case Waiting:
		return "waiting"
	case Rejected:
		return "rejected"
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// SubmitVerdict answers one job of a SUBMIT.
type SubmitVerdict struct {
	FP     id.Fingerprint
	Status SubmitStatus
	Job    broker.JobID // for Accepted
	Reason ledger.Reason
	Detail string
}

// pendingKey names a SUBMIT that waits for a key another session requested.
type pendingKey struct {
	session id.Session
	fp      id.Fingerprint
}

type pendingSubmit struct {
	reqID uint64
	spec  broker.Spec
}

func (c *Coordinator) session(now time.Time, s id.Session) (*session, error) {
	ss, ok := c.sessions[s]
	if !ok {
		return nil, ErrUnknownSession
	}
	c.touch(now, ss)
	return ss, nil
}

// normalize turns a raw key into a normalised key and its fingerprint,
// taking them from the memo Unknown left (or UseNormals restored) when it
// has them.
func (c *Coordinator) normalize(k id.Key) (id.Key, id.Fingerprint, error) {
	if n, ok := c.norms.find(k); ok {
		return n.key, n.fp, n.err
	}
	return normalize(k)
}

// normalize turns a raw key into a normalised key and its fingerprint.
func normalize(k id.Key) (id.Key, id.Fingerprint, error) {
	nk, err := id.NewKey(k.Crawler, k.Processor, k.URL)
	if err != nil {
		return id.Key{}, id.Fingerprint{}, err
	}
	return nk, nk.Fingerprint(), nil
}

// Request asks for the work of each key (seed 000's request). Verdicts come
// back in order, one per key: OK (the session now owns the key), No (queued,
// done or failed already), Wait (another session holds it: the session joined
// the key's FIFO and gets an Answer later) or Error.
func (c *Coordinator) Request(now time.Time, s id.Session, reqID uint64, keys []id.Key, dst []Verdict) ([]Verdict, error) {
	if _, err := c.session(now, s); err != nil {
		return dst, err
	}
	// The good keys go to the ledger as one batch (the same answers as
	// one call per key, in order); a bad key's verdict keeps its place.
	base := len(dst)
	dst = slices.Grow(dst, len(keys))
	items := c.scratch.items[:0]
	for _, k := range keys {
		nk, fp, err := c.normalize(k)
		if err != nil {
			dst = append(dst, Verdict{Verdict: ledger.Error, Reason: ReasonBadKey, Detail: err.Error()})
			continue
		}
		items = append(items, ledger.Item{Key: nk, FP: fp})
		dst = append(dst, Verdict{FP: fp})
	}
	res := c.led.RequestBatch(now, s, reqID, items, c.scratch.results[:0])
	granted := c.grants.start(s) // for the QUEUE that follows (grants.go)
	j := 0
	for i := base; i < len(dst); i++ {
		if dst[i].Verdict == ledger.Error {
			continue
		}
		dst[i].Verdict, dst[i].Reason = res[j].Verdict, res[j].Reason
		switch {
		case res[j].Verdict == ledger.No:
			c.dedupHits++
		case res[j].Verdict == ledger.OK && res[j].Reason == ledger.ReasonNone:
			granted.add(keys[i-base], dst[i].FP)
		}
		j++
	}
	c.scratch.items, c.scratch.results = reuse(items), reuse(res) // the keys' strings go

	return dst, nil
}

// Queue moves keys the session owns from requested to queued (the work went
// into an external queue; DONE comes from outside later). Every waiter of
// such a key is answered No.
func (c *Coordinator) Queue(now time.Time, s id.Session, keys []id.Key, dst []Verdict) ([]Verdict, error) {
	if _, err := c.session(now, s); err != nil {
		return dst, err
	}
	// As Request: the good keys go to the ledger as one batch. A key the
	// session was just granted is found in the memo of its REQUEST
	// (grants.go) rather than normalised and hashed again.
	base := len(dst)
	dst = slices.Grow(dst, len(keys))
	granted := c.grants.of(s)
	fps := c.scratch.fps[:0]
	for i := range keys {
		fp, ok := granted.find(&keys[i])
		if !ok {
			var err error
			if _, fp, err = c.normalize(keys[i]); err != nil {
				dst = append(dst, Verdict{Verdict: ledger.Error, Reason: ReasonBadKey, Detail: err.Error()})
				continue
			}
		}
		fps = append(fps, fp)
		dst = append(dst, Verdict{FP: fp})
	}
	res := c.led.QueueBatch(now, s, fps, c.scratch.results[:0])
	j := 0
	for i := base; i < len(dst); i++ {
		if dst[i].Verdict == ledger.Error {
			continue
		}
		dst[i].Verdict, dst[i].Reason = res[j].Verdict, res[j].Reason
		j++
	}
	c.scratch.fps, c.scratch.results = fps[:0], res[:0]
	return dst, nil
}

// DoneItem is one key of a DONE and whether its work failed.
type DoneItem struct {
	Key    id.Key
	Failed bool
}

// Done marks keys done (or failed) whatever their state; waiters are
// answered No.
func (c *Coordinator) Done(now time.Time, s id.Session, items []DoneItem, dst []Verdict) ([]Verdict, error) {
	if _, err := c.session(now, s); err != nil {
		return dst, err
	}
	for _, it := range items {
		nk, fp, err := c.normalize(it.Key)
		if err != nil {
			dst = append(dst, Verdict{Verdict: ledger.Error, Reason: ReasonBadKey, Detail: err.Error()})
			continue
		}
		o := ledger.DoneOK
		if it.Failed {
			o = ledger.DoneFailed
		}
		c.led.Done(now, nk, fp, o)
		dst = append(dst, Verdict{FP: fp, Verdict: ledger.OK})
	}
	return dst, nil
}

// Submit requests, queues and enqueues each job in one step: a key nobody
// holds becomes a broker job (Accepted); a key already queued, done or
// failed is a Duplicate; a key another session holds in requested makes the
// submitter wait in its FIFO (Waiting) — if the key is handed over, the job
// is enqueued then and the answer comes through Ready.
func (c *Coordinator) Submit(now time.Time, s id.Session, reqID uint64, jobs []JobSpec, dst []SubmitVerdict) ([]SubmitVerdict, error) {
	if _, err := c.session(now, s); err != nil {
		return dst, err
	}
	// A batch takes every job or none: with fewer job IDs left than jobs,
	// one at a time, each refused once none is left.
	if c.batchSubmits() && len(jobs) > 1 && c.brk.IDsLeft() >= len(jobs) {
		return c.submitBatch(now, s, reqID, jobs, dst), nil // submitbatch.go
	}
	refused := c.idRefusals
	for i := range jobs {
		dst = append(dst, c.submitOne(now, s, reqID, &jobs[i]))
	}
	c.noteIDRefusals(now, c.idRefusals-refused)
	return dst, nil
}

// noteIDRefusals makes an event of n submitted jobs just refused for want
// of a job ID (none for 0).
func (c *Coordinator) noteIDRefusals(now time.Time, n uint64) {
	if n > 0 {
		c.extra = append(c.extra, admin.Event{At: now, Kind: admin.EventCoordJobIDs,
			Detail: strconv.FormatUint(n, 10) + " submitted jobs refused: every job ID is given (" + strconv.FormatUint(c.idRefusals, 10) + " so far)"})
	}
}

func (c *Coordinator) submitOne(now time.Time, s id.Session, reqID uint64, js *JobSpec) SubmitVerdict {
	nk, fp, err := c.normalize(js.Key)
	if err != nil {
		return SubmitVerdict{Status: Rejected, Reason: ReasonBadKey, Detail: err.Error()}
	}
	spec := broker.Spec{Key: nk, FP: fp, Host: id.Host(nk.URL), Headers: js.Headers, Payload: js.Payload}
	idErr := c.brk.CheckIDs()
	if idErr != nil || c.cfg.MaxJobs > 0 && c.submitted >= uint64(c.cfg.MaxJobs) {
		// Over the cap, or no job ID left: refused before the ledger sees
		// the key (the cap is checked at submit time: a submit that waited
		// for a key may still be enqueued when it is handed over).
		if rec, ok := c.led.Lookup(now, fp); ok && rec.State != ledger.Requested {
			c.dedupHits++
			return SubmitVerdict{FP: fp, Status: Duplicate, Reason: ledger.Reason(rec.State.String())}
		}
		if idErr != nil {
			return c.refuseNoID(fp, idErr)
		}
		return SubmitVerdict{FP: fp, Status: Rejected, Reason: ReasonMaxJobs}
	}
	v, r := c.led.Request(now, s, reqID, nk, fp)
	if v == ledger.OK {
		return c.enqueue(now, s, &spec)
	}
	return c.notGranted(s, reqID, &spec, v, r)
}

// notGranted is the verdict on a submitted job whose key the ledger did
// not grant (verdict v, reason r): a wait parks the submit until the key
// is free (pending), a no is a duplicate (of the existing job, for the
// producer's records), anything else is rejected.
func (c *Coordinator) notGranted(s id.Session, reqID uint64, spec *broker.Spec, v ledger.Verdict, r ledger.Reason) SubmitVerdict {
	fp := spec.FP
	switch v {
	case ledger.Wait:
		c.pending[pendingKey{s, fp}] = pendingSubmit{reqID: reqID, spec: *spec}
		return SubmitVerdict{FP: fp, Status: Waiting, Reason: r}
	case ledger.No:
		c.dedupHits++
		sv := SubmitVerdict{FP: fp, Status: Duplicate, Reason: r}
		if j, ok := c.jobOfKey(fp); ok {
			sv.Job = j
		}
		return sv
	default:
		return SubmitVerdict{FP: fp, Status: Rejected, Reason: r}
	}
}

// refuseNoID is the verdict on a submit refused for want of a job ID
// (err wraps broker.ErrJobIDsExhausted), counted (IDRefusals).
func (c *Coordinator) refuseNoID(fp id.Fingerprint, err error) SubmitVerdict {
	c.idRefusals++
	return SubmitVerdict{FP: fp, Status: Rejected, Reason: ReasonJobIDs, Detail: err.Error()}
}

// IDRefusals is how many submitted jobs were refused because every job ID
// was given (ReasonJobIDs).
func (c *Coordinator) IDRefusals() uint64 { return c.idRefusals }

// enqueue queues a key session s owns and gives the job to the broker. With
// no job ID left it refuses before the key is queued: the key stays
// requested by s (a wait handed over to s ends so), and nothing accepted
// is lost.
func (c *Coordinator) enqueue(now time.Time, s id.Session, spec *broker.Spec) SubmitVerdict {
	if err := c.brk.CheckIDs(); err != nil {
		return c.refuseNoID(spec.FP, err)
	}
	if v, r := c.led.Queue(now, s, spec.FP); v != ledger.OK {
		// Cannot happen for a key s was just granted; report it rather than lose it.
		return SubmitVerdict{FP: spec.FP, Status: Rejected, Reason: r, Detail: "queue after grant failed"}
	}
	c.submitted++
	if c.cfg.Shared != nil {
		if j, ok := c.pushShared(now, spec); ok {
			return SubmitVerdict{FP: spec.FP, Status: Accepted, Job: j}
		}
	}
	j := c.brk.Submit(now, *spec)
	c.lend(spec.FP)
	return SubmitVerdict{FP: spec.FP, Status: Accepted, Job: j}
}

// lend lends the ledger's URL of queued key fp to the job just submitted
// for it: one copy of the URL, the job's (ledger/lend.go).
func (c *Coordinator) lend(fp id.Fingerprint) {
	if c.mem != nil {
		c.mem.Lend(fp)
	}
}

// Progress records a worker's progress note on a run it holds, as an event
// for the console's Events view. A note on a run that is not the job's
// current attempt on this worker is dropped.
func (c *Coordinator) Progress(now time.Time, s id.Session, r broker.Run, text string) {
	ss, ok := c.sessions[s]
	if !ok {
		return
	}
	c.touch(now, ss)
	if !c.brk.Holds(s, r) {
		return
	}
	c.extra = append(c.extra, admin.Event{At: now, Kind: admin.EventJobProgress, JobID: uint64(r.Job), Worker: ss.name, Detail: text})
}

// Result is one run's outcome a worker reports, with the links it
// discovered.
type Result struct {
	Run        broker.Run
	Outcome    broker.Outcome
	Discovered []JobSpec
}

// ResultVerdict answers one Result.
type ResultVerdict struct {
	Run broker.Run
	// Status: Recorded (applied now; links submitted), Again (this
	// worker's result for the run was recorded before: nothing changed,
	// links not submitted again), Stale or Unknown (ignored and counted;
	// links not submitted).
	Status     broker.ResultStatus
	Accepted   int    // discovered jobs newly queued
	Duplicates int    // discovered jobs already known
	Rejected   int    // discovered jobs with invalid URLs
	Err        string // why the outcome was not applied (invalid outcome)
}

// Results applies outcomes from worker session s. The discovered links of
// a result are submitted in the same step as its outcome (atomically, as
// one input), and only when the outcome is applied (Recorded): the links
// of a stale run, or of a result recorded before, are not submitted.
func (c *Coordinator) Results(now time.Time, s id.Session, results []Result, dst []ResultVerdict) ([]ResultVerdict, error) {
	ss, err := c.session(now, s)
	if err != nil {
		return dst, err
	}
	if ss.role != RoleWorker {
		return dst, errorf(ErrForbidden, "result from a %v session: only workers report results", ss.role)
	}
	for i := range results {
		r := &results[i]
		rv := ResultVerdict{Run: r.Run}
		st, err := c.brk.Result(now, s, r.Run, r.Outcome)
		if err != nil {
			rv.Status = broker.Stale
			rv.Err = fmt.Sprintf("result for job %d attempt %d: %v", r.Run.Job, r.Run.Attempt, err)
			dst = append(dst, rv)
			continue
		}
		rv.Status = st
		if st == broker.Recorded {
			for j := range r.Discovered {
				switch c.submitOne(now, s, 0, &r.Discovered[j]).Status {
				case Accepted:
					rv.Accepted++
				case Duplicate, Waiting:
					rv.Duplicates++
				case Rejected:
					rv.Rejected++
				}
			}
		}
		dst = append(dst, rv)
	}
	return dst, nil
}

// Robots keeps the robots.txt a worker session fetched, for the whole
// fleet (broker.SetRobots): later jobs of its origin carry the copy, and
// its Crawl-delay spaces the host for every worker. The worker must hold a
// job of the origin's host. It returns the copy kept (nil when the report
// had expired already).
func (c *Coordinator) Robots(now time.Time, s id.Session, r broker.Robots) (*broker.Robots, error) {
	if _, err := c.session(now, s); err != nil {
		return nil, err
	}
	kept, err := c.brk.SetRobots(now, s, r)
	if errors.Is(err, broker.ErrBadOrigin) {
		return nil, errorf(ErrInvalid, "%w", err)
	}
	return kept, err
}
