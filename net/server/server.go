// Package server is drover's reactor: one goroutine that owns the peers
// ROUTER (workers and producers), the admin ROUTER (consoles and the CLI)
// and the events PUB, polls them with a timeout equal to the coordinator's
// next timer, feeds every validated message to the pure core (coord) and
// carries out what it returns: answers, dispatches, disconnects, events.
//
// The wire protocol is DRV/2 (docs/PROTOCOL.md, package net/wire).
package server

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/pebbe/zmq4"

	"drover/admin"
	"drover/auth"
	"drover/clock"
	"drover/coord"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/net/internal/pipe"
	"drover/net/wire"
	"drover/net/zsock"
	"drover/store"
)

// Options configure a Server. Zero values mean the defaults.
type Options struct {
	Peers  string // peers ROUTER bind endpoint (default zsock.DefaultPeers)
	Admin  string // admin ROUTER bind endpoint (default zsock.DefaultAdmin)
	Events string // events PUB bind endpoint (default zsock.DefaultEvents; "-" disables)
	Coord  coord.Config
	Log    *slog.Logger // default: discard
	// Clock is the time of everything the reactor does: each step's time
	// (the coordinator's input), the wait for the coordinator's next
	// deadline, heartbeats and the store's sweeps (default clock.System).
	// Shutdown's bound on the store's last flush and the gatherer's
	// measures of its own wake-ups stay on the machine's clock.
	Clock clock.Clock
	// OnFinished is called on the reactor goroutine for every job that
	// reached a terminal outcome (the result sink: JSONL writer, notifier),
	// before the step's store batch is made. It must not block.
	OnFinished func(broker.Finished)
	// BeforeCommit, with a Store, is called on the reactor goroutine for
	// every store batch, after the step's OnFinished calls; the function
	// it returns (nil: none) runs on the store's writer before the batch
	// is written (store.Batch.Before) and may block until what OnFinished
	// was given is safe: drover crawl waits for its results file, so that
	// no page is done in the store without its record.
	BeforeCommit func() func()
	// OnEvent is called on the reactor goroutine for every event. It must
	// not block.
	OnEvent func(ev admin.Event)
	// OnTotals is called on the reactor goroutine about once a second
	// with the current totals (metrics). It must not block.
	OnTotals func(admin.Totals)
	// Cluster, if set, gives the view of the coordinators sharing this
	// one's store (a Redis Cluster) for admin.Totals.Cluster. It is
	// called on the reactor goroutine and must not block.
	Cluster func() *admin.Cluster
	// OnSettled is called on the reactor goroutine, at once, after each
	// change that leaves the coordinator settled (admin.Totals.Settled):
	// how `drover crawl` knows it is over. It must not block.
	OnSettled func(admin.Totals)
	// Gather is how long the reactor, under load (woken by a message less
	// than GatherBelow after it began to wait), lets messages gather before
	// it acts on them, so that one step handles several: fewer steps and
	// wake-ups for the price of that much latency. 0: none.
	Gather time.Duration
	// GatherBelow is the wait under which the reactor counts itself under
	// load (default 2 x Gather: messages coming slower than that would
	// mostly find nothing to gather with them).
	GatherBelow time.Duration
	// ChangedEvery coalesces CHANGED pushes to consoles (default 100ms).
	ChangedEvery time.Duration
	// Server names the software in WELCOME (default "drover").
	Server string
	// Crawls are defined by New, after the store's crawls are restored,
	// as ACTION define-crawl defines them (the config file's crawls
	// section): a crawl already stored keeps its page count and state.
	Crawls []admin.Crawl
	// Store makes the coordinator durable (issue 7): New restores the
	// coordinator from it, every step's writes are applied to it as one
	// batch, and acknowledgements that promise durability wait for their
	// batch. Nil keeps everything in memory. The caller opens the store and
	// closes it after Run returns.
	Store *store.Store
	// ResidentJobs, with a Store, bounds the queued jobs kept in memory:
	// the others stay only in the store and are paged in, oldest first,
	// as the ones in memory run low (paging.go). 0 keeps every job in
	// memory.
	ResidentJobs int
	// Auth turns CURVE on for every listener and admits only the listed
	// client keys, each to what its role allows (docs/PROTOCOL.md §15).
	// Nil: no CURVE, every client may do everything (loopback only).
	Auth *Auth
	// SweepEvery is how often, with a Store, a goroutine deletes the
	// store's done and failed records past Coord.Ledger.DoneTTL and
	// FailedTTL (default 1 minute; negative: never). Clock must then be
	// safe to call from that goroutine.
	SweepEvery time.Duration
	// Results, when set, keeps every finished job's result (results.go):
	// in Store when there is one (same batch as the job's state), else in
	// memory; QUERY view results reads them.
	Results *ResultsOptions
	// ClusterCrawls, when set, holds the crawls for every coordinator
	// sharing this one's store (clustercrawls.go) instead of Store or
	// memory: their definitions, states, page budgets and figures are the
	// cluster's.
	ClusterCrawls ClusterCrawls
	// ClusterResults, with Results, keeps the results for every
	// coordinator sharing this one's store (clusterresults.go) instead of
	// Store or memory: view results reads every coordinator's.
	ClusterResults ClusterResults
	// ClusterEvents, when set, shares this coordinator's events with the
	// others sharing its store (clusterevents.go): view events shows every
	// coordinator's.
	ClusterEvents ClusterEvents
	// ClusterJobs, when set, makes views jobs and waiters list the jobs
	// and keys of every coordinator sharing this one's store
	// (clusterjobs.go), and a requeue of a job another holds be carried
	// out by that one (clusteract.go).
	ClusterJobs ClusterJobs
}

// Server is a running coordinator with its sockets. Create with New, then
// call Run on one goroutine.
type Server struct {
	opts Options
	log  *slog.Logger
	now  func() time.Time
	c    *coord.Coordinator

	// The parts, each with one job.
	r     reactor      // the loop's inputs, wake-ups, waits and scratch (inputs.go)
	out   sender       // every message out, encoded and counted (sender.go)
	peers listener     // the peers ROUTER: workers and producers
	pd    peerDialogue // the peers' messages into the coordinator (peers.go)
	sess  sessions     // who is connected, their heartbeats (sessions.go)
	disp  dispatcher   // JOBs and CANCELs to workers (dispatch.go)
	adm   dialogue     // the admin socket: consoles and the CLI (admin.go)
	ev    events       // the events socket, its subscriptions, every event out (events.go)
	dur   *durable     // the store: nil without one (durable.go, storeio.go)
	pg    *pager       // queued jobs beyond memory (paging.go); nil: all in memory
	auth  *authState   // nil without Options.Auth (auth.go)
	cl    cluster      // on a Redis Cluster store: its lanes, results, events, job lists, actions (clusterio.go)

	memo   submitMemo   // accepted submits by producer and request (submitmemo.go)
	rob    robotsWrites // robots.txt copies to write (robots.go)
	res    *resultLog   // results and their view (results.go); nil without Options.Results
	crawls crawlSet     // crawl definitions, states and budgets (crawls.go, clustercrawls.go)

	stats Stats
	hooks hooks // tests' ways in; all nil outside tests
}

// listener is a ROUTER the server binds, with its endpoints.
type listener struct {
	sock   *zmq4.Socket
	ep     string // the bound endpoint, the OS's port filled in
	inproc string // the in-process endpoint
}

// hooks are the tests' ways into the reactor and the lookup goroutine,
// in one place; each is nil outside tests.
type hooks struct {
	look   func()               // runs before each batch of done-set lookups (lookup.go)
	queued func(id.Fingerprint) // runs before the lookup goroutine reads a paged-out queued key
	step   func()               // runs in each reactor step after its read
	msg    func()               // runs after each message a step takes in
}

var inprocSeq atomic.Uint64

// New creates the coordinator and binds the sockets. The sockets belong to
// the goroutine that calls Run.
func New(opts Options) (*Server, error) {
	zsock.TuneAllocator()
	if opts.Peers == "" {
		opts.Peers = zsock.DefaultPeers
	}
	if opts.Admin == "" {
		opts.Admin = zsock.DefaultAdmin
	}
	if opts.Events == "" {
		opts.Events = zsock.DefaultEvents
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.ChangedEvery == 0 {
		opts.ChangedEvery = 100 * time.Millisecond
	}
	if opts.GatherBelow == 0 {
		opts.GatherBelow = 2 * opts.Gather
	}
	if opts.Server == "" {
		opts.Server = "drover"
	}
	if opts.Coord.Rand == nil {
		opts.Coord.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if opts.Store != nil {
		opts.Coord.Persist = true
		// Keys beyond the done set or paged out are in the store only: a
		// Bloom filter of them spares a new key the store read (issue
		// 21), sized for what the limits keep out of memory at first
		// (a negative StoredFilter keeps it off).
		if l := &opts.Coord.Ledger; l.StoredFilter == 0 && (l.DoneCache > 0 || opts.ResidentJobs > 0) {
			l.StoredFilter = max(l.DoneCache, opts.ResidentJobs)
		}
	}
	c, err := coord.New(opts.Coord)
	if err != nil {
		return nil, err
	}
	s := &Server{
		opts: opts,
		log:  opts.Log,
		now:  opts.Clock.Now,
		c:    c,
	}
	seq := inprocSeq.Add(1) // this server's number in the process: its inproc endpoints and ZAP domains
	s.r = reactor{
		wake: make(chan struct{}, 1), gather: gatherer{gather: opts.Gather, below: opts.GatherBelow},
		stats: &s.stats, now: s.now, sess: &s.sess, hooks: &s.hooks,
	}
	s.out = sender{stats: &s.stats, log: s.log, dirty: s.r.sent, malformed: c.CountMalformed}
	s.sess = sessions{ident: make(map[string]id.Session), peer: make(map[id.Session]*peer),
		cons: make(map[string]*console), owners: make(map[ownerKey]id.Session),
		out: &s.out, liveness: time.Duration(c.Config().Liveness)}
	s.ev = events{subs: make(map[string]bool), out: &s.out, onEvent: opts.OnEvent, keyEvents: c.PublishKeyEvents}
	s.ev.tellKeyEvents() // nobody subscribed yet
	s.adm = dialogue{sess: &s.sess, out: &s.out, every: opts.ChangedEvery, cfg: c.Config(), name: opts.Server, log: s.log}
	s.cl.wire(opts.ClusterJobs, opts.Cluster, c, &s.out, &s.sess, &s.adm, s.log, s.now) // clusterio.go
	s.disp = dispatcher{batches: make(map[jobBatch]*wire.Job), c: c, sess: &s.sess, out: &s.out, log: s.log}
	s.memo.sharedIDs = opts.Coord.Shared != nil
	s.pd = peerDialogue{c: c, log: s.log, name: opts.Server, sess: &s.sess, out: &s.out, r: &s.r,
		crawls: &s.crawls, memo: &s.memo, rob: &s.rob, workerHello: s.cl.workerHello}
	if opts.Store != nil {
		if opts.ResidentJobs > 0 {
			s.pg = newPager(c, s.log, opts.Store, opts.ResidentJobs) // paging.go
		}
		if s.dur, err = openDurable(c, opts, s.pg); err != nil { // storeio.go
			return nil, err
		}
		s.disp.dur, s.pd.dur, s.r.look = s.dur, s.dur, &s.dur.look
		if s.pg != nil {
			s.pg.look = &s.dur.look
		}
		if err := s.memo.restore(opts.Store, s.now()); err != nil { // submitmemo.go
			return nil, fmt.Errorf("restore from the store: %w", err)
		}
		if err := s.rob.restore(c, opts.Store, s.now()); err != nil { // robots.go
			return nil, fmt.Errorf("restore from the store: %w", err)
		}
		s.log.Info("restored from the store", "path", opts.Store.Path(), "sync", opts.Store.SyncPolicy(),
			"elapsed", s.dur.stats.Elapsed, "summary", s.dur.restored.String())
	}
	if s.res, err = newResults(opts.Results, opts.Store, opts.ClusterResults, s.adm.changed); err != nil { // results.go
		return nil, err
	}
	s.ev.cl, s.ev.res, s.ev.dur = &s.cl, s.res, s.dur             // events.go: what emit uses
	s.cl.wireStore(&s.opts, s.res, s.ev.emit, s.r.ring, s.r.wake) // clusterio.go

	if s.auth, err = newAuth(opts.Auth, seq, s.log, s.r.ring); err != nil { // auth.go
		return nil, err
	}
	if s.auth != nil {
		s.auth.c, s.auth.sess, s.auth.adm, s.auth.out = c, &s.sess, &s.adm, &s.out
	}
	s.crawls = crawlSet{cc: opts.ClusterCrawls, c: c, dur: s.dur, res: s.res, adm: &s.adm, cl: &s.cl, log: s.log, now: s.now}
	if err := s.crawls.restore(); err != nil { // crawls.go
		return nil, fmt.Errorf("restore from the store: %w", err)
	}
	for _, c := range opts.Crawls {
		if _, err := s.crawls.define(s.now(), c); err != nil {
			return nil, fmt.Errorf("crawls.%s: %w", c.Name, err)
		}
	}
	if d := s.dur; d != nil { // storeio.go: what the store I/O reaches
		d.out, d.disp, d.sess, d.ev, d.res = &s.out, &s.disp, &s.sess, &s.ev, s.res
		d.writers = []batchWriter{
			s.res,     // results.go: durable with their jobs' states
			&s.crawls, // crawls.go: page counts durable with the dispatches
			&s.memo,   // submitmemo.go: what the step's SUBMITTEDs say
			&s.rob,    // robots.go: robots.txt copies kept for the fleet
		}
	}
	if err := s.bind(seq); err != nil {
		s.closeSockets()
		return nil, err
	}
	return s, nil
}

// bind binds the sockets; n is the server's number in the process.
func (s *Server) bind(n uint64) error {
	var err error
	if s.peers.sock, err = zsock.Router(s.opts.Peers, s.auth.security(auth.Peers)...); err != nil {
		return fmt.Errorf("peers socket: %w", err)
	}
	if s.peers.ep, err = zsock.Endpoint(s.peers.sock); err != nil {
		return err
	}
	if s.adm.sock, err = zsock.Router(s.opts.Admin, s.auth.security(auth.Admin)...); err != nil {
		return fmt.Errorf("admin socket: %w", err)
	}
	if s.adm.ep, err = zsock.Endpoint(s.adm.sock); err != nil {
		return err
	}
	s.adm.inproc = fmt.Sprintf("inproc://drover-admin-%d", n)
	if err := s.adm.sock.Bind(s.adm.inproc); err != nil {
		return fmt.Errorf("admin socket: bind %s: %w", s.adm.inproc, err)
	}
	s.peers.inproc = fmt.Sprintf("inproc://drover-peers-%d", n)
	if err := s.peers.sock.Bind(s.peers.inproc); err != nil {
		return fmt.Errorf("peers socket: bind %s: %w", s.peers.inproc, err)
	}
	if s.r.hub, err = pipe.Listen(s.peers.inproc, s.r.wake); err != nil {
		return fmt.Errorf("peers: %w", err)
	}
	s.out.peers, s.out.admin, s.out.hub = s.peers.sock, s.adm.sock, s.r.hub
	if s.opts.Events != "-" {
		if s.ev.pub, err = zsock.Pub(s.opts.Events, s.auth.security(auth.Events)...); err != nil {
			return fmt.Errorf("events socket: %w", err)
		}
		if s.ev.ep, err = zsock.Endpoint(s.ev.pub); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) closeSockets() {
	if s.r.hub != nil {
		s.r.hub.Close()
	}
	for _, sk := range []*zmq4.Socket{s.peers.sock, s.adm.sock, s.ev.pub} {
		if sk != nil {
			sk.Close()
		}
	}
	s.auth.close()
}

// PeersEndpoint is where workers and producers connect (the real port).
func (s *Server) PeersEndpoint() string { return s.peers.ep }

// AdminEndpoint is where consoles and the CLI connect.
func (s *Server) AdminEndpoint() string { return s.adm.ep }

// InprocAdmin is the in-process admin endpoint for an embedded console.
func (s *Server) InprocAdmin() string { return s.adm.inproc }

// InprocPeers is the in-process peers endpoint for workers and producers
// running in the same process (drover crawl, drover demo).
func (s *Server) InprocPeers() string { return s.peers.inproc }

// EventsEndpoint is the events PUB endpoint ("" when disabled).
func (s *Server) EventsEndpoint() string { return s.ev.ep }

// Restored says what New restored from Options.Store (zero without one).
func (s *Server) Restored() coord.RestoreStats {
	if s.dur == nil {
		return coord.RestoreStats{}
	}
	return s.dur.restored
}

// Ready reports whether Run is serving (for /readyz).
func (s *Server) Ready() bool { return s.r.ready.Load() }

// Stats counts what the transport saw; read them after Run returns or
// through the admin totals.
type Stats struct {
	Received      uint64
	Sent          uint64
	Malformed     uint64
	Undeliverable uint64 // sends that failed: peer gone or its queue full
	// Steps the reactor made; Received/Steps is how many messages a step
	// handled (ReactorStats says it while Run runs).
	Steps uint64
	// MaxStepItems is the most keys and jobs one step took in
	// (stepItemBudget bounds it, but for the last message's size).
	MaxStepItems int
}

// ReactorStats are the reactor's counters since Run began: Messages/Steps
// is how many messages a step handled, and Gathered steps let messages
// gather first (Options.Gather).
type ReactorStats struct {
	Steps, Messages, Gathered uint64
}

// ReactorStats reads the reactor's counters; safe while Run runs.
func (s *Server) ReactorStats() ReactorStats {
	return s.r.counts()
}

// Run serves until ctx is cancelled, then shuts down gracefully: it stops
// dispatching, tells every peer DISCONNECT, flushes and closes the sockets.
// It must be called once, from one goroutine, which owns the sockets.
func (s *Server) Run(ctx context.Context) error {
	defer s.closeSockets()
	// The reactor waits on Go channels, never in a cgo call (see
	// zsock.Watch): the sockets' signals, the store's doorbell, the next
	// timer and ctx.
	if err := s.openInputs(); err != nil {
		return err
	}
	defer s.r.closeInputs()
	var stored chan struct{} // nil without a store: never ready
	if s.dur != nil {
		stored = s.dur.ring
		defer s.dur.startSweeper(s.opts.SweepEvery, s.opts.Clock)() // storeio.go
		if s.pg != nil {
			defer s.dur.startRebuild()()   // storedkeys.go
			defer s.pg.start(s.dur.ring)() // paging.go
		}
	}
	if s.dur != nil && s.dur.look.on() {
		s.dur.look.looker = startLooker(s.dur, s.hooks.look, s.hooks.queued) // lookup.go
		defer s.dur.look.looker.stop()
	}
	defer s.res.startTrimmer(s.opts.Clock, s.log, &s.cl)() // results.go
	defer s.cl.startEventWriter()()                        // clusterevents.go
	defer s.cl.startIO()()                                 // clusterio.go
	timer := s.opts.Clock.NewTimer(time.Hour)
	defer timer.Stop()
	s.r.ready.Store(true)
	defer s.r.ready.Store(false)
	s.log.Info("serving", "peers", s.peers.ep, "admin", s.adm.ep, "events", s.ev.ep)
	const maxWait = 100 * time.Millisecond
	for {
		if ctx.Err() != nil {
			return s.shutdown()
		}
		s.r.begin() // inputs.go: the step reads what its inputs hold
		s.sess.heard = s.r.heardUntil()
		if s.hooks.step != nil {
			s.hooks.step()
		}
		s.dur.releaseLookups(s.now(), &s.r, &s.pd) // donelookup.go: messages whose store lookups are done
		s.cl.takeAnswers()                         // clusterio.go: what the cluster answered
		s.r.mirror()
		now := s.now()
		s.auth.recheck(now) // auth.go
		s.c.TickHeard(now, s.sess.heard)
		if s.pg != nil {
			s.dur.takeStoredKeys() // storedkeys.go
		}
		s.pg.in(now) // paging.go
		s.flush(now)
		s.stats.MaxStepItems = max(s.stats.MaxStepItems, s.r.stepItems)
		if err := s.dur.release(); err != nil { // storeio.go
			s.shutdown()
			return fmt.Errorf("reactor: %w", err)
		}
		s.pg.out(now) // paging.go
		s.sess.heartbeats(now)
		if s.opts.OnTotals != nil && now.Sub(s.r.lastTotals) >= time.Second {
			s.r.lastTotals = now
			s.opts.OnTotals(s.totals(now))
		}
		s.crawls.syncEvery(now) // clustercrawls.go
		s.cl.noteRetries(now)   // clusterjobs.go
		// Wait only when no socket has a message left (see inputs.go).
		busy, err := s.r.busy()
		if err != nil {
			return fmt.Errorf("reactor: %w", err)
		}
		if busy {
			continue
		}
		wait := maxWait
		if d, ok := s.c.NextDeadline(); ok {
			wait = min(wait, d.Sub(s.now()))
		}
		if wait <= 0 {
			continue
		}
		timer.Reset(wait)
		s.r.wait(stored, timer.C(), ctx.Done())
		timer.Stop()
	}
}

// totals are the coordinator's totals with the transport's counters.
func (s *Server) totals(now time.Time) admin.Totals {
	t := s.c.Totals(now)
	t.Listening = admin.Listeners{Peers: s.peers.ep, Admin: s.adm.ep, Events: s.ev.ep}
	if s.auth != nil {
		t.Forbidden = s.auth.forbidden
		t.HandshakesRefused = s.auth.refused.Load()
	}
	if s.opts.Cluster != nil {
		t.Cluster = s.opts.Cluster()
	}
	return t
}

// shutdown stops dispatching and tells every session DISCONNECT. With a
// store, it waits (a bounded time) for the last batches, so that what was
// acknowledged is durable and what the disconnects changed is written; it
// returns an error if they could not be.
func (s *Server) shutdown() error {
	// First what has already arrived (typically the DISCONNECTs of
	// clients that closed before the server): peers that said goodbye are
	// neither told nor waited for.
	for _, in := range s.r.inputs {
		in.dirty = true
	}
	s.r.readInputs()
	// What was acknowledged goes out before the DISCONNECTs.
	serr := s.dur.settle(time.Now().Add(5 * time.Second))
	now := s.now()
	s.log.Info("shutting down", "sessions", len(s.sess.peer), "consoles", len(s.sess.cons))
	told := len(s.sess.peer) + len(s.sess.cons)
	for _, p := range s.sess.peer {
		s.out.toPeer(p.ident, disconnect(coord.CloseShutdown))
		s.c.Disconnect(now, p.s)
	}
	for _, cs := range s.sess.cons {
		s.out.toConsole(cs.ident, disconnect(coord.CloseShutdown))
	}
	out := s.c.Ready(now)
	s.finished(out.Finished) // out.go: OnFinished, results, crawls' counts
	// clusterio.go: the results added to the cluster
	s.cl.settle(time.Now().Add(5 * time.Second))
	s.dur.persist(out.Writes) // the disconnects' writes: jobs back in the queue
	if serr == nil {
		serr = s.dur.settle(time.Now().Add(5 * time.Second))
	}
	if serr == nil && s.dur != nil {
		// Every dispatch is recorded and every worker told: the next
		// restore need not suppose an attempt runs unrecorded (clean.go).
		if err := s.dur.st.MarkClean(); err != nil {
			s.log.Warn("store: clean shutdown not marked; the next start skips the attempt each unfinished job may have run", "err", err)
		}
	}
	if serr != nil {
		s.log.Error("store: the last writes are not durable", "err", serr)
	}
	// Keep the connections open a moment so the peers read the
	// DISCONNECTs: a client DEALER with IMMEDIATE discards unread input
	// when its connection drops. Input meanwhile is read and dropped.
	// With nobody told (every peer had left), there is nothing to wait for.
	if told > 0 {
		s.r.linger(200 * time.Millisecond)
	}
	for _, sk := range []*zmq4.Socket{s.peers.sock, s.adm.sock} {
		sk.SetLinger(500 * time.Millisecond)
	}
	if serr != nil {
		return fmt.Errorf("shutdown: %w", serr)
	}
	return nil
}
