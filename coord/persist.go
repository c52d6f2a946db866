package coord

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"drover/admin"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"
)

// Durability (issue 7), the pure half: with Config.Persist, Ready reports
// in Output.Writes every change to the durable state since the last Ready,
// as values the transport maps to store records and writes as one atomic
// batch; on start, RestoreRecord and FinishRestore rebuild the coordinator
// from those records. coord does not know the store: it defines its own
// record types.
//
// What is durable: ledger keys in queued and done (requested keys are
// bound to live sessions), every broker job with its spec, state, counters
// and history, and a few counters (meta records). Replaying every write in
// order into a fresh coordinator, the last write of each key, job and meta
// name winning, reproduces the queued and done keys, the jobs and the
// totals.

// RecordKind says which field of a Record is set.
type RecordKind uint8

// The record kinds.
const (
	RecordKey  RecordKind = iota + 1 // Record.Key: a ledger write (put queued, put done, delete)
	RecordJob                        // Record.Job: put a job's record (never deleted by coord)
	RecordMeta                       // Record.Meta: set a named counter
)

// String names the kind ("key", "job", "meta").
func (k RecordKind) String() string {
	switch k {
	case RecordKey:
		return "key"
	case RecordJob:
		return "job"
	case RecordMeta:
		return "meta"
	}
	return fmt.Sprintf("record(%d)", uint8(k))
}

// JobRecord is the persisted form of one broker job: id, fingerprint,
// key, host, headers, payload, state, attempts, failures, throttles, retry
// time, worker, last error, created, updated and history. Headers and
// Payload are shared with the broker: nobody may modify them.
type JobRecord = broker.JobRecord

// MetaRecord is a named counter (see the Meta names).
type MetaRecord struct {
	Name  string
	Value uint64
}

// Record is one durable change, in Output.Writes, or one persisted record
// to restore: Kind says which of Key, Job and Meta is set.
//
// A key record is keyed by Key.FP: PutQueued and PutDone (Key.Outcome says
// done or failed) replace the key's record, Delete removes it. A job
// record is keyed by Job.ID and replaces the job's record. A meta record
// is keyed by Meta.Name and replaces its value.
type Record struct {
	Kind RecordKind
	Key  ledger.Write
	Job  JobRecord
	Meta MetaRecord
}

// The meta records coord writes. Values are counts, except MetaPaused (0
// or 1). Meta records with other names are ignored by RestoreRecord.
const (
	MetaLastJob     = "coord.last-job"    // the highest job id allocated: ids are never reused
	MetaDispatches  = "coord.dispatches"  // Totals.Dispatches
	MetaCompletions = "coord.completions" // Totals.Completions
	MetaFailures    = "coord.failures"    // Totals.Failures
	MetaThrottles   = "coord.throttles"   // Totals.Throttles
	MetaOrphans     = "coord.orphans"     // Totals.StaleResults
	MetaDedupHits   = "coord.dedup-hits"  // Totals.DedupHits
	MetaMalformed   = "coord.malformed"   // Totals.Malformed
	MetaPaused      = "coord.paused"      // 1 while dispatch is paused
	MetaEventSeq    = "coord.event-seq"   // the last event sequence number
)

const (
	mLastJob = iota
	mDispatches
	mCompletions
	mFailures
	mThrottles
	mOrphans
	mDedupHits
	mMalformed
	mPaused
	mEventSeq
	nMeta
)

var metaNames = [nMeta]string{
	MetaLastJob, MetaDispatches, MetaCompletions, MetaFailures,
	MetaThrottles, MetaOrphans, MetaDedupHits, MetaMalformed, MetaPaused, MetaEventSeq,
}

// durability is the coordinator's persistence and restore state.
type durability struct {
	meta    [nMeta]uint64 // values last written (or restored)
	ids     []broker.JobID
	lwrites []ledger.Write

	phase    restorePhase
	restored [nMeta]uint64
	seen     [nMeta]bool
	stats    RestoreStats

	// The reclaim wait after a restore: restored dispatched jobs wait for
	// their workers until reclaimAt (zero: no wait).
	reclaim   []broker.JobID
	reclaimAt time.Time
}

type restorePhase uint8

const (
	restoreNone restorePhase = iota // nothing restored yet: a restore may start
	restoring                       // RestoreRecord called, FinishRestore not yet
	restoreDone                     // FinishRestore called: no more restoring
)

// metaValues returns the current values of the meta records.
func (c *Coordinator) metaValues() [nMeta]uint64 {
	bc := c.brk.Counters()
	var v [nMeta]uint64
	v[mLastJob] = uint64(bc.LastID)
	v[mDispatches] = bc.Dispatches
	v[mCompletions] = bc.Completions
	v[mFailures] = bc.Failures
	v[mThrottles] = bc.Throttles
	v[mOrphans] = bc.Orphans
	v[mDedupHits] = c.dedupHits
	v[mMalformed] = c.malformed
	if bc.Paused {
		v[mPaused] = 1
	}
	v[mEventSeq] = c.seq
	return v
}

// collectWrites appends the step's durable changes to dst: the ledger's
// key writes in order, then the record of every job whose state, counters
// or history changed (found through the step's events, which name their
// job), then the meta records whose values changed. Without Config.Persist
// only the ledger's writes are passed on (when Ledger.Persist is set).
func (c *Coordinator) collectWrites(now time.Time, dst []Record) []Record {
	d := &c.dur
	d.lwrites = c.led.TakeWrites(d.lwrites[:0])
	persist := c.cfg.Persist && d.phase != restoring // (while restoring, the state is not whole yet: no job or meta records)
	ids := d.ids[:0]
	if persist {
		ids = c.changedJobs(ids)
	}
	// Room for the step once: a step that takes in a 20,000-job submit
	// writes 40,000 records of 400 bytes, and growing dst append by append
	// copied them over and over (a third of the durable path's CPU).
	dst = slices.Grow(dst, len(d.lwrites)+len(ids)+nMeta)
	for _, w := range d.lwrites {
		dst = append(dst, Record{Kind: RecordKey, Key: w})
	}
	clear(d.lwrites)
	if !persist {
		return dst
	}
	for _, j := range ids {
		// Filled in place: a Record is some 400 bytes, and copying each
		// job's through a temporary was a sizeable part of the step.
		dst = append(dst, Record{Kind: RecordJob})
		r := &dst[len(dst)-1]
		ok := false
		if r.Job, ok = c.brk.Record(j); !ok {
			r.Job, ok = c.forgottenDone(now, j)
		}
		if !ok {
			dst = dst[:len(dst)-1]
		}
	}
	d.ids = ids

	cur := c.metaValues()
	for i, v := range cur {
		if v != d.meta[i] {
			dst = append(dst, Record{Kind: RecordMeta, Meta: MetaRecord{Name: metaNames[i], Value: v}})
			d.meta[i] = v
		}
	}
	return dst
}

// changedJobs appends to ids, sorted and without repeats, the jobs whose
// state, counters or history changed in the step (found through the
// step's events, which name their job). A throttle that extended its
// host's back-off moved the retry time of every job held back on the host
// (one host.backoff event, no event per job): those are included too.
func (c *Coordinator) changedJobs(ids []broker.JobID) []broker.JobID {
	extended := false
	for i := range c.out.Events {
		if c.out.Events[i].Kind == admin.EventHostBackoff {
			extended = true
			break
		}
	}
	for i := range c.out.Events {
		e := &c.out.Events[i]
		if e.JobID == 0 || e.Kind == admin.EventJobProgress || e.Kind == admin.EventJobOrphanResult ||
			e.Kind == admin.EventJobReconciled && e.Detail == broker.KeptDetail {
			continue // no change to the job's record
		}
		ids = append(ids, broker.JobID(e.JobID))
		if extended && e.Kind == admin.EventJobThrottled {
			ids = c.brk.HostBackoffJobs(broker.JobID(e.JobID), ids)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// forgottenDone is the record of a job that finished in this step and whose
// record the broker's done retention forgot before Ready (more jobs
// finished in one step than Broker.DoneRetention keeps): what Finished
// says of it, enough that a restart never runs it again.
func (c *Coordinator) forgottenDone(now time.Time, j broker.JobID) (JobRecord, bool) {
	for _, f := range c.out.Finished {
		if f.Job == j && !f.Failed {
			return JobRecord{ID: j, FP: f.FP, Key: f.Key, Host: id.Host(f.Key.URL), State: broker.Done, Updated: now}, true
		}
	}
	return JobRecord{}, false
}

// RestoreStats says what a restore rebuilt, for the log and the console.
type RestoreStats struct {
	// Key records by what they put (KeysDeleted: Delete records).
	KeysQueued, KeysDone, KeysFailed, KeysDeleted int
	// KeysInStore counts the done and failed key records (included in
	// KeysDone and KeysFailed) the restore left in the store: with a
	// bounded done set they are looked up when a key is asked for.
	KeysInStore int
	// KeysLent counts the restored queued keys lent to their restored
	// jobs (one copy of each key, the job's): as each key came, when its
	// job was restored before it, else at FinishRestore
	// (ledger.Ledger.LendQueued).
	KeysLent int
	// Job records by state.
	JobsQueued, JobsDispatched, JobsBackoff, JobsDone, JobsFailed int
	Meta                                                          int          // meta records applied
	MetaIgnored                                                   int          // meta records with names coord does not know
	LastJob                                                       broker.JobID // the highest job id allocated so far
	// ForgottenDone counts done jobs without a record in memory (beyond
	// Broker.DoneRetention, or swept from the store).
	ForgottenDone int
	// Reclaim lists the jobs that were dispatched when the coordinator
	// stopped: they wait for Workers to reclaim them until ReclaimUntil,
	// then go back to the queue uncharged.
	Reclaim      []broker.JobID
	Workers      []string
	ReclaimUntil time.Time
	// Clean: the store was closed by a clean shutdown (RestoreClean): no
	// attempt may be running unrecorded.
	Clean bool
}

// String summarises the stats in one line.
func (s RestoreStats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "keys: %d queued, %d done, %d failed", s.KeysQueued, s.KeysDone, s.KeysFailed)
	if s.KeysInStore > 0 {
		fmt.Fprintf(&b, " (%d of them left in the store, looked up on demand)", s.KeysInStore)
	}
	if s.KeysDeleted > 0 {
		fmt.Fprintf(&b, ", %d deleted", s.KeysDeleted)
	}
	fmt.Fprintf(&b, "; jobs: %d queued, %d dispatched, %d backoff, %d done, %d failed; last job id %d",
		s.JobsQueued, s.JobsDispatched, s.JobsBackoff, s.JobsDone, s.JobsFailed, s.LastJob)
	if len(s.Reclaim) > 0 {
		ws := strings.Join(s.Workers[:min(len(s.Workers), 5)], ", ")
		if len(s.Workers) > 5 {
			ws += fmt.Sprintf(" and %d more workers", len(s.Workers)-5)
		}
		fmt.Fprintf(&b, "; %d jobs await reclaim by %s until %s", len(s.Reclaim), ws, s.ReclaimUntil.Format(time.RFC3339))
	}
	if s.Clean {
		b.WriteString("; after a clean shutdown")
	}
	return b.String()
}

// RestoreClean tells the restore, before its first RestoreRecord, that the
// records come from a clean shutdown (the transport told every worker and
// recorded every dispatch before it closed the store): no restored job may
// be running an unrecorded attempt, so none is skipped
// (broker.OutcomeSkipped) or adopted from a worker's HELLO.
func (c *Coordinator) RestoreClean() error {
	if c.dur.phase != restoreNone {
		return fmt.Errorf("restore clean: records were restored already, want it before the first RestoreRecord")
	}
	c.dur.stats.Clean = true
	c.brk.RestoreClean()
	return nil
}

// Restore rebuilds a fresh coordinator from persisted records: RestoreRecord
// for each, then FinishRestore(now).
func (c *Coordinator) Restore(now time.Time, recs []Record) (RestoreStats, error) {
	for i := range recs {
		if err := c.RestoreRecord(recs[i]); err != nil {
			return c.dur.stats, err
		}
	}
	return c.FinishRestore(now)
}

// RestoreRecord applies one persisted record while rebuilding the
// coordinator on start, before any session says hello and before any other
// input; FinishRestore ends the restore. Key records may come in any order
// (a key's last record wins); job records must come in ascending id order,
// as the store returns them. Nothing is emitted, charged or dispatched.
func (c *Coordinator) RestoreRecord(rec Record) error {
	d := &c.dur
	switch {
	case d.phase == restoreDone:
		return fmt.Errorf("restore %s record: the restore is finished, want records before FinishRestore", rec.Kind)
	case len(c.sessions) > 0:
		return fmt.Errorf("restore %s record: %d sessions said hello already, want to restore before any session", rec.Kind, len(c.sessions))
	case d.phase == restoreNone && (c.brk.Submitted() > 0 || c.led.Counts() != ledger.Counts{}):
		return fmt.Errorf("restore %s record: the coordinator has keys or jobs already, want a fresh one", rec.Kind)
	}
	d.phase = restoring
	switch rec.Kind {
	case RecordKey:
		w := rec.Key
		switch w.Op {
		case ledger.PutQueued:
			d.stats.KeysQueued++
		case ledger.PutDone:
			if w.Outcome == ledger.DoneOK {
				d.stats.KeysDone++
			} else {
				d.stats.KeysFailed++
			}
		case ledger.Delete:
			d.stats.KeysDeleted++
		default:
			return fmt.Errorf("restore key record %s: op %v, want put-queued, put-done or delete", w.FP, w.Op)
		}
		if w.Op != ledger.Delete && w.At.IsZero() {
			return fmt.Errorf("restore key record %s: %v with a zero time, want when the key was queued or done", w.FP, w.Op)
		}
		c.led.Restore(w)
		if w.Op == ledger.PutQueued && c.mem != nil && c.mem.Lend(w.FP) {
			// A key restored after its job (the resident restore reads
			// the jobs first) is lent at once: its record's memory serves
			// the next key's, and the ledger's slabs do not grow with keys
			// that are lent in the end.
			d.stats.KeysLent++
		}
	case RecordJob:
		if last := d.restored[mLastJob]; d.seen[mLastJob] && uint64(rec.Job.ID) > last {
			return fmt.Errorf("restore job record %d: beyond the last job id %d (%s), want at most that", rec.Job.ID, last, MetaLastJob)
		}
		if err := c.brk.Restore(&rec.Job); err != nil {
			return fmt.Errorf("coord: %w", err)
		}
		switch rec.Job.State {
		case broker.Queued:
			d.stats.JobsQueued++
		case broker.Dispatched:
			d.stats.JobsDispatched++
		case broker.Backoff:
			d.stats.JobsBackoff++
		case broker.Done:
			d.stats.JobsDone++
		case broker.Failed:
			d.stats.JobsFailed++
		}
	case RecordMeta:
		i := slices.Index(metaNames[:], rec.Meta.Name)
		if i < 0 {
			d.stats.MetaIgnored++
			return nil
		}
		d.restored[i], d.seen[i] = rec.Meta.Value, true
		d.stats.Meta++
	default:
		return fmt.Errorf("restore record: kind %v, want key, job or meta", rec.Kind)
	}
	return nil
}

// RestoreStored counts done and failed key records a restore left in the
// store instead of passing them to RestoreRecord (the store's recovery
// skipped them): with a bounded done set (Config.Ledger.DoneCache) the
// reactor looks them up on demand (Unknown, KnownDone). They are counted in
// RestoreStats and in the done keys of the totals. Call it before
// FinishRestore; an unbounded done set refuses it.
func (c *Coordinator) RestoreStored(done, failed int) error {
	d := &c.dur
	switch {
	case d.phase == restoreDone:
		return fmt.Errorf("restore %d done and %d failed keys left in the store: the restore is finished, want them before FinishRestore", done, failed)
	case len(c.sessions) > 0:
		return fmt.Errorf("restore %d done and %d failed keys left in the store: %d sessions said hello already, want to restore before any session", done, failed, len(c.sessions))
	case done < 0 || failed < 0:
		return fmt.Errorf("restore %d done and %d failed keys left in the store: want counts >= 0", done, failed)
	}
	if c.mem == nil {
		return fmt.Errorf("coord: restore %d done and %d failed keys left in the store: %w", done, failed, errBackend)
	}
	if err := c.mem.RestoreStored(done + failed); err != nil {
		return fmt.Errorf("coord: %w", err)
	}
	d.phase = restoring
	d.stats.KeysDone += done
	d.stats.KeysFailed += failed
	d.stats.KeysInStore += done + failed
	return nil
}

// FinishRestore ends a restore at time now (also when no record came: an
// empty store). The broker orders its queues and re-arms host back-offs,
// the counters continue from their persisted values, and jobs that were
// dispatched when the coordinator stopped wait Config.ReclaimTimeout for
// their workers: a worker that says HELLO with the same id and lists them
// as held gets them back (its RESULTs for them are accepted), the others
// go back to the queue at once, uncharged; at the timeout, Tick requeues
// whatever was not reclaimed, uncharged. A coord.restored event says what
// was restored.
func (c *Coordinator) FinishRestore(now time.Time) (RestoreStats, error) {
	d := &c.dur
	switch {
	case d.phase == restoreDone:
		return d.stats, fmt.Errorf("finish restore: the restore is finished already")
	case len(c.sessions) > 0:
		return d.stats, fmt.Errorf("finish restore: %d sessions said hello already, want to restore before any session", len(c.sessions))
	}
	r := &d.restored
	sum, err := c.brk.FinishRestore(now, broker.RestoreState{Counters: broker.Counters{
		LastID:      broker.JobID(min(r[mLastJob], 1<<62)),
		Dispatches:  r[mDispatches],
		Completions: r[mCompletions],
		Failures:    r[mFailures],
		Throttles:   r[mThrottles],
		Orphans:     r[mOrphans],
		Paused:      r[mPaused] != 0,
	}})
	if err != nil {
		return d.stats, fmt.Errorf("coord: %w", err)
	}
	d.phase = restoreDone
	if c.mem != nil {
		// Each restored queued key to its restored job, as after a submit.
		d.stats.KeysLent += c.mem.LendQueued()
	}
	c.dedupHits, c.malformed, c.seq = r[mDedupHits], r[mMalformed], r[mEventSeq]
	c.submitted = uint64(c.brk.Submitted())
	st := &d.stats
	st.LastJob = broker.JobID(c.brk.Submitted())
	st.ForgottenDone = sum.Forgotten
	if len(sum.Reclaim) > 0 {
		d.reclaim = sum.Reclaim
		d.reclaimAt = now.Add(c.cfg.ReclaimTimeout)
		st.Reclaim, st.Workers, st.ReclaimUntil = sum.Reclaim, sum.Workers, d.reclaimAt
	}
	d.meta = c.metaValues()
	if st.Meta+st.KeysQueued+st.KeysDone+st.KeysFailed+st.KeysDeleted+int(st.LastJob) > 0 {
		c.extra = append(c.extra, admin.Event{At: now, Kind: admin.EventCoordRestored, Detail: st.String()})
	}
	return *st, nil
}

// reclaimDeadline is when the reclaim wait ends, if one is pending.
func (c *Coordinator) reclaimDeadline() (time.Time, bool) {
	return c.dur.reclaimAt, !c.dur.reclaimAt.IsZero()
}

// tickReclaim ends the reclaim wait once its time has come: restored jobs no
// worker reclaimed go back to the queue, uncharged.
func (c *Coordinator) tickReclaim(now time.Time) {
	d := &c.dur
	if d.reclaimAt.IsZero() || now.Before(d.reclaimAt) {
		return
	}
	why := "not reclaimed within " + c.cfg.ReclaimTimeout.String() + " of the coordinator's restart"
	c.brk.EndReclaim(now, d.reclaim, why)
	d.reclaim, d.reclaimAt = nil, time.Time{}
}

// Reclaiming reports whether job j is a restored dispatched job still
// waiting for its worker to reconnect, and the reason to show for it
// ("awaiting reclaim by <worker> until <time>").
func (c *Coordinator) Reclaiming(j broker.JobID) (string, bool) {
	w, ok := c.brk.Reclaiming(j)
	if !ok {
		return "", false
	}
	return "awaiting reclaim by " + w + " until " + c.dur.reclaimAt.Format(time.RFC3339), true
}
