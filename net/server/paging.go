package server

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"drover/coord"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"
	"drover/store"
)

// Queued jobs beyond RAM (issue 21, Options.ResidentJobs), the reactor's
// half (coord/page.go is the core's). With a store and ResidentJobs N > 0
// the coordinator holds at most about N queued jobs in memory; the others
// are only in the store, where job records are kept in id order:
//
//   - Page-out: once a step's writes are durable, the reactor pages out the
//     youngest queued jobs beyond N (their records, and their keys, are in
//     the store). While any job is paged out, every queued job submitted
//     since (an id above the read cursor) goes out too, so that the jobs
//     in memory are always older than those in the store: FIFO order holds
//     across the two.
//   - Page-in: when the jobs waiting in memory fall to N - batch, a loader
//     goroutine reads the next batch of queued job records above the read
//     cursor, and the reactor pages them in, in id order, while the jobs
//     still in memory keep the workers busy: dispatch never waits for the
//     disk.
//   - Restart: the store's recovery keeps the oldest queued jobs and
//     leaves the others and every queued key in the store, counted from
//     the counts every batch records (storeio.go's countsInto), so a
//     restart reads back what is active, not what is known; the read
//     cursor starts before the first job left, and the key filter is
//     rebuilt while the coordinator serves (storedkeys.go).
//   - Dedup: a key paged out is looked up in the store when asked for, by
//     the lookup goroutine (lookup.go), and given back to the ledger as
//     queued (giveBack). The loader reads the keys of the jobs it pages in
//     too: a key marked done while its job was out stays done.

// pager is the Server's paging part: what is paged out and in, and the
// loader goroutine. It is given the coordinator, the log and the done-set
// look-ups (whose parked messages hold page-outs back), and is nil when
// every job stays in memory: its methods then do nothing.
type pager struct {
	c     *coord.Coordinator
	log   *slog.Logger
	st    *store.Store
	look  *doneLookup // the parked messages (out's ceiling)
	limit int         // Options.ResidentJobs
	batch int         // jobs per read

	cursor    uint64       // queued jobs above it may be in the store only; reads start above it
	marks     []pageMark   // applied store batches not yet durable
	durable   broker.JobID // jobs up to it were submitted in durable batches
	lastOut   broker.JobID // durable when page-out last ran
	outs      uint64       // page-outs that put jobs out (a parked message's keys may be among them: relook)
	loading   bool         // a read is in flight
	retryAt   time.Time    // after a read found nothing although jobs are paged out
	scratch   []broker.JobID
	req       chan pageReq
	mu        sync.Mutex
	delivered *pageLoad // a finished read, for the reactor
	stats     pageStats
}

// pageMark ties a store batch to the highest job id allocated when it was
// applied.
type pageMark struct {
	store uint64
	last  broker.JobID
}

type pageReq struct {
	after uint64
	max   int
}

// pageLoad is a finished read.
type pageLoad struct {
	after, last uint64
	recs        []coord.JobRecord
	// The store's records of the jobs' keys, given back to the
	// coordinator before the jobs: PageIn would take a key it does not
	// know for queued since the job's creation, and one marked done
	// meanwhile, or queued at another time, is not.
	queued []coord.QueuedKey
	done   []coord.KnownKey
	err    error
}

// pageStats count the paging since start (read from any goroutine).
type pageStats struct {
	out, in, reads atomic.Uint64
}

// PagingStats count the queued jobs paged out of memory and back in since
// the server started, and the store reads that brought them
// (Options.ResidentJobs).
type PagingStats struct {
	Out, In, Reads uint64
}

// Paging reads the paging counters; safe while Run runs.
func (s *Server) Paging() PagingStats { return s.pg.counts() }

// counts reads the paging counters (zero without paging).
func (p *pager) counts() PagingStats {
	if p == nil {
		return PagingStats{}
	}
	st := &p.stats
	return PagingStats{Out: st.out.Load(), In: st.in.Load(), Reads: st.reads.Load()}
}

// newPager returns the pager of coordinator c keeping limit queued jobs,
// the others in st.
func newPager(c *coord.Coordinator, log *slog.Logger, st *store.Store, limit int) *pager {
	return &pager{c: c, log: log, st: st, limit: limit, batch: min(max(limit/4, 1), 10_000), req: make(chan pageReq, 1)}
}

// mark notes that store batch seq carries every job submitted up to now
// (called by persist when it applies one).
func (p *pager) mark(seq uint64) {
	if p != nil {
		p.marks = append(p.marks, pageMark{store: seq, last: p.c.LastJob()})
	}
}

// durableUpTo notes that store batches up to done are durable.
func (p *pager) durableUpTo(done uint64) {
	if p == nil {
		return
	}
	n := 0
	for n < len(p.marks) && p.marks[n].store <= done {
		p.durable = max(p.durable, p.marks[n].last)
		n++
	}
	p.marks = p.marks[:copy(p.marks, p.marks[n:])]
}

// out pages out what must go (see above): called between steps, once
// release has noted what is durable.
func (p *pager) out(now time.Time) {
	if p == nil || p.durable == p.lastOut && p.c.ResidentQueued() <= p.limit {
		return
	}
	// With jobs in the store, every job above the read cursor goes (the
	// store's jobs are older); with none, the youngest beyond the limit go,
	// and the cursor moves below them.
	paged, _ := p.c.Paged()
	inStore := paged > 0
	var lowest broker.JobID
	defer func() {
		if !inStore && lowest > 0 {
			p.cursor = uint64(lowest) - 1
		}
	}()
	// Jobs made since the oldest parked message was parked stay: their
	// keys may be ones its lookup found absent (relook).
	ceiling := p.durable
	if l := p.look.parked; len(l) > 0 {
		ceiling = min(ceiling, l[0].lastJob)
	}
	if ceiling == p.durable {
		p.lastOut = p.durable // else again next step, when it may have left
	}
	look := 64 // how many of the youngest queued jobs to look at first
	for {
		res := p.c.ResidentQueued()
		want := res - p.limit
		if inStore {
			want = res
		}
		if want <= 0 {
			return
		}
		// Few of the youngest are usually above the cursor: look at a few
		// first, more only while they all go.
		asked := min(want, look)
		ids := p.c.YoungestQueued(asked, p.scratch[:0])
		out := ids[:0]
		stop := false
		for _, j := range ids {
			switch {
			case inStore && uint64(j) <= p.cursor:
				stop = true // older than the store's jobs: stays
			case j > ceiling:
				continue // not durable yet, or newer than a parked message: next time
			default:
				out = append(out, j)
			}
			if stop || len(out) == want {
				break
			}
		}
		p.scratch = ids[:0]
		if len(out) == 0 {
			if stop || len(ids) < asked || asked == want || look >= 1<<20 {
				return
			}
			look *= 2 // all not durable yet: look further
			continue
		}
		lowest = out[len(out)-1]
		n := p.c.PageOut(now, out)
		p.stats.out.Add(uint64(n))
		if n > 0 {
			p.outs++
		}
		if n == 0 || stop {
			return
		}
		look = min(look*2, 1<<20)
	}
}

// in pages in a finished read and starts the next one when the jobs in
// memory run low: called before each step's flush.
func (p *pager) in(now time.Time) {
	if p == nil {
		return
	}
	p.mu.Lock()
	ld := p.delivered
	p.delivered = nil
	p.mu.Unlock()
	if ld != nil {
		p.loading = false
		if ld.err != nil {
			p.log.Error("page queued jobs in from the store", "err", ld.err, "after", ld.after)
			p.retryAt = now.Add(time.Second)
		} else {
			p.c.KnownDone(ld.done)
			p.c.KnownQueued(ld.queued)
			n, err := p.c.PageIn(now, ld.recs)
			p.stats.in.Add(uint64(n))
			if err != nil {
				p.log.Error("page queued jobs in", "err", err)
			}
			p.cursor = max(p.cursor, ld.last)
			if len(ld.recs) == 0 {
				paged, _ := p.c.Paged()
				p.log.Warn("no queued job in the store above the read cursor, though some are paged out", "cursor", p.cursor, "paged_out", paged)
				p.retryAt = now.Add(time.Second)
			}
		}
	}
	paged, _ := p.c.Paged()
	res := p.c.ResidentQueued()
	if p.loading || paged == 0 || res > p.limit-p.batch || now.Before(p.retryAt) {
		return
	}
	p.loading = true
	p.stats.reads.Add(1)
	p.req <- pageReq{after: p.cursor, max: min(p.limit-res, paged)}
}

// liveKey is the key of a job a restore kept in memory, from its record.
type liveKey struct {
	fp  id.Fingerprint
	key id.Key
	at  time.Time
}

// start starts the loader goroutine, ringing ring (the reactor's store
// doorbell) when a read is done; stop ends it.
func (p *pager) start(ring chan struct{}) (stop func()) {
	if p == nil {
		return func() {}
	}
	st := p.st
	quit, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		for {
			var r pageReq
			select {
			case <-quit:
				return
			case r = <-p.req:
			}
			ld := &pageLoad{after: r.after}
			ld.last, _, ld.err = st.ReadQueuedJobs(r.after, r.max, func(j *store.JobRecord) error {
				ld.recs = append(ld.recs, fromStoreJob(j))
				return nil
			})
			if ld.err == nil {
				ld.err = readPagedKeys(st, ld)
			}
			p.mu.Lock()
			p.delivered = ld
			p.mu.Unlock()
			select {
			case ring <- struct{}{}:
			default:
			}
		}
	}()
	return func() { close(quit); <-exited }
}

// readPagedKeys reads the key records of the jobs of ld, in one sorted
// pass, into ld.queued and ld.done (the loader goroutine).
func readPagedKeys(st *store.Store, ld *pageLoad) error {
	fps := make([]id.Fingerprint, len(ld.recs))
	for i := range ld.recs {
		fps[i] = ld.recs[i].FP
	}
	slices.SortFunc(fps, func(a, b id.Fingerprint) int { return bytes.Compare(a[:], b[:]) })
	fps = slices.Compact(fps)
	return st.GetKeys(fps, func(k *store.KeyRecord) error {
		switch k.State {
		case store.KeyQueued:
			ld.queued = append(ld.queued, coord.QueuedKey{FP: k.FP, Key: k.Key, At: k.At})
		case store.KeyDone, store.KeyFailed:
			ld.done = append(ld.done, coord.KnownKey{FP: k.FP, At: k.At, Failed: k.State == store.KeyFailed})
		}
		return nil
	})
}

// restoreResident is restore keeping at most limit queued jobs in memory:
// the others, and every queued key, stay in the store (counted), and the
// keys of the jobs restored come back with them. With the counts the last
// run kept (store.Counts) it reads no job record past the first limit
// queued ones (and the last in another state), and with a bounded done
// set no key record at all: the keys of the jobs restored are taken from
// their job records, as PageIn takes them, and the stored-key filter is
// rebuilt after the restore while the coordinator serves (storedkeys.go,
// which also corrects the rare key done while its job was not); it keeps
// only one page-in's worth of the queued jobs, the pager reading the rest
// up to the limit after it. A restart then depends neither on the size of
// the queue nor on the limit. Without the counts the key records are read
// (the queued ones only counted, the keys of the jobs restored in one
// sorted pass).
func restoreResident(c *coord.Coordinator, st *store.Store, now func() time.Time, p *pager, rb *keyRebuild) (coord.RestoreStats, store.Stats, error) {
	bounded := c.Config().Ledger.DoneCache > 0
	cnt, counted, err := st.Counts()
	if err != nil {
		return coord.RestoreStats{}, store.Stats{}, fmt.Errorf("restore from the store: %w", err)
	}
	o := store.RecoverOptions{SkipDoneKeys: bounded, SkipQueuedKeys: true, MaxQueuedJobs: p.limit, SkippedKey: c.RestoreStoredKey}
	if counted {
		o.Counts = &cnt // no job record past the first limit queued ones (and the last in another state)
	}
	fast := counted && bounded // no key record either: done keys are looked up on demand
	if fast {
		// One read's worth of queued jobs: the pager reads the rest up to
		// the limit once the coordinator serves (pager.in), as it does when
		// workers take them.
		o.MaxQueuedJobs = min(p.limit, p.batch)
		o.SkipKeys, o.SkippedKey = true, nil
		c.RestoreUnfiltered()
		rb.active.Store(true)
	}
	var live []liveKey // keys of the jobs restored that are not finished
	sst, err := st.RecoverWith(o, func(r store.Record) error {
		rec, err := fromStore(&r)
		if err != nil {
			return err
		}
		if j := &rec.Job; rec.Kind == coord.RecordJob && j.State != broker.Done && j.State != broker.Failed {
			live = append(live, liveKey{fp: j.FP, key: j.Key, at: j.Created})
		}
		return c.RestoreRecord(rec)
	})
	slices.SortFunc(live, func(a, b liveKey) int { return bytes.Compare(a.fp[:], b.fp[:]) })
	live = slices.CompactFunc(live, func(a, b liveKey) bool { return a.fp == b.fp })
	back := 0
	switch {
	case err != nil:
	case fast:
		rb.restored = make([]id.Fingerprint, len(live))
		for i, k := range live {
			rb.restored[i] = k.fp
			if k.at.IsZero() {
				k.at = now() // a record without its creation time: queued now, as far as anyone knows
			}
			if err = c.RestoreRecord(coord.Record{Kind: coord.RecordKey, Key: ledger.Write{Op: ledger.PutQueued, FP: k.fp, Key: k.key, At: k.at}}); err != nil {
				break
			}
			back++
		}
	default:
		fps := make([]id.Fingerprint, len(live))
		for i, k := range live {
			fps[i] = k.fp
		}
		err = st.GetKeys(fps, func(k *store.KeyRecord) error {
			if k.State != store.KeyQueued {
				return nil
			}
			rec, err := fromStore(&store.Record{Kind: store.KindKey, Key: *k})
			if err == nil {
				err = c.RestoreRecord(rec)
				back++
			}
			return err
		})
	}
	keysLeft := sst.KeysQueuedLeft
	if fast {
		sst.KeysDone, keysLeft = int(cnt.KeysDone), int(cnt.KeysQueued)
		sst.PlainAbove = max(sst.PlainAbove, cnt.PlainAbove)
	}
	if err == nil && bounded {
		err = c.RestoreStored(sst.KeysDone, sst.KeysFailed)
	}
	if err == nil {
		err = c.RestorePaged(sst.JobsQueuedLeft, max(keysLeft-back, 0))
	}
	if err != nil {
		return coord.RestoreStats{}, sst, fmt.Errorf("restore from the store: %w", err)
	}
	if sst.JobsQueuedLeft > 0 {
		p.cursor = sst.FirstJobLeft - 1
	}
	stats, err := c.FinishRestore(now())
	if err != nil {
		return stats, sst, fmt.Errorf("restore from the store: %w", err)
	}
	return stats, sst, nil
}
