package server

import (
	"fmt"
	"path/filepath"
	"testing"

	"drover/coord/id"
	"drover/coord/ledger"
	"drover/net/wire"
	"drover/store"
)

// TestStoredFilterSparesReads: with queued jobs paged out to the store, a
// key never seen costs no store read (the ledger's stored-key filter says
// it cannot be there; its false-positive rate is below 1%, so at most a
// few of thousands are read), while every paged-out key is still read and
// found (dedup stays exact). After a restart the filter is rebuilt from
// the keys the restore left in the store, and the same holds.
func TestStoredFilterSparesReads(t *testing.T) {
	const (
		n        = 6000
		resident = 500
		fresh    = 2000 // new keys submitted after the paging
		again    = 300  // paged-out keys submitted again
	)
	dir := filepath.Join(t.TempDir(), "store")
	url := func(i int) string { return fmt.Sprintf("http://h%d.test/page/%d", i%hosts, i) }
	submit := func(p *rawClient, req uint64, urls []string, want wire.SubmitStatus, what string) {
		t.Helper()
		items := make([]wire.SubmitItem, len(urls))
		for i, u := range urls {
			items[i] = wire.SubmitItem{Key: key(u)}
		}
		p.send(&wire.Submit{Req: req, Jobs: items})
		for i, it := range expect[*wire.Submitted](t, p.recv()).Items {
			if it.Status != want {
				t.Fatalf("%s: %s: %+v, want %s", what, urls[i], it, want)
			}
			if want == wire.SubmitDuplicate && it.Reason != string(ledger.ReasonQueued) {
				t.Fatalf("%s: %s: %+v, want duplicate queued", what, urls[i], it)
			}
		}
	}
	series := func(format string, lo, hi int) []string {
		var out []string
		for i := lo; i < hi; i++ {
			out = append(out, fmt.Sprintf(format, i))
		}
		return out
	}
	pagedOut := func() []string { // keys of jobs the server holds only in the store
		var out []string
		for i := n - again; i < n; i++ {
			out = append(out, url(i))
		}
		return out
	}
	// checkReads bounds the keys a server looked up in its store: the
	// paged-out keys submitted again, plus at most 2% of the new ones.
	checkReads := func(s *Server, newKeys int, when string) {
		t.Helper()
		look := s.dur.look.stats // Run has returned
		if look.Lookups < again || look.Lookups > uint64(again+newKeys/50) {
			t.Fatalf("%s: %d keys read from the store, want %d (the paged-out ones) and at most %d more (2%% of %d new keys)",
				when, look.Lookups, again, newKeys/50, newKeys)
		}
		t.Logf("%s: %d keys read from the store (%d paged out, %d new keys)", when, look.Lookups, again, newKeys)
	}

	st := openStore(t, dir, store.SyncNone)
	s1, stop1 := runServer(t, Options{Store: st, ResidentJobs: resident})
	p := dial(t, s1.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p1", 0)
	for lo := 0; lo < n; lo += 1000 {
		var urls []string
		for i := lo; i < lo+1000; i++ {
			urls = append(urls, url(i))
		}
		submit(p, uint64(2+lo), urls, wire.SubmitAccepted, "first submit")
	}
	waitFor(t, "jobs paged out", func() bool { return s1.Paging().Out >= n-resident })
	submit(p, 10_000, series("http://new.test/a/%d", 0, fresh), wire.SubmitAccepted, "new keys")
	submit(p, 10_001, pagedOut(), wire.SubmitDuplicate, "paged-out keys again")
	if err := stop1(); err != nil {
		t.Fatal(err)
	}
	checkReads(s1, n-resident+fresh, "first server")
	if f := s1.c.StoredFilter(); f.Keys < n-resident || f.Bytes == 0 {
		t.Fatalf("stored-key filter %+v: want the %d paged-out keys in it", f, n-resident)
	}
	st.Close()

	st2 := openStore(t, dir, store.SyncNone)
	t.Cleanup(func() { st2.Close() })
	s2 := newServer(t, Options{Store: st2, ResidentJobs: resident})
	// Read before Run starts: the coordinator is the reactor's once it runs.
	if f := s2.c.StoredFilter(); f.Keys < n+fresh-resident {
		t.Fatalf("after the restart, stored-key filter %+v: want the %d keys the restore left in the store", f, n+fresh-resident)
	}
	_, stop2 := runBuilt(t, s2)
	p = dial(t, s2.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p2", 0)
	submit(p, 2, series("http://new.test/b/%d", 0, fresh), wire.SubmitAccepted, "new keys after the restart")
	submit(p, 3, pagedOut(), wire.SubmitDuplicate, "paged-out keys after the restart")
	p.send(&wire.Request{Req: 4, Keys: []id.Key{key(url(n - 1))}})
	if v := expect[*wire.Verdicts](t, p.recv()).Items[0]; v.Verdict != wire.VerdictNo || v.Reason != string(ledger.ReasonQueued) {
		t.Fatalf("request of a paged-out key after the restart: %+v, want no queued", v)
	}
	if err := stop2(); err != nil {
		t.Fatal(err)
	}
	checkReads(s2, fresh, "restarted server")
}
