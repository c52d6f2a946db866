package broker

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"drover/admin"
	"drover/coord/id"
	"drover/coord/names"
	"drover/coord/offheap"
)

// JobID identifies a job inside one broker. IDs are allocated from 1 in
// submission order, so sorting by ID is sorting by age.
type JobID uint64

// Spec is what a producer submits: the work key, its fingerprint, the host
// whose back-off governs the job, the headers a worker must satisfy, and an
// opaque payload passed to the worker. The broker keeps the Spec; callers must
// not modify it (nor its Headers map) after Submit.
type Spec struct {
	Key     id.Key
	FP      id.Fingerprint
	Host    string            // the per-host back-off key (usually the URL's host)
	Headers map[string]string // required worker headers; see Match
	Payload []byte
}

// OutcomeKind is how a worker says a job ended.
type OutcomeKind uint8

// The outcomes a worker reports.
const (
	OK        OutcomeKind = iota // the job is done
	Internal                     // the worker's fault (fetch error, timeout): retried until MaxRequestFailures
	External                     // the job's fault (malformed job): failed at once
	Throttled                    // the host answered 429/503: back-off, not a failure
)

// String names the outcome as the console and events show it.
func (k OutcomeKind) String() string {
	switch k {
	case OK:
		return "ok"
	case Internal:
		return "internal"
	case External:
		return "external"
	case Throttled:
		return "throttled"
	}
	return fmt.Sprintf("outcome(%d)", uint8(k))
}

// Outcome is a worker's report on one job.
type Outcome struct {
	Kind       OutcomeKind
	RetryAfter time.Duration // Throttled only: the server's Retry-After, 0 = not given
	Error      string        // what went wrong, for failures and throttles
	Output     []byte        // passed through to Finished on OK
}

// JobState is where a job is in its life.
type JobState uint8

// The job states. The zero value is not a state.
const (
	Queued     JobState = iota + 1 // waiting for a capable, ready worker
	Dispatched                     // held by a worker
	Backoff                        // waiting for its host's throttling back-off to end
	Done                           // finished OK
	Failed                         // failed for good (external, failure budget spent, unroutable timeout)
	nStates
)

var stateNames = [nStates]string{"", "queued", "dispatched", "backoff", "done", "failed"}

// String names the state as the console shows it.
func (s JobState) String() string {
	if s > 0 && s < nStates {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// ParseState is the inverse of JobState.String.
func ParseState(s string) (JobState, error) {
	for st := Queued; st < nStates; st++ {
		if stateNames[st] == s {
			return st, nil
		}
	}
	return 0, fmt.Errorf("job state %q: want queued, dispatched, backoff, done or failed", s)
}

// Config tunes a Broker. Zero fields take the documented defaults.
type Config struct {
	// MaxRequestFailures is the failure budget of a job, shared by internal
	// failures and worker deaths: the failure that brings the count to it
	// fails the job. Default 3.
	MaxRequestFailures int
	// BackoffStart is a host's first back-off after a throttle that gave no
	// Retry-After; it doubles with each consecutive throttle. Default 60 s.
	BackoffStart time.Duration
	// BackoffCap caps every host back-off, Retry-After included. Default 24 h.
	BackoffCap time.Duration
	// BackoffForgive is the quiet period (no throttle from the host) after
	// which a host's back-off level resets to zero. Default 10 × BackoffStart.
	BackoffForgive time.Duration
	// Jitter spreads exponential back-offs by up to ±Jitter of their length.
	// 0 takes the default 0.2; a negative value disables jitter. Must be < 1.
	Jitter float64
	// RetryStart is the delay before a job charged its first failure (an
	// internal outcome or a charged worker death) is queued again; it
	// doubles with each further failure charged (retry.go). Default 1 s; a
	// negative value queues retries at once.
	RetryStart time.Duration
	// RetryCap caps the retry delay. Default 5 min.
	RetryCap time.Duration
	// RetryJitter spreads retry delays by up to ±RetryJitter of their
	// length. 0 takes the default 0.2; a negative value disables jitter.
	// Must be < 1.
	RetryJitter float64
	// UnroutableTimeout fails a job that no live worker could take for this
	// long. 0 waits forever.
	UnroutableTimeout time.Duration
	// Rand is the random source for jitter. Default: a fixed-seed PCG, so
	// that a broker is deterministic unless given another source.
	Rand *rand.Rand
	// LostWorkers is how many records of lost workers are kept for the
	// console (oldest dropped first). Default 256; negative keeps none.
	LostWorkers int
	// HistoryLimit is how many attempts each job remembers for Job. Default 8.
	HistoryLimit int
	// HoldbackStart is how long a worker id that died twice in a row
	// holding jobs before reporting any result gets no job; it doubles
	// with each further such death. Default 5 s.
	HoldbackStart time.Duration
	// HoldbackCap caps a worker id's hold. Default 5 min.
	HoldbackCap time.Duration
	// HoldbackForgive is how long a worker id's record of early deaths is
	// kept after its last one (a result clears it at once). Default 10 ×
	// HoldbackCap.
	HoldbackForgive time.Duration
	// DoneRetention is how many done jobs keep their records for the console
	// (Jobs, Job); older ones are forgotten, oldest first, and stay counted
	// in Totals.Done. The done set itself lives in the ledger. Default
	// 100000; negative keeps every record.
	DoneRetention int
	// Politeness holds every host's limits for the whole fleet (polite.go).
	// The zero value holds nothing back.
	Politeness Politeness
	// SmallPages keeps the broker's tables outside the Go heap (its job
	// records, URLs and key index) on small pages: they ask the OS for no
	// transparent huge pages (offheap.Mem.SmallPages). By default they ask
	// for them. The configuration sets it with the ledger's
	// (ledger.huge_pages).
	SmallPages bool
	// LastJobID is the highest job ID Submit gives: once it is given,
	// Submit refuses (CheckIDs, ErrJobIDsExhausted). Default (0) and
	// most: 2^32-1 (lists link jobs by 32-bit ID; a restart renumbers
	// nothing). Tests set it low to reach the end.
	LastJobID JobID
}

// The defaults of Config.
const (
	DefaultMaxRequestFailures = 3
	DefaultBackoffStart       = 60 * time.Second
	DefaultBackoffCap         = 24 * time.Hour
	DefaultJitter             = 0.2
	DefaultRetryStart         = time.Second
	DefaultRetryCap           = 5 * time.Minute
	DefaultRetryJitter        = 0.2
	DefaultLostWorkers        = 256
	DefaultHistoryLimit       = 8
	DefaultDoneRetention      = 100_000
	DefaultHoldbackStart      = 5 * time.Second
	DefaultHoldbackCap        = 5 * time.Minute
)

// orDefault sets the config field name (*v) to def when it is 0; a
// negative one is an error naming it.
func orDefault[T int | time.Duration](errs *[]error, name string, v *T, def T) {
	switch {
	case *v == 0:
		*v = def
	case *v < 0:
		*errs = append(*errs, fmt.Errorf("broker config %s %v: want > 0 (or 0 for the default %v)", name, *v, def))
	}
}

// fractionOrDefault sets the fraction field name (*v) to def when it is
// 0, and to 0 (none) when it is negative; 1 or more is an error naming it.
func fractionOrDefault(errs *[]error, name string, v *float64, def float64) {
	switch {
	case math.IsNaN(*v) || *v >= 1:
		*errs = append(*errs, fmt.Errorf("broker config %s %v: want a fraction below 1 (0 for the default %v, negative for none)", name, *v, def))
	case *v == 0:
		*v = def
	case *v < 0:
		*v = 0
	}
}

// validate fills defaults and checks every field, naming the bad one.
func (c *Config) validate() error {
	var errs []error
	orDefault(&errs, "MaxRequestFailures", &c.MaxRequestFailures, DefaultMaxRequestFailures)
	orDefault(&errs, "BackoffStart", &c.BackoffStart, DefaultBackoffStart)
	orDefault(&errs, "BackoffCap", &c.BackoffCap, DefaultBackoffCap)
	if c.BackoffStart > 0 && c.BackoffCap > 0 && c.BackoffCap < c.BackoffStart {
		errs = append(errs, fmt.Errorf("broker config BackoffCap %v: want >= BackoffStart %v", c.BackoffCap, c.BackoffStart))
	}
	if c.BackoffForgive == 0 {
		c.BackoffForgive = 10 * c.BackoffStart
	} else if c.BackoffForgive < 0 {
		errs = append(errs, fmt.Errorf("broker config BackoffForgive %v: want > 0 (or 0 for 10 × BackoffStart)", c.BackoffForgive))
	}
	fractionOrDefault(&errs, "Jitter", &c.Jitter, DefaultJitter)
	switch {
	case c.RetryStart == 0:
		c.RetryStart = DefaultRetryStart
	case c.RetryStart < 0:
		c.RetryStart = -1 // retries are queued at once
	}
	if c.RetryCap == 0 {
		c.RetryCap = max(DefaultRetryCap, c.RetryStart)
	} else if c.RetryCap < 0 {
		errs = append(errs, fmt.Errorf("broker config RetryCap %v: want > 0 (or 0 for the default %v)", c.RetryCap, DefaultRetryCap))
	}
	if c.RetryStart > 0 && c.RetryCap > 0 && c.RetryCap < c.RetryStart {
		errs = append(errs, fmt.Errorf("broker config RetryCap %v: want >= RetryStart %v", c.RetryCap, c.RetryStart))
	}
	fractionOrDefault(&errs, "RetryJitter", &c.RetryJitter, DefaultRetryJitter)
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(1, 2))
	}
	if c.UnroutableTimeout < 0 {
		errs = append(errs, fmt.Errorf("broker config UnroutableTimeout %v: want >= 0 (0 waits forever)", c.UnroutableTimeout))
	}
	if c.LostWorkers == 0 {
		c.LostWorkers = DefaultLostWorkers
	} else if c.LostWorkers < 0 {
		c.LostWorkers = 0
	}
	orDefault(&errs, "HistoryLimit", &c.HistoryLimit, DefaultHistoryLimit)
	switch {
	case c.LastJobID == 0:
		c.LastJobID = maxJobID
	case c.LastJobID > maxJobID:
		errs = append(errs, fmt.Errorf("broker config LastJobID %d: want at most %d (or 0 for that)", c.LastJobID, JobID(maxJobID)))
	}
	if c.DoneRetention == 0 {
		c.DoneRetention = DefaultDoneRetention
	}
	orDefault(&errs, "HoldbackStart", &c.HoldbackStart, DefaultHoldbackStart)
	orDefault(&errs, "HoldbackCap", &c.HoldbackCap, DefaultHoldbackCap)
	orDefault(&errs, "HoldbackForgive", &c.HoldbackForgive, 10*max(c.HoldbackCap, DefaultHoldbackCap))
	if err := c.Politeness.validate(); err != nil {
		errs = append(errs, err)
	}
	if c.HoldbackCap > 0 && c.HoldbackStart > c.HoldbackCap {
		errs = append(errs, fmt.Errorf("broker config HoldbackCap %v: want >= HoldbackStart %v", c.HoldbackCap, c.HoldbackStart))
	}
	return errors.Join(errs...)
}

// Assignment is one dispatch decision: send job Job (with Spec) to the worker
// on Session. Attempt counts dispatches of this job, 1 for the first. Spec
// shares its strings, headers and payload with the broker: they must not be
// modified. Spec.Host is empty: the broker keeps the host once, in its host
// record, not in every job's.
type Assignment struct {
	Session id.Session
	Worker  string
	Job     JobID
	Spec    Spec
	Attempt int
	// AfterRestore: the job's first dispatch since a restore, which
	// skipped attempt Attempt-1 (it may have been dispatched, unrecorded,
	// before the restart: unrecorded.go). Its JOB must not leave before
	// this dispatch is durable, or a second crash could skip to Attempt
	// again.
	AfterRestore bool
	// Robots is the copy of the job's origin's robots.txt a worker
	// reported (robots.go), to send to this worker before the JOB; nil
	// when the broker has none. It is not modified once made.
	Robots *Robots
}

// Finished is a job's terminal outcome: the coordinator marks the key done
// (Failed false) or failed in the ledger. Output is the worker's output for
// a job done OK; Error says why a failed job failed. Attempt, Worker and
// At say which run finished it, on which worker (empty when none ran it),
// and when.
type Finished struct {
	Job     JobID
	Key     id.Key
	FP      id.Fingerprint
	Failed  bool
	Output  []byte
	Error   string
	Attempt int
	Worker  string
	At      time.Time
	Skipped string // failed without running (budget.go): "budget" (past its crawl's page budget) or "cancelled"
}

// Closed asks the caller to tell a session DISCONNECT: the worker was
// evicted, or it was draining and its last job finished. The broker has
// already forgotten the worker.
type Closed struct {
	Session id.Session
	Worker  string
	Drained bool // the worker was drained and finished its jobs; otherwise evicted
}

// Broker is the job broker's state. Create one with New.
type Broker struct {
	cfg    Config
	paused bool

	jobs  jobStore
	names names.Pairs     // the (crawler, processor) of every job's key
	urls  offheap.Strings // every job's URL
	// urlScratch is urlView's room for a URL put together from its parts.
	urlScratch []byte
	// Side tables the job records number into (job.go): payloads and
	// jobMore records.
	pays  sideTable[[]byte]
	mores sideTable[*jobMore]
	// onForget is called as a job's record is forgotten (OnForget).
	onForget func(fp id.Fingerprint, j JobID)
	count    [nStates]int
	age      ageIndex           // every job by ID, with per-state counts
	trees    [nSorts]*orderTree // lazily built sort indexes (nil until first used)
	hosts    map[string]*host   // every host a job named
	hostAll  []*host            // the same, in creation order (job.host numbers them)
	fails    jobList            // failed jobs, oldest failure first
	dones    jobList            // done jobs whose records are kept, oldest first
	forgot   int                // done jobs whose records were forgotten
	paged    int                // queued jobs paged out of memory (page.go), counted as queued
	handed   int                // queued jobs handed back to a shared queue (handback.go), counted nowhere
	byKey    keyIndex           // the newest job of each key whose record is kept
	heap     hostHeap           // hosts with a pending timer (wake-up or forgiveness)
	retry    retryHeap          // jobs waiting their retry delay (retry.go)
	thr      map[*host]struct{} // hosts with a back-off level > 0 (HostRows)
	unrt     int                // queued jobs in classes no capable worker matches
	polite   int                // queued jobs of hosts parked for politeness
	waiting  map[*host]struct{} // parked hosts with queued jobs (politeRows)

	classes  map[string]*class // by canonical header key
	classAll []*class          // in creation order (job.class numbers them)
	noHdr    *class            // the class of jobs without headers

	workers   map[string]*worker     // by worker ID, lost records included
	sessions  map[id.Session]*worker // live workers by session
	wsorted   []*worker              // every worker record sorted by ID
	ready     workerList             // live, not draining, free slots; LRU first
	lostOrder []*worker              // lost records, oldest first
	gen       uint64                 // bumped when the capable set changes (reason cache)

	seq    uint32 // queue order across classes: the last job.seq given
	useSeq uint64 // LRU clock

	ids     map[string]*idRecord // worker ids with early deaths (deaths.go)
	held    []*worker            // live workers held back after early deaths
	idSweep int64                // last sweep of ids (Unix ns)

	finished []Finished
	backoffs []HostBackoff      // hosts a throttle here backed off (TakeBackoffs)
	budgets  map[string]*budget // page budgets by crawler (budget.go)
	events   []admin.Event
	closed   []Closed
	// superseded: runs of connected workers an adopted unrecorded attempt
	// took over, to be told CANCEL (unrecorded.go)
	superseded []SessionRun
	// restoredLast is the last job id FinishRestore saw: a job up to it
	// paged in may have an unrecorded attempt (unrecorded.go)
	restoredLast JobID
	restoreClean bool // RestoreClean: no restored job may have an unrecorded attempt
	// restoreUntil: each host's latest retry time among its restored jobs
	// in back-off, until FinishRestore backs the host off to it
	restoreUntil map[*host]int64

	dispatches, completions, failures, throttles, orphans uint64
	idRefusals                                            uint64 // submits refused for want of a job ID (CheckIDs)

	fanout  int    // order tree node size (otMax; tests make it small)
	changes uint64 // job changes the order trees had to follow
	text    textCache

	scratchKeys []string
	scratchBuf  []byte
}

// New validates cfg and returns an empty broker.
func New(cfg Config) (*Broker, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	b := &Broker{
		cfg:      cfg,
		hosts:    make(map[string]*host),
		thr:      make(map[*host]struct{}),
		waiting:  make(map[*host]struct{}),
		classes:  make(map[string]*class),
		workers:  make(map[string]*worker),
		sessions: make(map[id.Session]*worker),
		ids:      make(map[string]*idRecord),
		fanout:   otMax,
	}
	b.jobs.mem = offheap.New(b)
	if cfg.SmallPages {
		b.jobs.mem.SmallPages()
	}
	b.urls.Init(b.jobs.mem)
	b.byKey.init(&b.jobs)
	b.jobs.last = int(b.cfg.LastJobID)
	b.noHdr = b.newClass("", nil)
	return b, nil
}

// enter puts a new job j of host h, whose key is set, in state st: in the
// host's IDs, the key index, the counts and the sort indexes. Its lists are
// the caller's.
func (b *Broker) enter(j *job, h *host, st JobState) {
	j.hostPos = int32(h.ids.len())
	h.ids.push(j.jobID())
	b.byKey.set(j.fp, j.jobID())
	j.state = st
	b.count[st]++
	b.countCrawl(j, 0, st)
	b.age.add(j.jobID(), st)
	h.idx.add(int(j.hostPos), st, 1)
	b.changes++
	for _, tr := range b.trees {
		if tr != nil {
			tr.insert(j)
		}
	}
}

// Submit adds a job in state queued (or backoff, when its host is backed
// off) and returns its ID. Deduplication is the ledger's business, and a
// job no worker can take waits as unroutable. Submit refuses only once
// every job ID is given (Config.LastJobID): it then returns 0, takes
// nothing and counts the refusal (IDRefusals); a caller that must not
// lose the job asks CheckIDs first.
func (b *Broker) Submit(now time.Time, spec Spec) JobID {
	if b.CheckIDs() != nil {
		b.idRefusals++
		return 0
	}
	t := ns(now)
	c := b.classFor(spec.Headers)
	spec.Headers = c.headers // identical header sets share one map
	h := b.hostFor(spec.Host)
	j := b.jobs.alloc()
	j.id = uint32(b.jobs.n)
	b.setKey(j, &spec.Key, spec.FP) // Host: h.name; Headers: c.headers
	b.setPayload(j, spec.Payload)
	j.class = c.no
	j.host = h.no
	j.setFlag(jobFree, !b.cfg.Politeness.applies(spec.Key.Processor))
	j.created = t
	j.updated = t
	b.enter(j, h, Queued) // then place moves it if the host is held
	b.emit(admin.Event{At: now, Kind: admin.EventJobSubmitted, JobID: uint64(j.id), URL: spec.Key.URL})
	b.place(j, t, now)
	return j.jobID()
}

// place puts a job that is in state Queued but in no list into its class
// queue, or into its host's back-off when the host is held.
func (b *Broker) place(j *job, t int64, now time.Time) {
	h := b.hostOf(j)
	if h.until > t {
		b.setState(j, Backoff, t)
		b.setRetryHost(j)
		h.backoff.push(j)
		b.emit(admin.Event{At: now, Kind: admin.EventJobBackoff, JobID: uint64(j.id), URL: b.url(j), Detail: h.backoffReason()})
		return
	}
	if j.state != Queued {
		b.setState(j, Queued, t)
	}
	if b.retryAt(j) != 0 {
		b.setRetryAt(j, 0)
	}
	b.enqueue(j, t)
}

// enqueue appends a job in state Queued to its class queue and its lane;
// its updated time becomes t, the time it was queued.
func (b *Broker) enqueue(j *job, t int64) {
	j.updated = t
	if b.seq == math.MaxUint32 {
		b.renumber()
	}
	b.seq++
	j.seq = b.seq
	b.classOf(j).push(b, j)
	b.laneAdd(j, t)
}

// renumber gives the jobs in class queues the queue order numbers 1..n in
// their order, so that the order, 32 bits a job, goes on after 2^32-1
// enqueues (only queued jobs' numbers are compared: pick, nextLane).
func (b *Broker) renumber() {
	var js []*job
	for _, c := range b.classAll {
		for j := c.queue.head; j != nil; j = c.queue.next(&b.jobs, j) {
			js = append(js, j)
		}
	}
	slices.SortFunc(js, func(x, y *job) int { return cmp.Compare(x.seq, y.seq) })
	for i, j := range js {
		j.seq = uint32(i + 1)
	}
	b.seq = uint32(len(js))
}

// unqueue takes a queued job out of its class queue and its lane.
func (b *Broker) unqueue(j *job) {
	b.classOf(j).remove(b, j)
	b.laneRemove(j)
}

// TakeFinished appends the terminal outcomes since the last call to dst and
// forgets them.
func (b *Broker) TakeFinished(dst []Finished) []Finished {
	dst = append(dst, b.finished...)
	clear(b.finished)
	b.finished = b.finished[:0]
	return dst
}

// TakeEvents appends every state change since the last call to dst and
// forgets them. Seq is left 0: the coordinator numbers events. Key (the
// fingerprint in hex) is set on job.done, job.failed and operator requeues
// only: it costs an allocation, and JobID names the job everywhere else.
func (b *Broker) TakeEvents(dst []admin.Event) []admin.Event {
	dst = append(dst, b.events...)
	if cap(b.events) > maxIdleEvents {
		b.events = nil // a burst (a host's back-off) is over: release it
	} else {
		clear(b.events)
		b.events = b.events[:0]
	}
	return dst
}

// TakeClosed appends the sessions to tell DISCONNECT since the last call.
func (b *Broker) TakeClosed(dst []Closed) []Closed {
	dst = append(dst, b.closed...)
	clear(b.closed)
	b.closed = b.closed[:0]
	return dst
}

// Pause stops dispatching until Resume. Results are still accepted.
func (b *Broker) Pause(now time.Time) {
	if !b.paused {
		b.paused = true
		b.emit(admin.Event{At: now, Kind: admin.EventBrokerPaused})
	}
}

// Resume dispatches again after Pause.
func (b *Broker) Resume(now time.Time) {
	if b.paused {
		b.paused = false
		b.emit(admin.Event{At: now, Kind: admin.EventBrokerResumed})
	}
}

// Paused reports whether dispatching is paused.
func (b *Broker) Paused() bool { return b.paused }

// maxIdleEvents is the event buffer capacity kept between drains.
const maxIdleEvents = 1 << 14

func (b *Broker) emit(e admin.Event) { b.events = append(b.events, e) }

// setState moves a job between states, keeping counts and indexes.
func (b *Broker) setState(j *job, st JobState, t int64) {
	old := j.state
	if old == st {
		j.updated = t
		return
	}
	b.count[old]--
	b.count[st]++
	b.countCrawl(j, old, st)
	b.changes++
	b.age.move(j.jobID(), old, st)
	b.hostOf(j).idx.add(int(j.hostPos), old, -1)
	b.hostOf(j).idx.add(int(j.hostPos), st, 1)
	for _, tr := range b.trees {
		if tr != nil {
			tr.restate(j, old, st)
		}
	}
	j.state = st
	j.updated = t
}

// setRetryAt gives a job a retry time of its own (the end of its retry
// delay, kept in its side record), or none for 0, keeping the retry_at
// index.
func (b *Broker) setRetryAt(j *job, at int64) {
	if !j.has(jobHostWait) && b.retryAt(j) == at {
		return
	}
	tr := b.trees[sortRetryAt]
	if tr != nil {
		tr.remove(j)
	}
	j.setFlag(jobHostWait, false)
	if at != 0 {
		b.moreFor(j).retryAt = at
	} else if j.more != 0 {
		b.mores.at(j.more).retryAt = 0
	}
	if tr != nil {
		tr.insert(j)
	}
}

// setRetryHost makes a job's retry time its host's back-off end (a job in
// its host's back-off list), keeping the retry_at index.
func (b *Broker) setRetryHost(j *job) {
	if j.has(jobHostWait) {
		return
	}
	tr := b.trees[sortRetryAt]
	if tr != nil {
		tr.remove(j)
	}
	if j.more != 0 {
		b.mores.at(j.more).retryAt = 0
	}
	j.setFlag(jobHostWait, true)
	if tr != nil {
		tr.insert(j)
	}
}

// ns converts a time to Unix nanoseconds, the zero time to 0.
func ns(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// tm converts Unix nanoseconds back to a UTC time, 0 to the zero time.
func tm(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
