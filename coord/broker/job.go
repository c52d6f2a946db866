package broker

import (
	"time"
	"unsafe"

	"drover/admin"
	"drover/coord/id"
)

// job is the broker's record of one job. Records live in fixed-size chunks
// (jobStore) so their addresses are stable. What it keeps of its Spec is
// small (issue 21): the URL and fingerprint, the interned (crawler,
// processor) pair, the payload only when there is one; the headers are its
// class's and the host its host's (Broker.spec puts a Spec together).
type job struct {
	// link links the job into the one list its state puts it in: its
	// class queue (queued), its host's back-off list (backoff, unless it
	// waits its retry delay in the retry heap), the failed list (failed),
	// the kept done jobs or its paused crawl's parked jobs.
	link links[job] // first: stateLink
	// hlink links a queued job into its lane (its host's queued jobs in its
	// class), so that a throttle can hold every queued job of the host.
	hlink   links[job] // second: hostLink
	id      JobID
	url     string
	fp      id.Fingerprint
	names   uint32 // the key's (crawler, processor) in Broker.names
	plen    uint32 // the payload's length
	pay     *byte  // the payload's first byte; nil when empty
	class   *class
	host    *host
	worker  *worker // while dispatched
	hostPos int32   // position in host.ids
	heldIdx int32   // position in worker.held, -1 when not held
	state   JobState
	free    bool // its processor is not one politeness applies to (Politeness.Processor)
	// unrec: restored, and attempt attempts+1 may have been dispatched
	// before the restart without being recorded (unrecorded.go).
	unrec bool

	attempts, failures, throttles int32
	rpos                          int32 // position in the broker's retry heap + 1; 0 when not waiting a retry delay

	seq                                 uint64   // FIFO order across class queues
	created, updated, queuedAt, retryAt int64    // Unix ns
	more                                *jobMore // nil until the job is first dispatched or fails
}

// payload is the job's payload (nil when it has none).
func (j *job) payload() []byte {
	if j.pay == nil {
		return nil
	}
	return unsafe.Slice(j.pay, j.plen)
}

// setPayload keeps p as the job's payload: a pointer and a length, nothing
// when it is empty.
func (j *job) setPayload(p []byte) {
	j.pay, j.plen = nil, 0
	if len(p) > 0 {
		j.pay, j.plen = unsafe.SliceData(p), uint32(len(p))
	}
}

// setKey keeps key k (whose fingerprint is fp) in the job, interning its
// names; the job must hold no key.
func (b *Broker) setKey(j *job, k *id.Key, fp id.Fingerprint) {
	j.url, j.fp = k.URL, fp
	j.names = b.names.Intern(k.Crawler, k.Processor)
}

// forget zeroes a job's record, releasing its names.
func (b *Broker) forget(j *job) {
	if b.onForget != nil {
		b.onForget(j.fp, j.url)
	}
	b.names.Release(j.names)
	b.jobs.forget(j)
}

// key is the job's key.
func (b *Broker) key(j *job) id.Key {
	p := b.names.Get(j.names)
	return id.Key{Crawler: p.Crawler, Processor: p.Processor, URL: j.url}
}

// crawler is the job's crawler.
func (b *Broker) crawler(j *job) string { return b.names.Get(j.names).Crawler }

// spec is the job's Spec (Host empty: it is the job's host's).
func (b *Broker) spec(j *job) Spec {
	return Spec{Key: b.key(j), FP: j.fp, Headers: j.class.headers, Payload: j.payload()}
}

// jobMore is what a job has only once it ran or failed: most queued jobs
// never did, and their records stay small without it (issue 21).
type jobMore struct {
	lastError string
	history   []attempt // newest last; starts in hist0
	hist0     [1]attempt
}

// hist is the job's attempt history, newest last.
func (j *job) hist() []attempt {
	if j.more == nil {
		return nil
	}
	return j.more.history
}

// lastErr is the job's last error, empty when none.
func (j *job) lastErr() string {
	if j.more == nil {
		return ""
	}
	return j.more.lastError
}

// setLastError records the job's last error.
func (j *job) setLastError(e string) {
	if j.more == nil {
		if e == "" {
			return
		}
		j.more = new(jobMore)
	}
	j.more.lastError = e
}

// attempt is one dispatch of a job, compactly.
type attempt struct {
	worker  string
	at      int64
	outcome string // empty while running
	err     string
}

// addAttempt records a dispatch, keeping at most limit attempts.
func (j *job) addAttempt(w string, t int64, limit int) {
	if j.more == nil {
		j.more = new(jobMore)
	}
	m := j.more
	if m.history == nil {
		m.history = m.hist0[:0]
	}
	if len(m.history) >= limit {
		copy(m.history, m.history[1:])
		m.history = m.history[:len(m.history)-1]
	}
	m.history = append(m.history, attempt{worker: w, at: t})
}

// endAttempt records how the running attempt ended.
func (j *job) endAttempt(outcome, err string) {
	if h := j.hist(); len(h) > 0 && h[len(h)-1].outcome == "" {
		h[len(h)-1].outcome = outcome
		h[len(h)-1].err = err
	}
}

// attemptEntry returns the history entry of attempt n, if it is still
// remembered: every dispatch adds one entry, so the newest entry is attempt
// j.attempts and the ones before count down from it.
func (j *job) attemptEntry(n int) (attempt, bool) {
	h := j.hist()
	i := len(h) - 1 - (int(j.attempts) - n)
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

func (j *job) adminHistory() []admin.Attempt {
	h := j.hist()
	out := make([]admin.Attempt, len(h))
	for i, a := range h {
		out[i] = admin.Attempt{Worker: a.worker, At: tm(a.at), Outcome: a.outcome, Error: a.err}
	}
	return out
}

// retryTime is the time shown as the job's retry time (backoff only: its
// host's back-off end or its retry delay's).
func (j *job) retryTime() time.Time { return tm(j.retryAt) }

const chunkBits = 10
const chunkSize = 1 << chunkBits
const maxSpare = 8 // released chunks kept for reuse

// jobStore holds every job by ID (IDs 1..n) in chunks of chunkSize records.
// A forgotten job's record is zeroed (id 0); a chunk whose jobs are all
// forgotten is released.
type jobStore struct {
	chunks []*[chunkSize]job
	alive  []int32           // records not forgotten, per chunk
	spare  []*[chunkSize]job // released chunks (all records zero), reused first
	n      int
}

func (s *jobStore) alloc() *job {
	i := s.n
	if i>>chunkBits == len(s.chunks) {
		s.addChunk()
	}
	s.n++
	s.alive[i>>chunkBits]++
	return &s.chunks[i>>chunkBits][i&(chunkSize-1)]
}

// addChunk appends a chunk for the next IDs: a spare one (all records zero)
// or a new one.
func (s *jobStore) addChunk() {
	var c *[chunkSize]job
	if k := len(s.spare); k > 0 {
		c, s.spare = s.spare[k-1], s.spare[:k-1]
	} else {
		c = new([chunkSize]job)
	}
	s.chunks = append(s.chunks, c)
	s.alive = append(s.alive, 0)
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
		}
		s.chunks[c] = nil
	}
}
