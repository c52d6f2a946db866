package server

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"drover/coord"
	"drover/coord/broker"
	"drover/coord/id"
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
//   - Restart: the store's recovery keeps the oldest N queued jobs and
//     leaves the others and every queued key in the store (only counted),
//     so a restart reads back what is active, not what is known; the read
//     cursor starts before the first job left.
//   - Dedup: a key paged out is looked up in the store when asked for, by
//     the lookup goroutine (lookup.go), and given back to the ledger as
//     queued (giveBack).

// pager is the reactor's paging state.
type pager struct {
	limit int // Options.ResidentJobs
	batch int // jobs per read

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
	err         error
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
func (s *Server) Paging() PagingStats {
	if s.pg == nil {
		return PagingStats{}
	}
	st := &s.pg.stats
	return PagingStats{Out: st.out.Load(), In: st.in.Load(), Reads: st.reads.Load()}
}

// newPager returns the pager of a coordinator keeping limit queued jobs.
func newPager(limit int) *pager {
	return &pager{limit: limit, batch: min(max(limit/4, 1), 10_000), req: make(chan pageReq, 1)}
}

// pageMark notes that store batch seq carries every job submitted up to
// now (called by persist when it applies one).
func (s *Server) pageMark(seq uint64) {
	if p := s.pg; p != nil {
		p.marks = append(p.marks, pageMark{store: seq, last: s.c.LastJob()})
	}
}

// pageDurable notes that store batches up to done are durable.
func (s *Server) pageDurable(done uint64) {
	p := s.pg
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

// pageOut pages out what must go (see above): called between steps, once
// release has noted what is durable.
func (s *Server) pageOut(now time.Time) {
	p := s.pg
	if p == nil || p.durable == p.lastOut && s.c.ResidentQueued() <= p.limit {
		return
	}
	// With jobs in the store, every job above the read cursor goes (the
	// store's jobs are older); with none, the youngest beyond the limit go,
	// and the cursor moves below them.
	paged, _ := s.c.Paged()
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
	if l := s.dur.look.parked; len(l) > 0 {
		ceiling = min(ceiling, l[0].lastJob)
	}
	if ceiling == p.durable {
		p.lastOut = p.durable // else again next step, when it may have left
	}
	look := 64 // how many of the youngest queued jobs to look at first
	for {
		res := s.c.ResidentQueued()
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
		ids := s.c.YoungestQueued(asked, p.scratch[:0])
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
		n := s.c.PageOut(now, out)
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

// pageIn pages in a finished read and starts the next one when the jobs
// in memory run low: called before each step's flush.
func (s *Server) pageIn(now time.Time) {
	p := s.pg
	if p == nil {
		return
	}
	s.takeStoredKeys() // storedkeys.go
	p.mu.Lock()
	ld := p.delivered
	p.delivered = nil
	p.mu.Unlock()
	if ld != nil {
		p.loading = false
		if ld.err != nil {
			s.log.Error("page queued jobs in from the store", "err", ld.err, "after", ld.after)
			p.retryAt = now.Add(time.Second)
		} else {
			n, err := s.c.PageIn(now, ld.recs)
			p.stats.in.Add(uint64(n))
			if err != nil {
				s.log.Error("page queued jobs in", "err", err)
			}
			p.cursor = max(p.cursor, ld.last)
			if len(ld.recs) == 0 {
				paged, _ := s.c.Paged()
				s.log.Warn("no queued job in the store above the read cursor, though some are paged out", "cursor", p.cursor, "paged_out", paged)
				p.retryAt = now.Add(time.Second)
			}
		}
	}
	paged, _ := s.c.Paged()
	res := s.c.ResidentQueued()
	if p.loading || paged == 0 || res > p.limit-p.batch || now.Before(p.retryAt) {
		return
	}
	p.loading = true
	p.stats.reads.Add(1)
	p.req <- pageReq{after: p.cursor, max: min(p.limit-res, paged)}
}

// startPager starts the loader goroutine; stop ends it.
func (s *Server) startPager() (stop func()) {
	p := s.pg
	if p == nil {
		return func() {}
	}
	stopRebuild := s.startRebuild() // storedkeys.go
	st, ring := s.dur.st, s.dur.ring
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
			p.mu.Lock()
			p.delivered = ld
			p.mu.Unlock()
			select {
			case ring <- struct{}{}:
			default:
			}
		}
	}()
	return func() { close(quit); <-exited; stopRebuild() }
}

// restoreResident is restore keeping at most limit queued jobs in memory:
// the others, and every queued key, stay in the store (counted), and the
// keys of the jobs restored are read back in one sorted pass. With the
// counts the last run kept (store.Counts) it reads no job record past the
// first limit queued ones (and the last in another state), and with a
// bounded done set also no key record but those: a restart does not
// depend on the size of the queue. The stored-key filter is then rebuilt
// after it, while the coordinator serves (storedkeys.go; rebuild set).
func restoreResident(c *coord.Coordinator, st *store.Store, now func() time.Time, p *pager, rebuild *atomic.Bool) (coord.RestoreStats, store.Stats, error) {
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
		o.SkipKeys, o.SkippedKey = true, nil
		c.RestoreUnfiltered()
		rebuild.Store(true)
	}
	var live []id.Fingerprint // keys of the jobs restored that are not finished
	sst, err := st.RecoverWith(o, func(r store.Record) error {
		rec, err := fromStore(&r)
		if err != nil {
			return err
		}
		if rec.Kind == coord.RecordJob && rec.Job.State != broker.Done && rec.Job.State != broker.Failed {
			live = append(live, rec.Job.FP)
		}
		return c.RestoreRecord(rec)
	})
	back := 0
	if err == nil {
		slices.SortFunc(live, func(a, b id.Fingerprint) int { return bytes.Compare(a[:], b[:]) })
		err = st.GetKeys(live, func(k *store.KeyRecord) error {
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
