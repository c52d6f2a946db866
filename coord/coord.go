// Package coord is drover's coordinator core: the ledger of work keys
// (coord/ledger) and the job broker (coord/broker) composed into one pure,
// deterministic state machine, with session liveness, the invariants that tie
// the two together, and the queries and operator actions of the console.
//
// Nothing here does I/O, starts a goroutine or reads the wall clock: every
// input carries the current time, randomness comes from Config.Rand, and
// every effect (answers to send, jobs to dispatch, sessions to close, events,
// finished jobs) comes out of Ready as values for the transport to carry out.
// The model is etcd-io/raft's Step/Tick/Ready.
package coord

import (
	"errors"

	"drover/admin"

	"fmt"
	"math/rand/v2"
	"time"

	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"
)

// Role is what a session announced itself as in its HELLO.
type Role uint8

// The roles.
const (
	RoleProducer Role = iota + 1 // submits work and uses the ledger
	RoleWorker                   // takes jobs (and may use the ledger too)
	RoleConsole                  // admin queries and actions only
)

// String names the role as the wire protocol does.
func (r Role) String() string {
	switch r {
	case RoleProducer:
		return "producer"
	case RoleWorker:
		return "worker"
	case RoleConsole:
		return "console"
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// Config sets the coordinator's parameters. The zero value of a field means
// its default.
type Config struct {
	// Heartbeat is the interval the coordinator prefers (default 1s). A
	// session may propose another within [MinHeartbeat, MaxHeartbeat].
	Heartbeat    time.Duration
	MinHeartbeat time.Duration // default 100ms
	MaxHeartbeat time.Duration // default 60s
	// Liveness is how many intervals may pass without traffic before a
	// session is declared dead (default 3).
	Liveness int
	// EventBuffer is how many recent events the Events view keeps (default 1000).
	EventBuffer int
	// MaxJobs caps how many jobs may ever be submitted (a crawl's
	// --max-pages); further submits are rejected with reason max-jobs.
	// 0 means no cap.
	MaxJobs int
	Ledger  ledger.Config
	// Backend, if set, is the ledger the coordinator uses instead of one
	// of its own in memory built from Ledger (for instance the Redis
	// Cluster ledger several coordinators share). The embedded store's
	// extras (a bounded done set, paging queued keys out, the durable
	// write log) need the in-memory ledger: with a Backend, Persist and
	// Ledger.DoneCache must be off, and PageOut, PageIn, KnownDone and
	// KnownQueued are refused.
	Backend ledger.Backend
	// Shared, if set, is a job queue shared with other coordinators
	// (shared.go): accepted jobs go there instead of into this
	// coordinator's broker, and Tick claims jobs from it for this one's
	// workers.
	Shared SharedQueue
	// SharedWindow is how many claimed jobs may wait in this
	// coordinator's queues for its workers (default 64); a claim takes no
	// more than the free slots of its ready workers.
	SharedWindow int
	Broker       broker.Config // Broker.Rand defaults to Config.Rand
	// Persist makes Ready report every durable change in Output.Writes
	// (ledger keys, jobs, meta counters; see persist.go). It sets
	// Ledger.Persist.
	Persist bool
	// ReclaimTimeout is how long jobs that were dispatched when the
	// coordinator stopped wait, after a restore, for their workers to
	// reconnect and reclaim them before they are requeued uncharged.
	// Default Heartbeat × Liveness × 2.
	ReclaimTimeout time.Duration
	// Rand is the random source (jitter). Default: a fixed-seed PCG, so
	// behaviour is reproducible unless the caller seeds it.
	Rand *rand.Rand
}

func (c *Config) setDefaults() error {
	var errs []error
	if c.Heartbeat == 0 {
		c.Heartbeat = time.Second
	}
	if c.MinHeartbeat == 0 {
		c.MinHeartbeat = 100 * time.Millisecond
	}
	if c.MaxHeartbeat == 0 {
		c.MaxHeartbeat = time.Minute
	}
	if c.Liveness == 0 {
		c.Liveness = 3
	}
	if c.SharedWindow <= 0 {
		c.SharedWindow = 64
	}
	if c.EventBuffer == 0 {
		c.EventBuffer = 1000
	}
	if c.Heartbeat < 0 || c.MinHeartbeat < 0 || c.MaxHeartbeat < c.MinHeartbeat {
		errs = append(errs, fmt.Errorf("coord config heartbeat %v (min %v, max %v): want positive durations with min <= max", c.Heartbeat, c.MinHeartbeat, c.MaxHeartbeat))
	} else if c.Heartbeat < c.MinHeartbeat || c.Heartbeat > c.MaxHeartbeat {
		errs = append(errs, fmt.Errorf("coord config heartbeat %v: want within [%v, %v]", c.Heartbeat, c.MinHeartbeat, c.MaxHeartbeat))
	}
	if c.Liveness < 1 {
		errs = append(errs, fmt.Errorf("coord config liveness %d: want >= 1", c.Liveness))
	}
	if c.MaxJobs < 0 {
		errs = append(errs, fmt.Errorf("coord config max jobs %d: want >= 0 (0: no cap)", c.MaxJobs))
	}
	if c.EventBuffer < 1 {
		errs = append(errs, fmt.Errorf("coord config event buffer %d: want >= 1", c.EventBuffer))
	}
	if c.Backend != nil && (c.Persist || c.Ledger.DoneCache != 0) {
		errs = append(errs, fmt.Errorf("coord config: a ledger backend with persist %v and done cache %d: want neither (the embedded store's extras need the in-memory ledger)", c.Persist, c.Ledger.DoneCache))
	}
	// Durability (persist.go).
	if c.Persist {
		c.Ledger.Persist = true
	}
	if c.ReclaimTimeout == 0 && c.Liveness > 0 && c.Heartbeat > 0 {
		c.ReclaimTimeout = c.Heartbeat * time.Duration(c.Liveness) * 2
	}
	if c.ReclaimTimeout < 0 {
		errs = append(errs, fmt.Errorf("coord config reclaim timeout %v: want > 0 (or 0 for heartbeat × liveness × 2)", c.ReclaimTimeout))
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(1, 2))
	}
	if c.Broker.Rand == nil {
		c.Broker.Rand = c.Rand
	}
	return errors.Join(errs...)
}

// Coordinator is the composed core. Create one with New. It is not safe for
// concurrent use: one goroutine (the reactor) owns it.
type Coordinator struct {
	cfg Config
	led ledger.Backend
	mem embedded // the in-memory ledger's extras; nil with Config.Backend
	brk *broker.Broker

	norms     Normals    // Unknown's memo of one message's normal forms (normals.go)
	grants    grants     // the keys a few sessions' last REQUEST granted (grants.go)
	spare     [][]normal // memos kept for reuse (normals.go)
	pagedKeys int        // queued keys left in the store, not in the ledger's memory (page.go)

	// unfiltered: key records left in the store are not all in the
	// stored-key filter yet (page.go, RestoreUnfiltered).
	unfiltered bool

	sessions map[id.Session]*session
	byName   map[nameKey]id.Session
	live     livenessHeap

	// pending holds the job specs of SUBMITs that had to wait for a key
	// another session had requested: when the key is handed over to the
	// submitter, the job is queued and enqueued on its behalf.
	pending map[pendingKey]pendingSubmit

	out     Output
	closes  []Close       // sessions dropped since the last Ready
	cancels []Cancel      // running jobs requeued since the last Ready
	extra   []admin.Event // events of the coordinator's own since the last Ready
	scratch scratch
	events  eventRing
	seq     uint64
	// keyEvents: the output carries key events (PublishKeyEvents).
	keyEvents bool

	shared         sharedState // shared.go
	sharedClaimed  uint64
	sharedReturned uint64
	sharedErrors   uint64

	dedupHits uint64
	// idRefusals: submitted jobs refused for want of a job ID
	idRefusals uint64
	malformed  uint64
	submitted  uint64

	dur durability // durability hook (persist.go): writes, restore, reclaim wait
}

// scratch holds reusable buffers for draining the sub-machines.
type scratch struct {
	answers  []ledger.Answer
	levents  []ledger.Event
	finished []broker.Finished
	closed   []broker.Closed
	items    []ledger.Item        // Request's keys for the ledger
	fps      []id.Fingerprint     // Queue's
	results  []ledger.Result      // and their answers
	backoffs []broker.HostBackoff // hosts backed off, shared with other coordinators (shared.go)
	handed   []broker.HandedBack  // jobs handed back to the shared queue (shared.go)
}

// New returns a coordinator with no sessions, keys or jobs.
func New(cfg Config) (*Coordinator, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	var led ledger.Backend = cfg.Backend
	var mem embedded
	var own *ledger.Ledger // the in-memory ledger, when there is no Backend
	if led == nil {
		l, err := ledger.New(cfg.Ledger)
		if err != nil {
			return nil, fmt.Errorf("coord: %w", err)
		}
		led, mem, own = l, l, l
	}
	brk, err := broker.New(cfg.Broker)
	if err != nil {
		return nil, fmt.Errorf("coord: %w", err)
	}
	holdPoliteness(cfg.Shared, brk, cfg.Broker.Politeness.Processor) // shared.go
	if own != nil {
		// One copy of a queued key: the job's (ledger/lend.go).
		own.SetJobs(ledgerJobs{brk})
		brk.OnForget(func(fp id.Fingerprint, j broker.JobID) {
			if j < ledger.LentMax {
				own.Reclaim(fp, uint32(j))
			}
		})
	}
	return &Coordinator{
		cfg:       cfg,
		led:       led,
		mem:       mem,
		brk:       brk,
		sessions:  make(map[id.Session]*session),
		byName:    make(map[nameKey]id.Session),
		pending:   make(map[pendingKey]pendingSubmit),
		events:    newEventRing(cfg.EventBuffer),
		keyEvents: true,
	}, nil
}

// Config returns the effective configuration (defaults filled in).
func (c *Coordinator) Config() Config { return c.cfg }

// CountMalformed records a message the transport rejected before it reached
// the core, for the console's and the metrics' counters.
func (c *Coordinator) CountMalformed() { c.malformed++ }

// NextDeadline is the earliest time at which Tick has work to do: a session
// whose liveness runs out, a lease that expires, a back-off that ends. The
// reactor polls its sockets no longer than until then.
func (c *Coordinator) NextDeadline() (time.Time, bool) {
	var best time.Time
	ok := false
	consider := func(t time.Time, has bool) {
		if has && (!ok || t.Before(best)) {
			best, ok = t, true
		}
	}
	consider(c.live.next())
	consider(c.led.NextDeadline())
	consider(c.brk.NextDeadline())
	consider(c.reclaimDeadline()) // durability hook (persist.go)
	consider(c.sharedDeadline())  // shared.go
	return best, ok
}

// Tick advances time: sessions silent for longer than heartbeat × liveness
// are declared dead (what they held is released), request leases expire,
// back-offs end and unroutable jobs time out. It is TickHeard(now, now).
func (c *Coordinator) Tick(now time.Time) { c.TickHeard(now, now) }

// TickHeard is Tick for a caller that may not have read everything sent to
// it by now: heard (at most now) is the time up to which every message
// sessions sent has been taken in (Touch). A session is declared dead only
// when its deadline is before heard, so a reactor that fell behind its
// socket does not take its own busy time for its peers' silence (their
// heartbeats may be waiting unread); every other timer runs at now.
func (c *Coordinator) TickHeard(now, heard time.Time) {
	if heard.After(now) {
		heard = now
	}
	for {
		s, ok := c.live.popExpired(heard, c.sessions)
		if !ok {
			break
		}
		c.dropSession(now, s, CloseLost)
	}
	c.led.Tick(now)
	c.brk.Tick(now)
	c.tickReclaim(now) // durability hook (persist.go): the reclaim wait after a restore
	c.claimShared(now) // shared.go
}

// ledgerJobs is the broker as the holder of the jobs the in-memory
// ledger lends queued keys to (ledger.Jobs; ledger/lend.go).
type ledgerJobs struct{ b *broker.Broker }

func (x ledgerJobs) JobOf(fp id.Fingerprint) (uint32, bool) {
	j, ok := x.b.JobOfKey(fp)
	if !ok || j >= ledger.LentMax {
		return 0, false
	}
	return uint32(j), true
}

func (x ledgerJobs) JobFP(j uint32) id.Fingerprint { return x.b.FPOf(broker.JobID(j)) }

func (x ledgerJobs) JobKey(j uint32) (id.Key, time.Time) {
	k, at, _ := x.b.KeyOf(broker.JobID(j))
	return k, at
}

// Lent: the ledger's index names job j by its key, so the broker's key
// index need not (jobOfKey asks the ledger first).
func (x ledgerJobs) Lent(j uint32) { x.b.Unindex(broker.JobID(j)) }

func (x ledgerJobs) Returned(j uint32) { x.b.Reindex(broker.JobID(j)) }

// jobOfKey is the newest job of key fp that is kept: the one the key is
// lent to (whom the broker's key index leaves to the ledger), or the
// broker's.
func (c *Coordinator) jobOfKey(fp id.Fingerprint) (broker.JobID, bool) {
	if c.mem != nil {
		if j, ok := c.mem.LentJob(fp); ok {
			return broker.JobID(j), true
		}
	}
	return c.brk.JobOfKey(fp)
}
