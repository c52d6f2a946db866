package coord

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"
)

// edgeLookup is what the reactor does before handing keys to the core:
// the keys the ledger has no record of are looked up in the store and the
// done and failed ones given back.
func edgeLookup(c *Coordinator, st *memStore, keys []id.Key) {
	var back []KnownKey
	for _, fp := range c.Unknown(keys, nil) {
		if w, ok := st.keys[fp]; ok && w.Op == ledger.PutDone {
			back = append(back, KnownKey{FP: fp, At: w.At, Failed: w.Outcome != ledger.DoneOK})
		}
	}
	c.KnownDone(back)
}

// doneAll submits urls, has a worker complete them and applies every
// step's writes to st; with durable the edge then reports them durable.
func doneAll(t *testing.T, c *Coordinator, st *memStore, urls []string, durable bool) time.Time {
	t.Helper()
	now := t0
	must(t)(c.Hello(now, 1, Hello{Role: RoleProducer, ID: "p"}))
	must(t)(c.Hello(now, 2, Hello{Role: RoleWorker, ID: "w", Slots: len(urls)}))
	must(t)(c.Submit(now, 1, 1, specs(urls...), nil))
	out := c.Ready(now)
	st.apply(t, out.Writes)
	var rs []Result
	for _, a := range out.Jobs {
		rs = append(rs, Result{Run: broker.Run{Job: a.Job, Attempt: a.Attempt}, Outcome: broker.Outcome{Kind: broker.OK}})
	}
	if len(rs) != len(urls) {
		t.Fatalf("%d jobs dispatched, want %d", len(rs), len(urls))
	}
	now = now.Add(time.Second)
	must(t)(c.Results(now, 2, rs, nil))
	st.apply(t, c.Ready(now).Writes)
	if durable {
		c.WritesDurable(c.WriteBatch())
	}
	return now
}

// TestDoneCacheAnsweredFromStore: with a bounded done set, keys done long
// ago are evicted once durable, and a later SUBMIT or REQUEST of them is
// answered "done" through the store lookup, exactly as from memory; the
// rows show why each half is needed.
func TestDoneCacheAnsweredFromStore(t *testing.T) {
	urls := []string{"http://a.test/1", "http://a.test/2", "http://a.test/3", "http://a.test/4", "http://a.test/5"}
	tests := []struct {
		name     string
		durable  bool // the edge reported the writes durable
		lookup   bool // the edge looks unknown keys up in the store
		inMemory int  // done keys held in memory after the work
		wantDup  int  // resubmits answered duplicate "done"
	}{
		{"durable, looked up", true, true, 2, 5},
		{"durable, no lookup: evicted keys would run again", true, false, 2, 2},
		{"not durable: nothing evicted", false, false, 5, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := persistCfg()
			cfg.Ledger.DoneCache = 2
			c := newCoord(t, cfg)
			st := newMemStore()
			now := doneAll(t, c, st, urls, tt.durable)
			dc, ok := c.DoneCache()
			if !ok || dc.InMemory != tt.inMemory || dc.InMemory+dc.Stored != len(urls) {
				t.Fatalf("DoneCache() = %+v, %v; want %d in memory, %d in all", dc, ok, tt.inMemory, len(urls))
			}
			if tot := c.Totals(now); tot.KeysDone != len(urls) {
				t.Fatalf("Totals().KeysDone = %d, want %d (evicted keys count)", tot.KeysDone, len(urls))
			}
			must(t)(c.Hello(now, 3, Hello{Role: RoleProducer, ID: "again"}))
			js := specs(urls...)
			if tt.lookup {
				keys := make([]id.Key, len(js))
				for i := range js {
					keys[i] = js[i].Key
				}
				edgeLookup(c, st, keys)
			}
			vs, err := c.Submit(now, 3, 7, js, nil)
			if err != nil {
				t.Fatal(err)
			}
			dup := 0
			for _, v := range vs {
				if v.Status == Duplicate && v.Reason == ledger.ReasonDone {
					dup++
				}
			}
			if dup != tt.wantDup {
				t.Fatalf("%d of %d resubmits duplicate done, want %d (%+v)", dup, len(vs), tt.wantDup, vs)
			}
		})
	}
}

// TestDoneCacheRequestHonoursTTL: a key answered from the store refuses
// requests until its TTL, counted from its done time, has passed.
func TestDoneCacheRequestHonoursTTL(t *testing.T) {
	urls := []string{"http://a.test/1", "http://a.test/2", "http://a.test/3"}
	tests := []struct {
		name  string
		after time.Duration
		want  ledger.Verdict
	}{
		{"within the TTL", 30 * time.Second, ledger.No},
		{"past the TTL", 2 * time.Minute, ledger.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := persistCfg()
			cfg.Ledger.DoneCache = 1
			cfg.Ledger.DoneTTL = time.Minute
			c := newCoord(t, cfg)
			st := newMemStore()
			now := doneAll(t, c, st, urls, true).Add(tt.after)
			k := specs(urls[0])[0].Key
			if got := c.Unknown([]id.Key{k}, nil); len(got) != 1 {
				t.Fatalf("Unknown(%s) = %v, want it (evicted)", k.URL, got)
			}
			edgeLookup(c, st, []id.Key{k})
			must(t)(c.Hello(now, 3, Hello{Role: RoleProducer, ID: "r"}))
			vs, err := c.Request(now, 3, 9, []id.Key{k}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if vs[0].Verdict != tt.want {
				t.Fatalf("request %s %v after done: %v %q, want %v", k.URL, tt.after, vs[0].Verdict, vs[0].Reason, tt.want)
			}
		})
	}
}

func TestUnknownUnbounded(t *testing.T) {
	c := newCoord(t, persistCfg())
	if got := c.Unknown([]id.Key{specs("http://a.test/never")[0].Key}, nil); len(got) != 0 {
		t.Fatalf("Unknown with an unbounded done set = %v, want nothing (every record is in memory)", got)
	}
	if _, ok := c.DoneCache(); ok {
		t.Fatal("DoneCache() ok with an unbounded done set")
	}
}

// TestRestoreStored: a restore that leaves done and failed keys in the
// store counts them in its stats and the totals; an unbounded done set
// refuses.
func TestRestoreStored(t *testing.T) {
	cfg := persistCfg()
	cfg.Ledger.DoneCache = 10
	c := newCoord(t, cfg)
	if err := c.RestoreStored(7, 2); err != nil {
		t.Fatal(err)
	}
	if err := c.RestoreStored(-1, 0); err == nil {
		t.Fatal("RestoreStored(-1, 0): no error")
	}
	st, err := c.FinishRestore(t0)
	if err != nil {
		t.Fatal(err)
	}
	if st.KeysDone != 7 || st.KeysFailed != 2 || !strings.Contains(st.String(), "7 done, 2 failed (9 of them left in the store") {
		t.Fatalf("stats %+v (%s): want 7 done and 2 failed keys, left in the store", st, st)
	}
	if tot := c.Totals(t0); tot.KeysDone != 9 {
		t.Fatalf("Totals().KeysDone = %d, want 9", tot.KeysDone)
	}
	if err := c.RestoreStored(1, 0); err == nil {
		t.Fatal("RestoreStored after FinishRestore: no error")
	}
	u := newCoord(t, persistCfg())
	if err := u.RestoreStored(1, 0); err == nil {
		t.Fatal("an unbounded done set accepted keys left in the store")
	}
}

// TestUnknownLeavesNormalForms: the operation that follows Unknown takes
// the keys' normal forms from its memo instead of working them out again
// (a made-up fingerprint planted in the memo shows which one it used), and
// keys it did not see are normalised as ever.
func TestUnknownLeavesNormalForms(t *testing.T) {
	c := newCoord(t, Config{Persist: true, Ledger: ledger.Config{DoneCache: 100}})
	must(t)(c.Hello(t0, 1, Hello{Role: RoleProducer, ID: "p"}))
	seen := id.Key{Crawler: "c", Processor: "p", URL: "HTTP://A.test:80/x"}
	other := id.Key{Crawler: "c", Processor: "p", URL: "http://b.test/"}
	c.Unknown([]id.Key{seen}, nil)
	want, _, _ := normalize(seen)
	if len(c.norms.ns) != 1 || c.norms.ns[0].key != want || c.norms.ns[0].fp != want.Fingerprint() {
		t.Fatalf("memo %+v: want %+v and its fingerprint", c.norms.ns, want)
	}
	planted := id.Fingerprint{1, 2, 3}
	c.norms.ns[0].fp = planted
	vs, err := c.Request(t0, 1, 2, []id.Key{seen, other}, nil)
	if err != nil || len(vs) != 2 {
		t.Fatalf("request: %+v, %v", vs, err)
	}
	if vs[0].FP != planted {
		t.Fatalf("a key Unknown saw: fingerprint %s, want the memo's %s", vs[0].FP, planted)
	}
	if _, fp, _ := normalize(other); vs[1].FP != fp {
		t.Fatalf("a key Unknown did not see: fingerprint %s, want %s", vs[1].FP, fp)
	}
	c.Unknown(nil, nil)
	if len(c.norms.ns) != 0 {
		t.Fatalf("memo keeps %d keys after an Unknown of none: want one message's keys only", len(c.norms.ns))
	}
}

// TestNormalsCarried: a message that waits keeps its memo (TakeNormals)
// while later messages' Unknowns make theirs, and gets it back
// (UseNormals) for its operation: its keys are not worked out again (the
// planted fingerprints show which were used), a key not in the memo is,
// and a bad key's error comes from the memo too.
func TestNormalsCarried(t *testing.T) {
	c := newCoord(t, Config{Persist: true, Ledger: ledger.Config{DoneCache: 100}})
	must(t)(c.Hello(t0, 1, Hello{Role: RoleProducer, ID: "p"}))
	first := []id.Key{
		{Crawler: "c", Processor: "p", URL: "http://a.test/1"},
		{Crawler: "c", Processor: "p", URL: "not a url"},
		{Crawler: "c", Processor: "p", URL: "http://a.test/2"},
	}
	c.Unknown(first, nil)
	parked := c.TakeNormals()
	for i := range parked.ns {
		parked.ns[i].fp = id.Fingerprint{byte(i + 1)}
	}
	c.Unknown([]id.Key{{Crawler: "c", Processor: "p", URL: "http://b.test/"}}, nil) // a later message
	c.UseNormals(parked)
	extra := id.Key{Crawler: "c", Processor: "p", URL: "http://a.test/3"}
	vs, err := c.Request(t0, 1, 2, append(first, extra), nil)
	if err != nil || len(vs) != 4 {
		t.Fatalf("request: %+v, %v", vs, err)
	}
	if vs[0].FP != (id.Fingerprint{1}) || vs[2].FP != (id.Fingerprint{3}) {
		t.Fatalf("fingerprints %s, %s: want the carried memo's (01…, 03…)", vs[0].FP, vs[2].FP)
	}
	if vs[1].Verdict != ledger.Error || vs[1].Reason != ReasonBadKey {
		t.Fatalf("bad key: %+v, want an error verdict", vs[1])
	}
	if _, fp, _ := normalize(extra); vs[3].FP != fp {
		t.Fatalf("a key not in the memo: fingerprint %s, want %s", vs[3].FP, fp)
	}
}

// BenchmarkBoundedRequest is what the reactor does with a REQUEST when the
// done set is bounded: Unknown, to look up the keys the ledger has no
// record of, then the request itself, here of 1,000 new keys at a time.
func BenchmarkBoundedRequest(b *testing.B) {
	c, err := New(Config{Persist: true, Ledger: ledger.Config{DoneCache: 1 << 20}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Hello(t0, 1, Hello{Role: RoleProducer, ID: "p"}); err != nil {
		b.Fatal(err)
	}
	keys := make([]id.Key, 1000)
	var fps []id.Fingerprint
	var vs []Verdict
	var spent time.Duration
	for i := range b.N {
		for j := range keys {
			keys[j] = id.Key{Crawler: "c", Processor: "p", URL: "http://a.test/" + strconv.Itoa(i) + "/" + strconv.Itoa(j)}
		}
		start := time.Now()
		fps = c.Unknown(keys, fps[:0])
		if vs, err = c.Request(t0, 1, uint64(i), keys, vs[:0]); err != nil {
			b.Fatal(err)
		}
		spent += time.Since(start)
		if i%64 == 63 {
			c.Ready(t0) // drain the step's writes, as the reactor does
		}
	}
	b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N*len(keys)), "ns/key")
}

// BenchmarkParkedRequest is what the reactor does with two REQUESTs of
// 1,000 new keys each that wait for their store lookups (parked): Unknown
// of each as it is read, then each request once its lookups are done.
// The second Unknown replaced the first one's memo of normal forms and
// fingerprints, so the first request worked its keys out again; now the
// parked message carries its memo (TakeNormals, UseNormals).
func BenchmarkParkedRequest(b *testing.B) {
	c, err := New(Config{Persist: true, Ledger: ledger.Config{DoneCache: 1 << 20}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Hello(t0, 1, Hello{Role: RoleProducer, ID: "p"}); err != nil {
		b.Fatal(err)
	}
	var msgs [2][]id.Key
	for m := range msgs {
		msgs[m] = make([]id.Key, 1000)
	}
	var fps []id.Fingerprint
	var vs []Verdict
	var spent time.Duration
	for i := range b.N {
		for m := range msgs {
			for j := range msgs[m] {
				msgs[m][j] = id.Key{Crawler: "c", Processor: "p", URL: "http://a.test/" + strconv.Itoa(i) + "/" + strconv.Itoa(m) + "/" + strconv.Itoa(j)}
			}
		}
		start := time.Now()
		var memo [2]Normals
		for m := range msgs {
			fps = c.Unknown(msgs[m], fps[:0])
			memo[m] = c.TakeNormals()
		}
		for m := range msgs {
			c.UseNormals(memo[m])
			if vs, err = c.Request(t0, 1, uint64(2*i+m), msgs[m], vs[:0]); err != nil {
				b.Fatal(err)
			}
		}
		spent += time.Since(start)
		if i%32 == 31 {
			c.Ready(t0) // drain the step's writes, as the reactor does
		}
	}
	b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N*2000), "ns/key")
}

// TestUnknownLetsGoOfEarlierMessages: a smaller message's memo keeps none
// of a bigger earlier message's keys past its own (they are slices of that
// message, which they would keep alive).
func TestUnknownLetsGoOfEarlierMessages(t *testing.T) {
	c := newCoord(t, Config{Persist: true, Ledger: ledger.Config{DoneCache: 100}})
	ks := grantKeys("a", 50)
	c.Unknown(ks, nil)
	c.Unknown(ks[:5], nil)
	ns := c.norms.ns[:cap(c.norms.ns)]
	for i := len(c.norms.ns); i < len(ns); i++ {
		if ns[i] != (normal{}) {
			t.Fatalf("memo entry %d past the 5 of the last message still holds %+v", i, ns[i].raw)
		}
	}
}
