package server

import (
	"fmt"
	"path/filepath"
	"testing"

	"drover/coord"
	"drover/coord/id"
	"drover/coord/ledger"
	"drover/net/wire"
	"drover/store"
)

// TestRestartFromCounts: a coordinator that pages queued jobs out and
// bounds its done set restarts from the counts its batches kept: it reads
// no key record and no queued job beyond those it keeps in memory, and its
// totals are exact at once. While its stored-key filter is rebuilt (held
// here), every key memory does not know is looked up in the store: a
// paged-out key is still a duplicate, an evicted done key still done, a
// new key accepted once. Once rebuilt, a new key costs no read again, and
// the totals still hold.
func TestRestartFromCounts(t *testing.T) {
	const (
		n        = 3000
		resident = 300
		first    = 500 // done before the restart
		cache    = 100 // done keys in memory
		fresh    = 400 // new keys, during and after the rebuild
		again    = 200 // paged-out keys submitted again
	)
	dir := filepath.Join(t.TempDir(), "store")
	url := func(i int) string { return fmt.Sprintf("http://h%d.test/page/%d", i%hosts, i) }
	opts := func(st *store.Store) Options {
		return Options{Store: st, ResidentJobs: resident, Coord: coord.Config{Ledger: ledger.Config{DoneCache: cache}}}
	}
	submit := func(p *rawClient, req uint64, urls []string, want wire.SubmitStatus, reason ledger.Reason, what string) {
		t.Helper()
		items := make([]wire.SubmitItem, len(urls))
		for i, u := range urls {
			items[i] = wire.SubmitItem{Key: key(u), Payload: []byte(u)}
		}
		p.send(&wire.Submit{Req: req, Jobs: items})
		for i, it := range expect[*wire.Submitted](t, p.recv()).Items {
			if it.Status != want || want == wire.SubmitDuplicate && it.Reason != string(reason) {
				t.Fatalf("%s: %s: %+v, want %s %s", what, urls[i], it, want, reason)
			}
		}
	}
	series := func(lo, hi int, f func(int) string) []string {
		var out []string
		for i := lo; i < hi; i++ {
			out = append(out, f(i))
		}
		return out
	}
	newURL := func(i int) string { return fmt.Sprintf("http://new.test/%d", i) }

	st := openStore(t, dir, store.SyncNone)
	s1, stop1 := runServer(t, opts(st))
	p := dial(t, s1.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p1", 0)
	for lo := 0; lo < n; lo += 1000 {
		submit(p, uint64(2+lo), series(lo, lo+1000, url), wire.SubmitAccepted, "", "first submit")
	}
	waitFor(t, "jobs paged out", func() bool { return s1.Paging().Out >= n-resident })
	drain(t, s1, "w1", first)
	// Keys marked done while their jobs wait (DONE names keys whatever
	// their state): the jobs stay queued, one among those the restart
	// keeps (the first queued ones), one among those paged in after it.
	marked := []int{first + 20, first + 200}
	p.send(&wire.Done{Req: 9000, Items: []wire.DoneItem{{Key: key(url(marked[0])), Outcome: wire.DoneOK}, {Key: key(url(marked[1])), Outcome: wire.DoneOK}}})
	expect[*wire.Verdicts](t, p.recv())
	before := totals(t, s1)
	if before.Queued != n-first || before.KeysQueued != n-first-2 || before.Done != first || before.KeysDone != first+2 {
		t.Fatalf("totals before the restart: %+v; want %d queued jobs, %d queued keys, %d done jobs, %d done keys", before, n-first, n-first-2, first, first+2)
	}
	if err := stop1(); err != nil {
		t.Fatal(err)
	}
	st.Close()

	st2 := openStore(t, dir, store.SyncNone)
	t.Cleanup(func() { st2.Close() })
	s2 := newServer(t, opts(st2))
	// Read before Run starts: the coordinator is the reactor's once it runs.
	if sst := s2.dur.stats; !sst.KeysUnread || sst.JobsQueued-sst.JobsQueuedLeft > resident {
		t.Fatalf("restore read %+v: want no key record and at most %d queued jobs", sst, resident)
	}
	if f := s2.c.StoredFilter(); f.Keys != 0 {
		t.Fatalf("stored-key filter after the restore %+v: want it empty until the rebuild", f)
	}
	s2.dur.rebuild.hold = make(chan struct{})
	_, stop2 := runBuilt(t, s2)
	tt := totals(t, s2)
	if tt.Queued != before.Queued || tt.KeysQueued != before.KeysQueued || tt.Done != before.Done || tt.KeysDone != before.KeysDone {
		t.Fatalf("totals after the restart: %+v; want those before it: %+v", tt, before)
	}
	p = dial(t, s2.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p2", 0)
	submit(p, 2, series(n-again, n, url), wire.SubmitDuplicate, ledger.ReasonQueued, "paged-out keys during the rebuild")
	submit(p, 3, series(0, cache, url), wire.SubmitDuplicate, ledger.ReasonDone, "evicted done keys during the rebuild")
	submit(p, 4, series(0, fresh, newURL), wire.SubmitAccepted, "", "new keys during the rebuild")
	submit(p, 5, series(0, fresh, newURL), wire.SubmitDuplicate, ledger.ReasonQueued, "new keys again during the rebuild")
	if !s2.dur.rebuild.active.Load() {
		t.Fatal("the rebuild ended while held")
	}
	close(s2.dur.rebuild.hold)
	waitFor(t, "the stored-key filter rebuilt", func() bool { return !s2.dur.rebuild.active.Load() })
	submit(p, 6, series(fresh, 2*fresh, newURL), wire.SubmitAccepted, "", "new keys after the rebuild")
	submit(p, 7, series(n-again, n, url), wire.SubmitDuplicate, ledger.ReasonQueued, "paged-out keys after the rebuild")
	waitFor(t, "the jobs paged in up to the limit", func() bool { return s2.Paging().In >= resident-resident/4 }) // the restore kept one read's worth
	p.send(&wire.Request{Req: 8, Keys: []id.Key{key(url(n - 1)), key(url(marked[0])), key(url(marked[1]))}})
	vs := expect[*wire.Verdicts](t, p.recv()).Items
	if v := vs[0]; v.Verdict != wire.VerdictNo || v.Reason != string(ledger.ReasonQueued) {
		t.Fatalf("request of a paged-out key after the rebuild: %+v, want no queued", v)
	}
	for i, v := range vs[1:] {
		if v.Verdict != wire.VerdictNo || v.Reason != string(ledger.ReasonDone) {
			t.Fatalf("request of key %d, marked done while its job waited, after the rebuild: %+v, want no done", marked[i], v)
		}
	}
	tt = totals(t, s2)
	if tt.Queued != n-first+2*fresh || tt.KeysQueued != n-first-2+2*fresh || tt.KeysDone != first+2 {
		t.Fatalf("totals after the rebuild: %+v; want %d queued jobs, %d queued keys, %d done keys", tt, n-first+2*fresh, n-first-2+2*fresh, first+2)
	}
	if err := stop2(); err != nil {
		t.Fatal(err)
	}
	if f := s2.c.StoredFilter(); f.Keys < n-first {
		t.Fatalf("stored-key filter after the rebuild %+v: want at least the %d keys the restore left in the store", f, n-first)
	}
	// During the rebuild every key was read: the paged-out and done ones
	// submitted, and the new ones (and, the second time, those paged out
	// since); after it, the paged-out ones again and at most 2% of the new
	// ones (the filter's false positives).
	look := s2.dur.look.stats // Run has returned
	lo := uint64(again+cache+fresh) + again + 1
	if hi := lo + fresh + fresh/50; look.Lookups < lo || look.Lookups > hi {
		t.Fatalf("%d keys read from the store, want %d to %d", look.Lookups, lo, hi)
	}
}
