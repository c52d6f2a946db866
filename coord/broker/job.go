package broker

import (
	"fmt"
	"math"
	"time"
	"unsafe"

	"drover/admin"
	"drover/coord/id"
	"drover/coord/offheap"
)

// job is the broker's record of one job. Records live in fixed-size chunks
// outside the Go heap (jobStore, package offheap), so their addresses are
// stable and the garbage collector neither scans them nor counts them in
// its pacing (issue 21). So a record holds no pointer into the Go heap:
// its URL is in the broker's string slots (Broker.urls), its class, host
// and side records are numbers into the broker's tables; the pointers it
// holds (its list links) are to other records. What it keeps of its Spec
// is small: the URL and fingerprint, the interned (crawler, processor)
// pair, the payload only when there is one (Broker.pays); the headers are
// its class's and the host its host's (Broker.spec puts a Spec together).
// What only a job that was dispatched or failed has (its attempt, failure
// and throttle counts, its place in the retry heap and its retry time) is
// in its side record (jobMore): a queued job's record is 88 bytes.
type job struct {
	// link links the job into the one list its state puts it in: its
	// class queue (queued), its host's back-off list (backoff, unless it
	// waits its retry delay in the retry heap), the failed list (failed),
	// the kept done jobs or its paused crawl's parked jobs.
	link jlinks // first: stateLink
	// hlink links a queued job into its lane (its host's queued jobs in its
	// class), so that a throttle can hold every queued job of the host.
	hlink jlinks // second: hostLink

	fp id.Fingerprint
	// created is when the job was submitted; updated when it last changed
	// state or entered its class queue, so that a queued job's updated is
	// the time it was queued (the unroutable timeout counts from it). Unix
	// ns.
	created, updated int64

	seq     uint32 // FIFO order across class queues (Broker.enqueue)
	id      uint32 // its JobID: IDs are at most maxJobID
	url     uint32 // the URL's slot in Broker.urls (offheap.Ref with ulen)
	names   uint32 // the key's (crawler, processor) in Broker.names
	pay     uint32 // the payload's index in Broker.pays; 0 when it has none
	class   uint32 // its class's index in Broker.classAll
	host    uint32 // its host's index in Broker.hostAll
	more    uint32 // its jobMore's index in Broker.mores; 0 until first dispatched or failed
	hostPos int32  // position in host.ids

	ulen  uint16
	state JobState
	flags jobFlags
}

// jobFlags are a job's yes-or-no facts, one bit each (one byte keeps the
// record at 88 bytes).
type jobFlags uint8

const (
	// jobFree: its processor is not one politeness applies to
	// (Politeness.Processor).
	jobFree jobFlags = 1 << iota
	// jobUnrec: restored, and attempt attempts+1 may have been dispatched
	// before the restart without being recorded (unrecorded.go).
	jobUnrec
	// jobHostWait: its retry time is its host's back-off end (a job in its
	// host's back-off list); without it, its side record's retryAt (a job
	// waiting its retry delay), or none.
	jobHostWait
)

// has reports whether the job has flag f.
func (j *job) has(f jobFlags) bool { return j.flags&f != 0 }

// setFlag sets or clears flag f.
func (j *job) setFlag(f jobFlags, on bool) {
	if on {
		j.flags |= f
	} else {
		j.flags &^= f
	}
}

// urlRef is where the job's URL is.
func (j *job) urlRef() offheap.Ref { return offheap.Ref{Slot: j.url, Len: j.ulen} }

// url is the job's URL in a string of its own.
func (b *Broker) url(j *job) string { return b.urls.String(j.urlRef()) }

// urlView is the job's URL without a copy (or in the broker's scratch
// room, for a URL kept as its origin's number and the rest): valid only
// until the job is forgotten, its URL changes or urlView is called again,
// so only for a match or to be copied.
func (b *Broker) urlView(j *job) string { return b.urls.View(j.urlRef(), &b.urlScratch) }

// payload is the job's payload (nil when it has none).
func (b *Broker) payload(j *job) []byte {
	return b.pays.at(j.pay)
}

// setPayload keeps p as the job's payload (nothing when it is empty),
// releasing the one it had.
func (b *Broker) setPayload(j *job, p []byte) {
	b.pays.del(&j.pay)
	if len(p) > 0 {
		j.pay = b.pays.add(p)
	}
}

// classOf is the job's header class.
func (b *Broker) classOf(j *job) *class { return b.classAll[j.class] }

// hostOf is the job's host.
func (b *Broker) hostOf(j *job) *host { return b.hostAll[j.host] }

// setKey keeps key k (whose fingerprint is fp) in the job, interning its
// names; the job must hold no key.
func (b *Broker) setKey(j *job, k *id.Key, fp id.Fingerprint) {
	u := b.urls.Put(k.URL)
	j.url, j.ulen, j.fp = u.Slot, u.Len, fp
	j.names = b.names.Intern(k.Crawler, k.Processor)
}

// forget zeroes a job's record, releasing its names, URL, payload and side
// record.
func (b *Broker) forget(j *job) {
	if b.onForget != nil {
		b.onForget(j.fp, j.jobID())
	}
	b.names.Release(j.names)
	b.urls.Free(j.urlRef())
	b.setPayload(j, nil)
	b.dropMore(j)
	b.jobs.forget(j)
}

// key is the job's key.
func (b *Broker) key(j *job) id.Key {
	p := b.names.Get(j.names)
	return id.Key{Crawler: p.Crawler, Processor: p.Processor, URL: b.url(j)}
}

// crawler is the job's crawler.
func (b *Broker) crawler(j *job) string { return b.names.Get(j.names).Crawler }

// spec is the job's Spec (Host empty: it is the job's host's).
func (b *Broker) spec(j *job) Spec {
	return Spec{Key: b.key(j), FP: j.fp, Headers: b.classOf(j).headers, Payload: b.payload(j)}
}

// jobMore is what a job has only once it ran or failed: most queued jobs
// never did, and their records stay small without it (issue 21). It is on
// the Go heap (it holds strings and the worker), numbered in Broker.mores.
// A job's counts are in it, so a job without one was never dispatched and
// has no failure or throttle charged (restored counts make one).
type jobMore struct {
	worker                        *worker // while dispatched
	heldIdx                       int32   // position in worker.held, -1 when not held
	attempts, failures, throttles int32
	rpos                          int32 // position in the broker's retry heap + 1; 0 when not waiting a retry delay
	retryAt                       int64 // when its retry delay ends (Unix ns; 0 when none: see jobHostWait)
	lastError                     string
	history                       []attempt // newest last; starts in hist0
	hist0                         [1]attempt
}

// moreOf is the job's side record, nil when it has none.
func (b *Broker) moreOf(j *job) *jobMore {
	return b.mores.at(j.more)
}

// moreFor is the job's side record, made when it has none.
func (b *Broker) moreFor(j *job) *jobMore {
	if j.more != 0 {
		return b.mores.at(j.more)
	}
	m := &jobMore{heldIdx: -1}
	j.more = b.mores.add(m)
	return m
}

// dropMore forgets the job's side record.
func (b *Broker) dropMore(j *job) {
	b.mores.del(&j.more)
}

// jobAttempts is the number of times the job was dispatched (0 without a
// side record: a job gets one at its first dispatch).
func (b *Broker) jobAttempts(j *job) int32 {
	if j.more == 0 {
		return 0
	}
	return b.mores.at(j.more).attempts
}

// jobFailures is the number of failures charged to the job.
func (b *Broker) jobFailures(j *job) int32 {
	if j.more == 0 {
		return 0
	}
	return b.mores.at(j.more).failures
}

// jobThrottles is the number of throttled results the job got.
func (b *Broker) jobThrottles(j *job) int32 {
	if j.more == 0 {
		return 0
	}
	return b.mores.at(j.more).throttles
}

// workerOf is the worker holding the job, nil when none does.
func (b *Broker) workerOf(j *job) *worker {
	if j.more == 0 {
		return nil
	}
	return b.mores.at(j.more).worker
}

// hist is the job's attempt history, newest last.
func (b *Broker) hist(j *job) []attempt {
	if m := b.moreOf(j); m != nil {
		return m.history
	}
	return nil
}

// lastErr is the job's last error, empty when none.
func (b *Broker) lastErr(j *job) string {
	if m := b.moreOf(j); m != nil {
		return m.lastError
	}
	return ""
}

// setLastError records the job's last error.
func (b *Broker) setLastError(j *job, e string) {
	if j.more == 0 && e == "" {
		return
	}
	b.moreFor(j).lastError = e
}

// attempt is one dispatch of a job, compactly.
type attempt struct {
	worker  string
	at      int64
	outcome string // empty while running
	err     string
}

// addAttempt records a dispatch of job j, keeping at most limit attempts.
func (b *Broker) addAttempt(j *job, w string, t int64, limit int) {
	m := b.moreFor(j)
	if m.history == nil {
		m.history = m.hist0[:0]
	}
	if len(m.history) >= limit {
		copy(m.history, m.history[1:])
		m.history = m.history[:len(m.history)-1]
	}
	m.history = append(m.history, attempt{worker: w, at: t})
}

// endAttempt records how job j's running attempt ended.
func (b *Broker) endAttempt(j *job, outcome, err string) {
	if h := b.hist(j); len(h) > 0 && h[len(h)-1].outcome == "" {
		h[len(h)-1].outcome = outcome
		h[len(h)-1].err = err
	}
}

// attemptEntry returns the history entry of attempt n, if it is still
// remembered: every dispatch adds one entry, so the newest entry is attempt
// b.jobAttempts(j) and the ones before count down from it.
func (b *Broker) attemptEntry(j *job, n int) (attempt, bool) {
	h := b.hist(j)
	i := len(h) - 1 - (int(b.jobAttempts(j)) - n)
	if n < 1 || i < 0 || i >= len(h) {
		return attempt{}, false
	}
	return h[i], true
}

// resultOutcome reports whether an attempt's outcome came from the
// worker's result (rather than from a loss, a requeue or an eviction).
func resultOutcome(o string) bool {
	return o == "ok" || o == "internal" || o == "external" || o == "throttled"
}

func (b *Broker) adminHistory(j *job) []admin.Attempt {
	h := b.hist(j)
	out := make([]admin.Attempt, len(h))
	for i, a := range h {
		out[i] = admin.Attempt{Worker: a.worker, At: tm(a.at), Outcome: a.outcome, Error: a.err}
	}
	return out
}

// retryAt is the job's retry time (backoff only: its host's back-off end
// or its retry delay's end), Unix ns; 0 when it has none.
func (b *Broker) retryAt(j *job) int64 {
	if j.has(jobHostWait) {
		return b.hostAll[j.host].until
	}
	if j.more != 0 {
		return b.mores.at(j.more).retryAt
	}
	return 0
}

// retryTime is the time shown as the job's retry time.
func (b *Broker) retryTime(j *job) time.Time { return tm(b.retryAt(j)) }

// jobID is the job's ID.
func (j *job) jobID() JobID { return JobID(j.id) }

// maxJobID is the highest job ID: lists link jobs by 32-bit ID.
const maxJobID = math.MaxUint32

const chunkBits = 10
const chunkSize = 1 << chunkBits
const maxSpare = 8 // released chunks kept for reuse

// jobStore holds every job by ID (IDs 1..n) in chunks of chunkSize records,
// each a block of offheap memory. A forgotten job's record is zeroed (id
// 0); a chunk whose jobs are all forgotten is released (given back to the
// operating system past maxSpare kept for reuse).
type jobStore struct {
	mem    *offheap.Mem
	chunks []*[chunkSize]job
	alive  []int32           // records not forgotten, per chunk
	spare  []*[chunkSize]job // released chunks (all records zero), reused first
	n      int               // the last ID given
	last   int               // the last ID it may give (Config.LastJobID)
}

// CheckIDs returns an error wrapping ErrJobIDsExhausted once every job ID
// up to Config.LastJobID is given: Submit would refuse. Lists link jobs by
// 32-bit ID and a restart renumbers nothing, so such a coordinator takes
// no more jobs (the age index holds a byte per ID ever given, 4 GiB at
// 2^32-1, so only a store's IDs restored near the end get there).
func (b *Broker) CheckIDs() error {
	if b.jobs.n >= b.jobs.last {
		return fmt.Errorf("submit: %w: all %d job IDs are given, and a restart renumbers nothing: this coordinator takes no more jobs", ErrJobIDsExhausted, b.jobs.last)
	}
	return nil
}

// IDsLeft is how many more jobs Submit takes.
func (b *Broker) IDsLeft() int { return max(b.jobs.last-b.jobs.n, 0) }

// IDRefusals is how many submits Submit refused for want of a job ID.
func (b *Broker) IDRefusals() uint64 { return b.idRefusals }

// chunkBytes is the memory of a chunk.
const chunkBytes = int(unsafe.Sizeof([chunkSize]job{}))

// alloc returns the record of the next job ID; the caller checked that
// one is left (Broker.CheckIDs).
func (s *jobStore) alloc() *job {
	i := s.n
	if i>>chunkBits == len(s.chunks) {
		s.addChunk()
	}
	s.n++
	s.alive[i>>chunkBits]++
	return &s.chunks[i>>chunkBits][i&(chunkSize-1)]
}

// addChunk appends a chunk for the next IDs.
func (s *jobStore) addChunk() {
	s.chunks = append(s.chunks, s.newChunk())
	s.alive = append(s.alive, 0)
}

// newChunk is a spare chunk (all records zero) or a new one.
func (s *jobStore) newChunk() *[chunkSize]job {
	if k := len(s.spare); k > 0 {
		c := s.spare[k-1]
		s.spare = s.spare[:k-1]
		return c
	}
	return (*[chunkSize]job)(offheap.View[job](s.mem.Block(chunkBytes), chunkSize))
}

// at returns the record of job id, which must be alive (a list's
// neighbour).
func (s *jobStore) at(id uint32) *job {
	i := id - 1
	return &s.chunks[i>>chunkBits][i&(chunkSize-1)]
}

// ptr is at for a list link: nil for 0.
func (s *jobStore) ptr(id uint32) *job {
	if id == 0 {
		return nil
	}
	return s.at(id)
}

// get returns the job with the given ID, nil when there is none (or it was
// forgotten).
func (s *jobStore) get(j JobID) *job {
	if j == 0 || j > JobID(s.n) {
		return nil
	}
	i := int(j - 1)
	c := s.chunks[i>>chunkBits]
	if c == nil || c[i&(chunkSize-1)].id == 0 {
		return nil
	}
	return &c[i&(chunkSize-1)]
}

// forget zeroes a job's record and releases its chunk when it was the last
// one alive in a full chunk.
func (s *jobStore) forget(j *job) {
	i := int(j.id - 1)
	*j = job{}
	c := i >> chunkBits
	s.alive[c]--
	if s.alive[c] == 0 && (c+1)<<chunkBits <= s.n {
		if len(s.spare) < maxSpare {
			s.spare = append(s.spare, s.chunks[c])
		} else {
			s.mem.Release(unsafe.Slice((*byte)(unsafe.Pointer(s.chunks[c])), chunkBytes))
		}
		s.chunks[c] = nil
	}
}

// sideTable keeps values of T that only some job records have, numbered
// from 1 (a record holds 0 for none), reusing freed numbers.
type sideTable[T any] struct {
	v    []T // index 0 unused
	free []uint32
}

// add keeps x and returns its number.
func (t *sideTable[T]) add(x T) uint32 {
	var i uint32
	if n := len(t.free); n > 0 {
		i, t.free = t.free[n-1], t.free[:n-1]
	} else {
		if len(t.v) == 0 {
			t.v = make([]T, 1) // 0: none
		}
		i = uint32(len(t.v))
		t.v = append(t.v, x)
	}
	t.v[i] = x
	return i
}

// at is value number i, the zero value for 0.
func (t *sideTable[T]) at(i uint32) T {
	if i == 0 {
		var zero T
		return zero
	}
	return t.v[i]
}

// del forgets value number *i (nothing for 0) and sets *i to 0.
func (t *sideTable[T]) del(i *uint32) {
	if *i != 0 {
		var zero T
		t.v[*i] = zero
		t.free = append(t.free, *i)
		*i = 0
	}
}
